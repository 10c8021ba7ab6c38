#!/bin/bash
# installed.watchdog: the shipped unit has WatchdogSec=60s; iodriftd pings (WATCHDOG=1) from its
# sandbox, and a daemon that stops answering (SIGSTOP) is killed and restarted by systemd.
# To keep the wait short the operator's way is used: a drop-in (`systemctl edit`) sets
# WatchdogSec=4s; it is removed again at the end (and the service restarted on the shipped unit).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
begin_check
need_active

shipped=$(unit_prop iodrift WatchdogUSec)
[ "$shipped" = 1min ] && pass "shipped unit: WatchdogSec=60s (WatchdogUSec=$shipped)" \
  || fail "shipped unit: WatchdogUSec=$shipped, expected 1min"
dropin=/etc/systemd/system/iodrift.service.d/test-watchdog.conf
cleanup() {
  ct rm -f "$dropin" || true
  ct rmdir "$(dirname "$dropin")" 2>/dev/null || true
  ct systemctl daemon-reload || true
  ct systemctl restart iodrift || true
}
trap cleanup EXIT
ct mkdir -p "$(dirname "$dropin")"
ct sh -c "printf '[Service]\nWatchdogSec=4s\n' >$dropin"
ct systemctl daemon-reload
check "restart with WatchdogSec=4s" ct systemctl restart iodrift
[ "$(unit_prop iodrift WatchdogUSec)" = 4s ] || fail "drop-in not in effect: WatchdogUSec=$(unit_prop iodrift WatchdogUSec)"

# Pings arrive: systemd's WatchdogTimestamp moves (each WATCHDOG=1 updates it), twice.
ts0=$(unit_prop iodrift WatchdogTimestampMonotonic)
moved_from() { local t; t=$(unit_prop iodrift WatchdogTimestampMonotonic); [ "$t" != "$1" ] && [ "$t" != 0 ]; }
if wait_until 10 "a WATCHDOG=1 ping" moved_from "$ts0"; then
  ts1=$(unit_prop iodrift WatchdogTimestampMonotonic)
  wait_until 10 "a second ping" moved_from "$ts1" \
    && pass "WATCHDOG=1 pings arrive (WatchdogTimestampMonotonic $ts0 -> $ts1 -> $(unit_prop iodrift WatchdogTimestampMonotonic))" \
    || fail "only one watchdog ping"
else
  fail "no watchdog ping from the daemon within 10 s (WatchdogSec=4s)"
fi

pid=$(main_pid) restarts=$(unit_prop iodrift NRestarts)
cursor=$(journal_cursor)
ct sh -c "kill -STOP $pid"  # (the shell builtin: no procps in a minimal system)
echo "    SIGSTOP to $pid (NRestarts=$restarts)"
# 4 s to the timeout, SIGABRT, TimeoutAbortSec (=TimeoutStopSec 15 s) to SIGKILL a stopped
# process, RestartSec=5s: about 25 s; 60 s bound.
restarted() {
  local p n a
  p=$(main_pid) n=$(unit_prop iodrift NRestarts) a=$(unit_prop iodrift ActiveState)
  [ "$a" = active ] && [ "$n" -gt "$restarts" ] && [ "$p" != "$pid" ] && [ "$p" != 0 ]
}
if wait_until 60 "a restart after the watchdog timeout" restarted; then
  pass "restarted by systemd: pid $pid -> $(main_pid), NRestarts $restarts -> $(unit_prop iodrift NRestarts)"
else
  fail "not restarted within 60 s: $(ct systemctl show iodrift -p ActiveState,SubState,MainPID,NRestarts | tr '\n' ' ')"
fi
journal=$(journal_after "$cursor")
grep -q 'Watchdog timeout' <<<"$journal" && pass "journal: $(grep 'Watchdog timeout' <<<"$journal" | head -1)" \
  || { fail "no 'Watchdog timeout' in the journal"; tail -10 <<<"$journal" | sed 's/^/    /'; }
finish
