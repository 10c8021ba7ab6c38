#!/bin/sh
# Runs promtool with the given arguments; exits 77 (CTest: skipped) when promtool is not installed
# (Debian package `prometheus`), so a missing tool is never reported as a pass; CI, which installs
# it (tools/dev.sh), fails instead (IODRIFT_CI_GUARANTEED=1).
if ! command -v promtool >/dev/null 2>&1; then
  if [ "${IODRIFT_CI_GUARANTEED:-}" = 1 ]; then
    echo "FAILED: promtool not found, but CI guarantees it (IODRIFT_CI_GUARANTEED=1; package prometheus)"
    exit 1
  fi
  echo "SKIPPED: promtool not found (install the Debian package 'prometheus')"
  exit 77
fi
exec promtool "$@"
