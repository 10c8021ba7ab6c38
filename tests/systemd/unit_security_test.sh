#!/bin/bash
# systemd-analyze security --offline=true on iodrift.service: fails when the overall exposure
# is above THRESHOLD (0.0 best … 10.0 worst). Usage: unit_security_test.sh UNIT_FILE THRESHOLD
set -euo pipefail
unit=$1 threshold=$2
command -v systemd-analyze >/dev/null || { echo "skip: systemd-analyze not installed"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cp "$unit" "$tmp/iodrift.service"
out=$(systemd-analyze security --offline=true --no-pager "$tmp/iodrift.service" 2>&1) || {
  rc=$?
  # systemd < 250 has no --offline; that is a missing tool, not a failure.
  if grep -q "unrecognized option" <<<"$out"; then echo "skip: $out"; exit 77; fi
  echo "$out"; echo "FAIL: systemd-analyze security exited $rc"; exit 1; }
score=$(sed -n 's/.*Overall exposure level for iodrift.service: \([0-9.]*\).*/\1/p' <<<"$out")
[ -n "$score" ] || { echo "$out"; echo "FAIL: no exposure level in the output"; exit 1; }
grep "✗" <<<"$out" || true
echo "exposure level: $score (threshold $threshold)"
if awk -v s="$score" -v t="$threshold" 'BEGIN { exit !(s > t) }'; then
  echo "FAIL: exposure $score is above $threshold"; exit 1
fi
echo "ok"
