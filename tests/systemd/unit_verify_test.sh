#!/bin/bash
# systemd-analyze verify on iodrift.service: unit syntax, dependencies, the ExecStart binary and
# the Documentation= man page. The binary path is pointed at the freshly built iodriftd and the
# man page is found through MANPATH, since nothing is installed on this machine.
# Usage: unit_verify_test.sh SYSTEMD_SOURCE_DIR IODRIFTD_BINARY
set -euo pipefail
src=$1 bin=$2
command -v systemd-analyze >/dev/null || { echo "skip: systemd-analyze not installed"; exit 77; }
command -v man >/dev/null || { echo "skip: man not installed (verify checks Documentation=)"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/unit" "$tmp/man/man8" "$tmp/man/man1"
sed "s#/usr/sbin/iodriftd#$bin#" "$src/iodrift.service" > "$tmp/unit/iodrift.service"
cp "$src/iodriftd.8" "$tmp/man/man8/"
cp "$src/iodriftctl.1" "$tmp/man/man1/"
grep -q "^ExecStart=$bin " "$tmp/unit/iodrift.service"
out=$(MANPATH="$tmp/man" systemd-analyze verify "$tmp/unit/iodrift.service" 2>&1) || {
  echo "$out"; echo "FAIL: systemd-analyze verify"; exit 1; }
# verify prints warnings without failing; any output about our unit is a finding.
if grep -q "iodrift" <<<"$out"; then echo "$out"; echo "FAIL: verify warnings"; exit 1; fi
# The man pages render without groff warnings.
for page in "$src/iodriftd.8" "$src/iodriftctl.1"; do
  warn=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null || true)
  if [ -n "$warn" ]; then echo "$warn"; echo "FAIL: $page has roff warnings"; exit 1; fi
done
# The D-Bus activation file names the unit.
grep -qx "SystemdService=iodrift.service" "$src/org.iodrift.Monitor1.service"
grep -qx "Name=org.iodrift.Monitor1" "$src/org.iodrift.Monitor1.service"
echo "ok: systemd-analyze verify passes"
