#!/bin/bash
# installed.teardown (also called by setup.sh on failure): power the container off (systemd
# inside shuts down in order), bounded; kill it if it does not go; detach the loop device this
# run made; remove the state. Safe to run twice or with nothing booted.
set -uo pipefail
state=${IODRIFT_INSTALLED_STATE:?IODRIFT_INSTALLED_STATE is not set}
[ -f "$state/env" ] || { echo "nothing to tear down"; exit 0; }
LEADER='' NSPAWN_PID='' LOOP=''
# shellcheck disable=SC1091
. "$state/env"
gone() { ! kill -0 "$1" 2>/dev/null; }
wait_gone() {  # PID SECONDS
  local deadline=$(( $(date +%s) + $2 ))
  while ! gone "$1"; do [ "$(date +%s)" -ge "$deadline" ] && return 1; sleep 0.2; done
}
if [ -n "$NSPAWN_PID" ] && ! gone "$NSPAWN_PID"; then
  # SIGRTMIN+4 to systemd as PID 1 is `systemctl poweroff`.
  [ -n "$LEADER" ] && kill -s RTMIN+4 "$LEADER" 2>/dev/null
  if wait_gone "$NSPAWN_PID" 30; then
    echo "container powered off"
  else
    echo "container did not power off within 30 s: killing it"
    [ -n "$LEADER" ] && kill -KILL "$LEADER" 2>/dev/null
    wait_gone "$NSPAWN_PID" 10 || kill -KILL "$NSPAWN_PID" 2>/dev/null
    wait_gone "$NSPAWN_PID" 10 || echo "WARNING: systemd-nspawn $NSPAWN_PID still running"
  fi
fi
if [ -n "$LOOP" ] && grep -qF "$state/loop.img" <<<"$(losetup "$LOOP" 2>/dev/null)"; then
  losetup -d "$LOOP" && echo "detached $LOOP"
fi
rm -rf "$state"
