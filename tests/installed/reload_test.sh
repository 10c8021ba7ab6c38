#!/bin/bash
# installed.reload: `systemctl reload iodrift` after editing /etc/iodrift/iodrift.yaml.
#   - a good edit (one more probe): applied, same process, the new probe listed;
#   - a broken edit (an unknown key): the service stays active with the same process and the old
#     probes, and `journalctl -u iodrift` names the file, the line and the key.
# The file is put back to the good version at the end (later checks restart the service).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
begin_check
need_active
conf=/etc/iodrift/iodrift.yaml
pid=$(main_pid)
journal_has() { grep -qF -- "$2" <<<"$(journal_after "$1")"; }

ct cp "$conf" "$conf.orig"
ct sh -c "cat >>$conf" <<'EOF'
  - name: reload-added
    kind: memory
    interval: 1h
EOF
c=$(journal_cursor)
check "systemctl reload iodrift (good config)" ct systemctl reload iodrift
if wait_until 20 "reload: applied in the journal" journal_has "$c" "reload: applied"; then
  pass "journal: $(journal_after "$c" | grep -F 'reload: applied' | tail -1)"
else
  fail "no 'reload: applied' in journalctl -u iodrift"
fi
listed() { grep -q "$1" <<<"$(ct iodriftctl list)"; }
check "the added probe is listed" listed reload-added
[ "$(main_pid)" = "$pid" ] && pass "same process after reload (pid $pid)" || fail "MainPID changed: $pid -> $(main_pid)"
ct cp "$conf" "$conf.good"

# A broken edit: an unknown key, on a line we know.
ct sh -c "cat >>$conf" <<'EOF'
  - name: reload-broken
    kind: memory
    intervall: 1m
EOF
line=$(ct grep -n '^    intervall:' "$conf" | cut -d: -f1)
c=$(journal_cursor)
ct systemctl reload iodrift || true
want="$conf:$line:"
if wait_until 20 "reload rejected naming $want and intervall" journal_has "$c" "reload rejected: $want"; then
  msg=$(journal_after "$c" | grep -F "reload rejected: $want" | head -1)
  grep -q intervall <<<"$msg" && pass "journal names file, line and key: $msg" \
    || fail "the rejection does not name the key: $msg"
else
  fail "journalctl -u iodrift has no 'reload rejected: $want…'"
  journal_after "$c" | tail -10 | sed 's/^/    /'
fi
check "still active after the broken reload" ct systemctl is-active iodrift
[ "$(main_pid)" = "$pid" ] && pass "same process kept running (pid $pid)" || fail "MainPID changed: $pid -> $(main_pid)"
if out=$(ct iodriftctl list) && grep -q reload-added <<<"$out" && ! grep -q reload-broken <<<"$out"; then
  pass "the old config keeps running (reload-added listed, reload-broken not)"
else
  fail "probes after the broken reload: $out"
fi

ct cp "$conf.good" "$conf"
ct rm -f "$conf.good" "$conf.orig"
check "reload back to the good config" ct systemctl reload iodrift
finish
