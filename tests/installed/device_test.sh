#!/bin/bash
# installed.device: the whole loop as installed, on the loop device passed into the container.
#   - a direct and a buffered probe on it (added by installed.service, interval 1 s) each form a
#     baseline (5 clean runs) and export iodrift_probe_baseline_ratio on /metrics;
#   - DeviceAllow=block-* r is in force on the running service: from inside the service's own
#     cgroup, root (every capability) can open the device for reading but not for writing (EPERM
#     from the unit's BPF device program); the same open for writing from another unit's cgroup
#     succeeds (so it is the service's device policy that refuses, not the device);
#   - nothing wrote to the device (its checksum, read on the host, is unchanged).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
begin_check python3 sha256sum
need_active

# --- Writes refused in the service's cgroup ----------------------------------------------------
cg=$(ct sh -c "awk -F: '\$1 == 0 { print \$3 }' /proc/$(main_pid)/cgroup")
echo "    service cgroup: $cg"
# A shell entered into the container moves itself into a unit's cgroup, then opens the device;
# in_cgroup CGROUP SHELL-COMMAND. (From a process of another unit the move fails with EIO.)
in_cgroup() { ct sh -c "echo \$\$ >/sys/fs/cgroup$1/cgroup.procs && $2"; }
run_in_service_cgroup() { in_cgroup "$cg" "$1"; }
if out=$(run_in_service_cgroup "dd if=$LOOP of=/dev/null bs=4096 count=1 2>&1"); then
  pass "read of $LOOP allowed in the service's cgroup"
else
  fail "read of $LOOP refused in the service's cgroup: $out"
fi
if out=$(run_in_service_cgroup "dd if=/dev/zero of=$LOOP bs=4096 count=1 conv=notrunc 2>&1"); then
  fail "write to $LOOP ALLOWED in the service's cgroup (DeviceAllow= not in force): $out"
elif grep -q 'Operation not permitted' <<<"$out"; then
  pass "write to $LOOP refused in the service's cgroup (root, all capabilities): ${out##*: }"
else
  fail "write to $LOOP failed, but not with EPERM: $out"
fi
# Control: the same open for writing (0 bytes copied) from another unit's cgroup (no device policy).
ct systemd-run --quiet --unit=iodrift-test-control --collect sleep 120
if out=$(in_cgroup /system.slice/iodrift-test-control.service "dd if=/dev/null of=$LOOP conv=notrunc 2>&1"); then
  pass "open of $LOOP for writing allowed in another unit's cgroup (control)"
else
  fail "open of $LOOP for writing refused outside the service too, so the check above proves nothing: $out"
fi
ct systemctl stop iodrift-test-control >/dev/null 2>&1 || true

# --- Baselines from both probes ------------------------------------------------------------------
# The direct probe needs 5 clean runs at 1 s intervals; 90 s leaves room for a loaded machine.
# The buffered probe has run about as often by now; a bounded wait for its fifth clean run.
for probe_wait in loop-direct:90 loop-buffered:60; do
  probe=${probe_wait%%:*}
  rc=0
  why=$(wait_baseline "$probe" "${probe_wait##*:}") || rc=$?
  case $rc in
    0) pass "$probe formed a baseline as user iodrift: $(metrics | grep -E "^iodrift_probe_baseline_ratio\{[^}]*probe=\"$probe\"")" ;;
    1) needs_quiet "$probe formed no baseline: other work's pressure kept its runs out ($why)" ;;
    *) fail "$probe formed no baseline as user iodrift: $why" ;;
  esac
done

# --- Nothing written ------------------------------------------------------------------------------
[ "$(sha256sum <"$LOOP" | cut -d' ' -f1)" = "$(cat "$state/loop.sha256")" ] \
  && pass "$LOOP unchanged (sha256 on the host)" || fail "$LOOP content changed"
finish
