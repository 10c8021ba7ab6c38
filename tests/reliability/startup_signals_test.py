#!/usr/bin/env python3
"""Signals that arrive while iodriftd starts: handled, never fatal.

The config file is a FIFO whose writer the test holds open, so each of 20 daemons is caught
reading its config — the start-up window the signals used to be unblocked in. While it is
there the test sends it one signal, then hands it the config (the FIFO path already replaced
by a regular file with the same text, for the reload to read):

  * SIGHUP (even rounds): the daemon must start, apply one reload (log "reload: applied") and
    exit 0 on SIGTERM;
  * SIGTERM or SIGINT (odd rounds): it must stop by itself with exit 0.

Before the fix the signals were blocked only after the config loaded: every daemon here died
of its signal (exit -1 / -15 / -2).

Earlier still: the shared libraries' constructors run before main. A library LD_PRELOAD'ed into
`iodriftd --version` (tests/reliability/mask_at_constructor.c, IODRIFT_MASK_PROBE) records the
signal mask its constructor runs with: SIGHUP, SIGINT and SIGTERM must already be blocked there
(main.cpp's .preinit_array entry). With the mask set first thing in main they were not. What
remains is the dynamic loader's own work before that (docs/running.md, measured with
tests/bench/startup_signal_window.c; not asserted: it is a timing).
"""
import os
import signal
import subprocess
import tempfile

from iodrift_test.daemon import binary
from iodrift_test.skip import fail
from iodrift_test.wait import wait_for

ROUNDS = 20
CONFIG = "log_level: info\nprobes: []\n"


def reading(pid, fifo):
    """Whether process `pid` has `fifo` open (it is reading its config)."""
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == fifo:
                    return True
            except OSError:
                pass
    except OSError:
        pass
    return False


def one_round(work, n):
    d = os.path.join(work, str(n))
    os.mkdir(d)
    config = os.path.join(d, "iodrift.yaml")
    os.mkfifo(config)
    # Held open read-write: the FIFO has a writer, so the daemon's read waits for the text.
    writer = os.open(config, os.O_RDWR | os.O_NONBLOCK)
    sig = (signal.SIGHUP, signal.SIGTERM, signal.SIGHUP, signal.SIGINT)[n % 4]
    log_path = os.path.join(d, "stderr.log")
    with open(log_path, "w+") as log:
        proc = subprocess.Popen(
            [binary(), "--config", config, "--listen", "127.0.0.1:0", "--dbus", "none",
             "--state-dir", d], stdout=subprocess.DEVNULL, stderr=log)
        try:
            wait_for(f"round {n}: iodriftd reading its config",
                     lambda: proc.poll() is not None or reading(proc.pid, config), timeout=20,
                     interval=0.01)
            if proc.poll() is not None:
                fail(f"round {n}: iodriftd exited {proc.returncode} before the signal")
            os.kill(proc.pid, sig)
            # The reload (SIGHUP) must read a regular file; the daemon keeps its FIFO fd.
            with open(config + ".new", "w") as f:
                f.write(CONFIG)
            os.rename(config + ".new", config)
            os.write(writer, CONFIG.encode())
            os.close(writer)
            writer = None

            def text():
                with open(log_path) as f:
                    return f.read()

            if sig == signal.SIGHUP:
                wait_for(f"round {n}: the reload after SIGHUP at start-up",
                         lambda: proc.poll() is not None or "reload: applied" in text(),
                         timeout=30)
                if proc.poll() is not None:
                    fail(f"round {n}: SIGHUP during start-up killed iodriftd "
                         f"(exit {proc.returncode})\n{text()[-3000:]}")
                proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                fail(f"round {n}: iodriftd did not stop after {signal.Signals(sig).name}\n"
                     f"{text()[-3000:]}")
            if rc != 0:
                fail(f"round {n}: {signal.Signals(sig).name} during start-up: exit {rc}, want 0"
                     f"\n{text()[-3000:]}")
        finally:
            if writer is not None:
                os.close(writer)
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def blocked_in_constructors(work):
    """The mask a shared library's constructor sees in iodriftd (skipped without the probe)."""
    probe = os.environ.get("IODRIFT_MASK_PROBE")
    if not probe or not os.path.exists(probe):
        fail("IODRIFT_MASK_PROBE is not set to the built mask_at_constructor library")
    report = os.path.join(work, "mask")
    env = dict(os.environ, LD_PRELOAD=probe, IODRIFT_MASK_REPORT=report)
    # ASan wants to be first in the library list; the probe is looked at without it there.
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
    done = subprocess.run([binary(), "--version"], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, timeout=60)
    if done.returncode != 0:
        fail(f"iodriftd --version with the mask probe exited {done.returncode}: "
             f"{done.stderr.decode(errors='replace')[-2000:]}")
    with open(report) as f:
        seen = f.read().strip()
    if seen != "HUP=1 INT=1 TERM=1":
        fail(f"the handled signals are not blocked while the libraries' constructors run: {seen}")
    print(f"blocked before the libraries' constructors: {seen}")


def main():
    work = tempfile.mkdtemp(prefix="iodrift-startsig-")
    try:
        blocked_in_constructors(work)
        for n in range(ROUNDS):
            one_round(work, n)
    finally:
        subprocess.run(["rm", "-rf", work], check=False)
    print(f"ok: {ROUNDS} daemons signalled while reading their config all handled it")


main()
