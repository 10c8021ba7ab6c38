#!/usr/bin/env python3
"""The real iodriftd under a fake systemd: an AF_UNIX datagram socket named by NOTIFY_SOCKET.

Checks the notify protocol end to end: READY=1 only once the listener answers, WATCHDOG=1 pings
at half of WATCHDOG_USEC, RELOADING=1 (with MONOTONIC_USEC=) then READY=1 around SIGHUP — also
when the new config is broken, which must leave the daemon serving — and STOPPING=1 first on
SIGTERM, with no ping after it and a clean exit.

Skips (77) while the binary does not contain the notifier (systemd_notify.cpp is linked only
once daemon/app.cpp calls it). Usage: notify_daemon_test.py IODRIFTD
"""
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from iodrift_test.skip import fail

IODRIFTD = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("IODRIFTD", "")


def main():
    if not IODRIFTD or not os.access(IODRIFTD, os.X_OK):
        fail(f"no iodriftd binary at {IODRIFTD!r} (IODRIFTD or argument 1)")

    tmp = tempfile.TemporaryDirectory(prefix="iodrift-notify-")
    sock_path = os.path.join(tmp.name, "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(sock_path)
    config = os.path.join(tmp.name, "iodrift.yaml")
    good = ('listen: "127.0.0.1:0"\nstate_dir: %s\ndbus: none\nprobes: []\n'
            % os.path.join(tmp.name, "state"))
    with open(config, "w") as f:
        f.write(good)
    log_path = os.path.join(tmp.name, "stderr.log")
    env = dict(os.environ, NOTIFY_SOCKET=sock_path, WATCHDOG_USEC="400000")
    env.pop("WATCHDOG_PID", None)
    log = open(log_path, "w")
    proc = subprocess.Popen([IODRIFTD, "--config", config, "--dbus", "none"],
                            env=env, stdout=subprocess.DEVNULL, stderr=log)

    def receive(timeout):
        sock.settimeout(timeout)
        try:
            return sock.recv(4096).decode()
        except socket.timeout:
            return None

    def wait_for(predicate, timeout, what):
        seen = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = receive(max(0.01, deadline - time.monotonic()))
            if message is None:
                break
            seen.append(message)
            if predicate(message):
                return seen
        fail("no %s within %.1f s; got %r; log:\n%s" % (what, timeout, seen, open(log_path).read()))

    try:
        seen = wait_for(lambda m: m.startswith("READY=1"), 15, "READY=1")
        ready = seen[-1]
        if "STATUS=" not in ready:
            fail("READY=1 without STATUS=: %r" % ready)
        print("ready:", ready.replace("\n", " | "))
        # READY came after the bind: the listener answers right now.
        port = re.search(r"http://127\.0\.0\.1:(\d+)/metrics", open(log_path).read())
        if not port:
            fail("no listen address in the log")
        url = "http://127.0.0.1:%s/metrics" % port.group(1)
        if urllib.request.urlopen(url, timeout=5).status != 200:
            fail("metrics not served after READY=1")

        seen = wait_for(lambda m: m == "WATCHDOG=1", 2, "first WATCHDOG=1")
        pings = 0
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            message = receive(max(0.01, deadline - time.monotonic()))
            pings += message == "WATCHDOG=1"
        if pings < 3:  # 200 ms period → ~5 in a second
            fail("only %d WATCHDOG=1 in 1 s with WATCHDOG_USEC=400000" % pings)
        print("watchdog pings in 1 s:", pings)

        # Reload: a good config, then a broken one (kept running on the old config).
        for label, text in (("good", good), ("broken", good + "no_such_key: 1\n")):
            with open(config, "w") as f:
                f.write(text)
            proc.send_signal(signal.SIGHUP)
            seen = wait_for(lambda m: m.startswith("RELOADING=1"), 5, "RELOADING=1 (%s)" % label)
            if not re.match(r"RELOADING=1\nMONOTONIC_USEC=\d+$", seen[-1]):
                fail("RELOADING=1 without MONOTONIC_USEC=: %r" % seen[-1])
            wait_for(lambda m: m.startswith("READY=1"), 5, "READY=1 after reload (%s)" % label)
            if proc.poll() is not None:
                fail("daemon exited on a %s reload" % label)
            if urllib.request.urlopen(url, timeout=5).status != 200:
                fail("metrics not served after a %s reload" % label)
            print("reload (%s): RELOADING=1 … READY=1" % label)

        proc.send_signal(signal.SIGTERM)
        seen = wait_for(lambda m: m == "STOPPING=1", 5, "STOPPING=1")
        try:
            code = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            fail("daemon did not exit within 5 s of SIGTERM")
        after = []
        while True:
            message = receive(0.05)
            if message is None:
                break
            after.append(message)
        if "WATCHDOG=1" in after:
            fail("WATCHDOG=1 after STOPPING=1: %r" % after)
        if code != 0:
            fail("exit code %d after SIGTERM" % code)
        print("stop: STOPPING=1, exit 0")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
