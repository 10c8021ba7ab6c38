#!/bin/bash
# installed.dbus: iodriftctl on the container's system bus (dbus-daemon started by its systemd)
# under the shipped policy (/usr/share/dbus-1/system.d/org.iodrift.Monitor1.conf):
#   - the name org.iodrift.Monitor1 is owned by the service's process (user iodrift);
#   - an ordinary user (alice, no extra groups): `iodriftctl list` and `explain` work, `run` is
#     refused with AccessDenied;
#   - a member of group iodrift (bob, `usermod -aG iodrift` as the README says): `run` works.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
begin_check
need_active

for user in alice bob; do
  ct id "$user" >/dev/null 2>&1 || ct useradd --create-home "$user"
done
ct usermod -aG iodrift bob

owner=$(ct busctl --system status org.iodrift.Monitor1 2>/dev/null | awk -F= '$1 == "PID" { print $2 }')
[ "$owner" = "$(main_pid)" ] && pass "org.iodrift.Monitor1 owned by the service (pid $owner)" \
  || fail "org.iodrift.Monitor1 owner pid '$owner', service MainPID $(main_pid)"

if out=$(ct_as alice iodriftctl list 2>&1) && grep -q loop-direct <<<"$out"; then
  pass "iodriftctl list as an ordinary user"
else
  fail "iodriftctl list as alice: $out"
fi
if out=$(ct_as alice iodriftctl explain loop-direct 2>&1) && [ -n "$out" ]; then
  pass "iodriftctl explain as an ordinary user ($(head -1 <<<"$out"))"
else
  fail "iodriftctl explain as alice: $out"
fi
if out=$(ct_as alice iodriftctl run loop-direct 2>&1); then
  fail "iodriftctl run as an ordinary user was allowed: $out"
elif grep -qi 'AccessDenied' <<<"$out"; then
  pass "iodriftctl run refused to an ordinary user: $(head -1 <<<"$out")"
else
  fail "iodriftctl run as alice failed, but not with AccessDenied: $out"
fi
if out=$(CT_TIMEOUT=90 ct_as bob iodriftctl run loop-direct 2>&1); then
  pass "iodriftctl run as a member of group iodrift: $(head -1 <<<"$out")"
else
  fail "iodriftctl run as bob (group iodrift): $out"
fi
finish
