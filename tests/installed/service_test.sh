#!/bin/bash
# installed.service: the operator's first steps after `apt install`: add probes on the loop device
# to /etc/iodrift/iodrift.yaml, check the file, `systemctl enable --now iodrift`. Then: active
# (Type=notify: systemd saw READY=1), the STATUS= line in `systemctl show` and `systemctl status`,
# and the unit's hardening in force on the running process, read from /proc/<pid>/status and
# /proc/<pid>/mountinfo: user and group iodrift, only CAP_DAC_READ_SEARCH (effective, permitted,
# ambient, bounding), no_new_privs, a seccomp filter, the file system read-only but
# /var/lib/iodrift, the hidden secrets and /home.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
begin_check

# The operator's edit: a buffered and a direct probe on the loop device (README example shape).
ct grep -q 'name: loop-buffered' /etc/iodrift/iodrift.yaml || ct sh -c "cat >>/etc/iodrift/iodrift.yaml" <<EOF
  - name: loop-buffered
    kind: buffered
    target: $LOOP
    interval: 1s
    size: 4MiB
    timeout: 20s
  - name: loop-direct
    kind: direct
    target: $LOOP
    interval: 1s
    size: 4MiB
    timeout: 20s
EOF
check "iodriftd --check-config accepts the edited /etc/iodrift/iodrift.yaml" \
  ct iodriftd --check-config --config /etc/iodrift/iodrift.yaml

check "systemctl enable --now iodrift" ct systemctl enable --now iodrift
check "enabled" ct systemctl is-enabled iodrift
check "active" ct systemctl is-active iodrift
props=$(ct systemctl show iodrift -p Type,NotifyAccess,ActiveState,SubState,StatusText,MainPID,User,WatchdogUSec)
echo "$props" | sed 's/^/    /'
grep -qx 'Type=notify' <<<"$props" && grep -qx 'NotifyAccess=main' <<<"$props" \
  && grep -qx 'ActiveState=active' <<<"$props" && grep -qx 'SubState=running' <<<"$props" \
  && pass "Type=notify and active/running: systemd received READY=1" \
  || fail "not Type=notify active/running"
# STATUS= comes with the watchdog tick; the first one right after READY=1.
has_status() { [ -n "$(unit_prop iodrift StatusText)" ]; }
if wait_until 20 "StatusText" has_status; then
  status_text=$(unit_prop iodrift StatusText)
  grep -qE '^[0-9]+ probes' <<<"$status_text" && pass "StatusText: $status_text" \
    || fail "StatusText does not say how many probes: '$status_text'"
  status_out=$(ct systemctl status iodrift --no-pager --lines=0 || true)
  grep -qF "Status: \"$status_text" <<<"$status_out" || grep -qE 'Status: "[0-9]+ probes' <<<"$status_out" \
    && pass "systemctl status shows the status line" \
    || { fail "systemctl status shows no status line"; echo "$status_out" | sed 's/^/    /'; }
else
  fail "no StatusText (STATUS= never reached systemd)"
fi

pid=$(main_pid)
[ "${pid:-0}" -gt 0 ] || die "no MainPID"
st=$(ct cat "/proc/$pid/status")
field() { awk -v k="$1:" '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }' <<<"$st"; }
uid=$(ct id -u iodrift) gid=$(ct id -g iodrift)
[ "$(field Uid)" = "$uid $uid $uid $uid" ] && pass "runs as user iodrift (uid $uid)" \
  || fail "Uid: $(field Uid), iodrift is $uid"
[ "$(field Gid)" = "$gid $gid $gid $gid" ] && pass "runs as group iodrift (gid $gid)" \
  || fail "Gid: $(field Gid), iodrift is $gid"
# CAP_DAC_READ_SEARCH is bit 2: 0x4. Nothing else anywhere.
for cap in CapEff CapPrm CapAmb CapBnd; do
  [ "$(field $cap)" = 0000000000000004 ] && pass "$cap = CAP_DAC_READ_SEARCH only" \
    || fail "$cap = $(field $cap), expected 0000000000000004 (CAP_DAC_READ_SEARCH)"
done
[ "$(field NoNewPrivs)" = 1 ] && pass "NoNewPrivs: 1" || fail "NoNewPrivs: $(field NoNewPrivs)"
[ "$(field Seccomp)" = 2 ] && pass "Seccomp: 2 (filter), $(field Seccomp_filters) filters" \
  || fail "Seccomp: $(field Seccomp), expected 2 (SystemCallFilter=)"

# Mounts as the process sees them: field 5 is the mount point, field 6 its options. A path's
# options are those of the mount it is under (the longest mount point that is a prefix of it).
mi=$(ct cat "/proc/$pid/mountinfo")
mount_opts() { awk -v m="$1" '$5 == m { o = $6 } END { print o }' <<<"$mi"; }
opts_under() {
  awk -v p="$1" '{ mp = $5; if (p == mp || mp == "/" || index(p, mp "/") == 1)
                     if (length(mp) >= best) { best = length(mp); o = $6 } } END { print o }' <<<"$mi"
}
for path in / /usr /usr/sbin/iodriftd /etc /etc/iodrift /etc/iodrift/iodrift.yaml /var /var/lib; do
  opts=$(opts_under "$path")
  [[ ",$opts," == *,ro,* ]] && pass "$path read-only (ProtectSystem=strict)" \
    || fail "$path under a mount '$opts' in the service, expected ro"
done
opts=$(mount_opts /var/lib/iodrift)
[[ ",$opts," == *,rw,* ]] && pass "/var/lib/iodrift writable (StateDirectory=)" \
  || fail "/var/lib/iodrift mounted '$opts', expected rw"
for path in /etc/shadow /etc/gshadow /home /root; do
  [ -n "$(mount_opts "$path")" ] && pass "$path hidden by a mount over it (InaccessiblePaths=/ProtectHome=)" \
    || fail "$path is not covered in the service's mount namespace"
done
[ -n "$(mount_opts /tmp)" ] && pass "/tmp is private (PrivateTmp=)" || fail "/tmp not private"
# What the process itself gets: with CAP_DAC_READ_SEARCH it may open even the mode-000 node
# systemd mounts over /etc/shadow, but that node is empty: the secret is out of reach.
real=$(ct sh -c 'wc -c </etc/shadow')
seen=$(ct nsenter -t "$pid" -m setpriv --reuid=iodrift --regid=iodrift --init-groups \
         --inh-caps=+dac_read_search --ambient-caps=+dac_read_search sh -c 'wc -c </etc/shadow' 2>&1) || true
if [ "$seen" = 0 ] && [ "$real" -gt 0 ]; then
  pass "/etc/shadow ($real bytes) reads as 0 bytes in the service's mount namespace, with CAP_DAC_READ_SEARCH"
else
  fail "/etc/shadow in the service's mount namespace, as iodrift with the capability: '$seen' (really $real bytes)"
fi
serves() { local m; m=$(metrics) && grep -q '^iodrift_' <<<"$m"; }
check "metrics on 127.0.0.1:9723" serves
finish
