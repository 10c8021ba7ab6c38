#!/usr/bin/env python3
"""`iodriftctl diagnose` through the packaged privileges: iodriftd as user `iodrift` with only the
unit's capability (CAP_DAC_READ_SEARCH, via setpriv as systemd/iodrift.service grants it), on a
private bus with the shipped policy file (systemd/org.iodrift.Monitor1.conf).

  1. A flood from a non-root member of group iodrift (8 `iodriftctl diagnose` at once, then 3
     more): exactly one experiment runs (6 experiment runs: control and warm_free_memory, 3
     each), every other call is refused naming the limit (another experiment running, or the
     cooldown); the member's answer shows the root steps "skipped (needs root ...)" and
     warm_free_memory measured.
  2. Root (after a reload sets diagnose.cooldown: 0s): every step runs; the root steps are made
     by iodriftctl itself (IODRIFTCTL_VM_DIR: a scratch dir standing in for /proc/sys/vm, so the
     test never drops this shared machine's caches): drop_caches holds "2" (1, then 2 for slab),
     compact_memory "1".
  3. A reload that changes the probe mid-experiment: iodriftctl is held inside its first
     drop_caches write (a FIFO), the probe's size changes by `iodriftctl reload`, then the write
     completes: the experiment ends "aborted: probe mem was changed by a reload (nothing further
     applied)", iodriftctl makes no further write (it would block on the FIFO for ever), and its
     report does not land on the changed probe (the last experiment shown stays root's).

The probe must look slow for the ladder to run: after its baseline forms, the daemon is stopped
and the baseline in its state file multiplied by 50 (ratio ~0.02, restored by no step).

Needs root (creates user/group `iodrift` when missing and removes them afterwards); exits 77
otherwise or when a tool is missing.
"""
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
import time

from iodrift_test import dbus, prom
from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon, ctl_binary, scrape
from iodrift_test.skip import fail, need_tools, skip_guaranteed
from iodrift_test.wait import wait_for

if os.geteuid() != 0:
    skip_guaranteed("needs root (creates the iodrift user, runs the daemon and callers as others)")
need_tools("dbus-daemon", "busctl", "setpriv", "useradd", "userdel", "getent")

SOURCE = os.environ["IODRIFT_SOURCE_DIR"]
POLICY = os.path.join(SOURCE, "systemd/org.iodrift.Monitor1.conf")
MEMBER = ("setpriv", "--reuid=nobody", "--regid=nogroup", "--groups=iodrift")
# What iodrift.service grants: User=iodrift, AmbientCapabilities= and CapabilityBoundingSet=
# CAP_DAC_READ_SEARCH, NoNewPrivileges=yes.
AS_SERVICE = ("setpriv", "--reuid=iodrift", "--regid=iodrift", "--init-groups",
              "--inh-caps=-all,+dac_read_search", "--ambient-caps=-all,+dac_read_search",
              "--bounding-set=-all,+dac_read_search", "--no-new-privs")
DIAGNOSE = ("diagnose:\n  enabled: true\n  warm_size: 32MiB\n  min_available: 64MiB\n"
            "  timeout: 120s\n  max_memory_pressure: 100\n  max_io_pressure: 100\n")


def ctl(addr, *args, prefix=(), env=None, timeout=120):
    return subprocess.run([*prefix, ctl_binary_copy, "--bus", addr, *args], capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ, **(env or {})))


def write(cooldown, size="8MiB"):
    write_config(config, [{"name": "mem", "kind": "memory", "interval": "1s", "size": size}],
                 state, DIAGNOSE + f"  cooldown: {cooldown}\n", dbus=None, log_level="info")
    shutil.chown(config, "iodrift", "iodrift")


def start_daemon(addr):
    d = Daemon("--config", config, "--state-dir", state, "--dbus", addr)
    d.args = [*AS_SERVICE, binary, *d.args[1:]]
    return d


def inflate_baseline(factor):
    """Multiplies the mem probe's baseline in the state file (the daemon is stopped)."""
    path = os.path.join(state, "baselines")
    with open(path) as f:
        lines = f.read().split("\n")
    done = False
    for i, line in enumerate(lines):
        parts = line.split(" ")
        if parts[:2] == ["probe", "mem"] and parts[5] != "-":
            parts[5] = "%.17g" % (float(parts[5]) * factor)
            lines[i] = " ".join(parts)
            done = True
    if not done:
        fail(f"no baseline of mem in {path}: {lines}")
    with open(path, "w") as f:  # in place: owner and mode stay the daemon's
        f.write("\n".join(lines))


def steps_of(out):
    """{step: the line iodriftctl printed for it}"""
    return {line.split(":")[0].strip(): line for line in out["text"].splitlines()[2:]}


work = tempfile.mkdtemp(prefix="iodrift-diagpriv-", dir="/var/tmp")
user = dbus.service_user()
try:
    user.__enter__()
    os.chmod(work, 0o755)
    binary = os.path.join(work, "iodriftd")
    shutil.copy(os.environ["IODRIFTD"], binary)
    ctl_binary_copy = os.path.join(work, "iodriftctl")
    shutil.copy(ctl_binary(), ctl_binary_copy)
    for b in (binary, ctl_binary_copy):
        os.chmod(b, 0o755)
    config = os.path.join(work, "iodrift.yaml")
    state = os.path.join(work, "state")
    os.makedirs(state)
    shutil.chown(state, "iodrift", "iodrift")
    write("10m")

    with dbus.Bus(system_policy=POLICY) as bus:
        addr = bus.address
        # The baseline forms, then is set 50x too high.
        with start_daemon(addr) as d:
            dbus.wait_for_service(addr, d)

            def baseline():
                status, _, body = d.get("/api/v1/probes", timeout=30)
                return status == 200 and next((p.get("baseline") for p in
                                               json.loads(body)["probes"]
                                               if p["name"] == "mem"), None)
            wait_for("a baseline of mem", baseline, timeout=120, interval=0.5)
            if d.stop() != 0:
                fail(f"iodriftd did not stop cleanly: {d.stderr()}")
        inflate_baseline(50)

        with start_daemon(addr) as d:
            dbus.wait_for_service(addr, d)

            # 1. The member's flood: one experiment, refusals naming the limit.
            results = [None] * 8

            def call(i):
                results[i] = ctl(addr, "diagnose", "mem", "--json", prefix=MEMBER)
            threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            results += [ctl(addr, "diagnose", "mem", "--json", prefix=MEMBER) for _ in range(3)]
            ran = [r for r in results if r.stdout.strip()]
            refused = [r for r in results if not r.stdout.strip()]
            if len(ran) != 1:
                fail(f"{len(ran)} experiments from 11 calls, want 1: "
                     f"{[(r.returncode, r.stdout, r.stderr) for r in results]}")
            for r in refused:
                if r.returncode != 1 or not ("cooldown" in r.stderr or
                                             "another diagnose experiment is running" in r.stderr):
                    fail(f"a refused call does not name the limit: {r.returncode} {r.stderr}")
            for r in results[8:]:
                if "cooldown" not in r.stderr or "diagnose.cooldown" not in r.stderr:
                    fail(f"a call after the experiment does not name the cooldown: {r.stderr}")
            member = json.loads(ran[0].stdout)
            print("member:", member["text"])
            steps = steps_of(member)
            for step in ("drop_caches", "drop_slab", "compact"):
                if "skipped (needs root: run iodriftctl diagnose as root)" not in steps.get(step,
                                                                                          ""):
                    fail(f"member: {step} is not 'skipped (needs root ...)': {member['text']}")
            for step in ("control", "warm_free_memory"):
                if "median" not in steps.get(step, "") or f"ratio.{step}" not in \
                        member["figures"]:
                    fail(f"member: {step} was not measured: {member['text']}")
            if member["figures"].get("runs") != 6:
                fail(f"member: want 6 experiment runs, got {member['figures']}")
            # One scrape: the experiment may end before the probe's first scheduled run, and its
            # record is exported all the same.
            samples, _ = scrape(d, timeout=30)
            runs = prom.value(samples, "iodrift_probe_experiment_runs_total", probe="mem")
            if runs != 6:
                fail(f"iodrift_probe_experiment_runs_total{{probe=mem}} {runs}, want 6")

            # 2. Root: every step, the root ones made by iodriftctl.
            write("0s")
            res = ctl(addr, "reload")
            if res.returncode != 0:
                fail(f"reload: {res.stdout}{res.stderr}")
            vm = os.path.join(work, "vm")
            os.makedirs(vm)
            for name in ("drop_caches", "compact_memory"):
                open(os.path.join(vm, name), "w").close()
            res = ctl(addr, "diagnose", "mem", "--json", env={"IODRIFTCTL_VM_DIR": vm})
            if res.returncode not in (0, 1) or not res.stdout.strip():
                fail(f"root diagnose: exit {res.returncode}: {res.stdout}{res.stderr}")
            root = json.loads(res.stdout)
            print("root:", root["text"])
            for step in ("control", "drop_caches", "drop_slab", "compact", "warm_free_memory"):
                if f"ratio.{step}" not in root["figures"] or "median" not in \
                        steps_of(root).get(step, ""):
                    fail(f"root: {step} was not measured: {root['text']}")
            with open(os.path.join(vm, "drop_caches")) as f, \
                    open(os.path.join(vm, "compact_memory")) as g:
                written = (f.read(), g.read())
            if written != ("2", "1"):
                fail(f"root: drop_caches/compact_memory hold {written}, want ('2', '1')")

            # 3. A reload that changes the probe mid-experiment aborts it.
            shutil.rmtree(vm)
            os.makedirs(vm)
            fifo = os.path.join(vm, "drop_caches")
            os.mkfifo(fifo)
            open(os.path.join(vm, "compact_memory"), "w").close()
            proc = None
            try:
                # Two experiments just ran: the RunProbe limiter (which counts experiment runs) may
                # refuse this one; it says when to retry, and the test does as told.
                for _ in range(8):
                    proc = subprocess.Popen(
                        [ctl_binary_copy, "--bus", addr, "diagnose", "mem", "--json"],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                        env=dict(os.environ, IODRIFTCTL_VM_DIR=vm))
                    progress = []
                    for line in proc.stderr:  # iodriftctl names each step before it intervenes
                        progress.append(line)
                        if "drop_caches 1/3" in line:
                            break
                    else:
                        proc.wait()
                        told = re.search(r"rate limited.*retry in (\d+) ms", "".join(progress))
                        if told:
                            time.sleep(int(told.group(1)) / 1000 + 0.1)
                            continue
                        fail(f"iodriftctl never reached drop_caches: {''.join(progress)}")
                    break
                else:
                    fail(f"still rate limited after 8 tries: {''.join(progress)}")
                write("0s", size="12MiB")
                res = ctl(addr, "reload")
                if res.returncode != 0:
                    fail(f"reload: {res.stdout}{res.stderr}")
                fd = os.open(fifo, os.O_RDONLY)  # lets the held write complete
                first = os.read(fd, 16)
                os.close(fd)
                out, err = proc.communicate(timeout=60)
            finally:
                if proc and proc.poll() is None:
                    proc.kill()
                    proc.wait()
            if first != b"1":
                fail(f"the held drop_caches write was {first!r}")
            if not stat.S_ISFIFO(os.stat(fifo).st_mode):
                fail("the FIFO was replaced")
            aborted = json.loads(out)
            print("aborted:", aborted["text"])
            if "aborted: probe mem was changed by a reload (nothing further applied)" not in \
                    aborted["text"] or proc.returncode != 1:
                fail(f"the reload did not abort the experiment: exit {proc.returncode}: "
                     f"{aborted['text']} {err}")
            if "ratio.drop_caches" in aborted["figures"]:
                fail(f"a step was measured after the reload: {aborted['figures']}")
            with open(os.path.join(vm, "compact_memory")) as f:
                if f.read():
                    fail("compact_memory was written after the abort")
            # The probe's last experiment is still root's (a redefined probe keeps its state):
            # the aborted one, begun on the old definition, is not stored on the new one.
            samples, _ = scrape(d, timeout=30)
            stamp = prom.value(samples, "iodrift_probe_recovery_timestamp_seconds", probe="mem")
            if stamp is None or abs(stamp - root["figures"]["finish_time"]) > 1e-3:
                fail(f"the aborted experiment's report landed on the changed probe: last "
                     f"experiment at {stamp}, root's ended {root['figures']['finish_time']}, "
                     f"the aborted one {aborted['figures'].get('finish_time')}")
finally:
    shutil.rmtree(work, ignore_errors=True)
    user.__exit__(None, None, None)
print("ok")
