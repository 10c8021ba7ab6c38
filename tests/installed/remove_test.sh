#!/bin/bash
# installed.remove (runs last): `systemctl stop iodrift` ends within TimeoutStopSec (systemd
# records Result=success and a clean exit, not a SIGKILL after the timeout); then `apt remove`
# and `apt purge` leave what the docs say:
#   remove: the service stopped, binaries, unit and D-Bus files gone; the conffile
#           /etc/iodrift/iodrift.yaml, /var/lib/iodrift and the iodrift user stay;
#   purge:  /etc/iodrift and /var/lib/iodrift gone, no enablement link of the unit left; the user
#           stays (Debian keeps system users).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
begin_check

# --- stop ---------------------------------------------------------------------------------------
if ct systemctl is-active --quiet iodrift; then
  timeout_stop=$(unit_prop iodrift TimeoutStopUSec)
  t0=$(date +%s%N)
  check "systemctl stop iodrift" ct systemctl stop iodrift
  took=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
  props=$(ct systemctl show iodrift -p Result,ExecMainCode,ExecMainStatus,ActiveState)
  # ExecMainCode 1 = CLD_EXITED (2 would be killed by a signal).
  if grep -qx Result=success <<<"$props" && grep -qx ExecMainCode=1 <<<"$props" \
     && grep -qx ExecMainStatus=0 <<<"$props"; then
    pass "stopped in ${took} s, exit 0, within TimeoutStopSec=$timeout_stop (Result=success)"
  else
    fail "stop: $(tr '\n' ' ' <<<"$props") after ${took} s (TimeoutStopSec=$timeout_stop)"
  fi
  ct systemctl start iodrift  # remove must stop a running service itself
else
  fail "iodrift was not active before the stop check"
fi

# --- remove --------------------------------------------------------------------------------------
apt_get() { CT_TIMEOUT=120 ct env DEBIAN_FRONTEND=noninteractive apt-get "$1" -y iodrift; }
check "apt remove iodrift" apt_get remove
gone() { ! ct test -e "$1"; }
present() { ct test -e "$1"; }
no_daemon() { ! ct sh -c 'grep -qx iodriftd /proc/[0-9]*/comm'; }
check "no iodriftd process after remove" no_daemon
for f in /usr/sbin/iodriftd /usr/bin/iodriftctl /lib/systemd/system/iodrift.service \
         /usr/share/dbus-1/system.d/org.iodrift.Monitor1.conf \
         /usr/share/dbus-1/system-services/org.iodrift.Monitor1.service; do
  check "remove: $f gone" gone "$f"
done
for f in /etc/iodrift/iodrift.yaml /var/lib/iodrift; do
  check "remove: $f stays" present "$f"
done
check "remove: user iodrift stays" ct getent passwd iodrift
[ "$(ct dpkg-query -W -f='${db:Status-Abbrev}' iodrift)" = "rc " ] && pass "dpkg: rc (config files kept)" \
  || fail "dpkg status after remove: '$(ct dpkg-query -W -f='${db:Status-Abbrev}' iodrift)'"

# --- purge ---------------------------------------------------------------------------------------
check "apt purge iodrift" apt_get purge
for f in /etc/iodrift /var/lib/iodrift; do
  check "purge: $f gone" gone "$f"
done
left=$(ct find /etc/systemd /var/lib/systemd -name 'iodrift*' 2>/dev/null || true)
[ -z "$left" ] && pass "purge: no unit state or enablement link left" \
  || fail "purge left: $(tr '\n' ' ' <<<"$left")"
check "purge: user iodrift stays (Debian keeps system users)" ct getent passwd iodrift
[ -z "$(ct dpkg-query -W -f='${db:Status-Abbrev}' iodrift 2>/dev/null)" ] \
  || [ "$(ct dpkg-query -W -f='${db:Status-Abbrev}' iodrift 2>/dev/null)" = "pn " ] \
  && pass "dpkg: not installed" || fail "dpkg status after purge: $(ct dpkg-query -W -f='${db:Status-Abbrev}' iodrift)"
finish
