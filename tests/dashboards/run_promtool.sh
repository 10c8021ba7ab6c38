#!/bin/sh
# Runs promtool with the given arguments; exits 77 (CTest: skipped) when promtool is not installed
# (Debian package `prometheus`), so a missing tool is never reported as a pass.
if ! command -v promtool >/dev/null 2>&1; then
  echo "promtool not found (install the Debian package 'prometheus'); skipping" >&2
  exit 77
fi
exec promtool "$@"
