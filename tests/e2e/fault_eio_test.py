#!/usr/bin/env python3
"""I/O errors: probes on a FUSE file whose reads fail with EIO (faultfs eio.dat; the first
256 KiB read fine, everything after fails, so runs hit the error part-way).

  * `iodriftd --once --json` exits 1; each probe on eio.dat has "success": false, "bytes" that
    were not faked, and an "error" naming the file and the I/O error; a probe on a good file of
    the same mount in the same run succeeds.
  * As a daemon: the errors are counted in iodrift_probe_runs_total{result="error"} run after
    run, iodrift_probe_success is 0, the good probe keeps succeeding, the daemon does not crash
    and exits 0 on SIGTERM.

Needs root, /dev/fuse and faultfs (tests/fuse); otherwise exits 77 (skipped).
"""
import os
import shutil
import tempfile
import time

from iodrift_test import fuse, prom
from iodrift_test.config import write_temp_config
from iodrift_test.daemon import Daemon, once_json, scrape
from iodrift_test.skip import fail
from iodrift_test.wait import wait_for


fuse.need_faultfs()

EIO_AFTER = 256 * 1024
KINDS = ("cached", "buffered", "direct", "random")


def probes(fs, interval):
    out = [{"name": f"eio-{kind}", "kind": kind, "target": fs.path("eio.dat"),
            "interval": interval, "timeout": "10s", "time_budget": "250ms"}
           for kind in KINDS]
    for p in out:
        if p["kind"] == "random":
            p["requests"] = 16
        else:
            p["size"] = "2MiB"
    out.append({"name": "good-buffered", "kind": "buffered", "target": fs.path("ok.dat"),
                "interval": interval, "timeout": "10s", "size": "2MiB"})
    return out


def io_error_text(message):
    m = message.lower()
    return "input/output error" in m or "eio" in m or "i/o error" in m


state_dir = tempfile.mkdtemp(prefix="iodrift-eio-")
try:
    with fuse.mounted(size="8M", eio_after=EIO_AFTER) as fs:
        eio_path = fs.path("eio.dat")

        # One-shot: exit 1, clear errors in the JSON.
        config = write_temp_config(probes(fs, "1m"), directory=state_dir)
        start = time.monotonic()
        rc, data, stderr = once_json(config, state_dir)
        print(f"--once --json: exit {rc} in {time.monotonic() - start:.1f} s")
        if rc != 1:
            fail(f"--once with failing probes exited {rc}, want 1; "
                 f"stderr: {stderr[-1500:]}")
        by_name = {p["name"]: p for p in data.get("probes", [])}
        for kind in KINDS:
            p = by_name.get(f"eio-{kind}")
            if p is None:
                fail(f"eio-{kind} missing from the JSON: {sorted(by_name)}")
            print(f"  eio-{kind}: success={p['success']} bytes={p['bytes']} error={p['error']!r}")
            if p["success"] is not False:
                fail(f"eio-{kind}: success is {p['success']!r}, want false")
            if not p["error"] or eio_path not in p["error"] or not io_error_text(p["error"]):
                fail(f"eio-{kind}: error {p['error']!r} does not name {eio_path} and the "
                     "I/O error")
            if p.get("throughput_bytes_per_second") not in (None, 0):
                fail(f"eio-{kind}: a failed run reports a throughput "
                     f"{p['throughput_bytes_per_second']}")
            if p["bytes"] > EIO_AFTER:
                fail(f"eio-{kind}: claims {p['bytes']} bytes read; only {EIO_AFTER} "
                     "can be read before the error")
        good = by_name.get("good-buffered")
        if good is None or good["success"] is not True or good["error"]:
            fail(f"good-buffered on ok.dat of the same mount did not succeed: {good}")
        if fs.stats()["eio"] < len(KINDS):
            fail(f"faultfs served fewer EIO reads than probes: {fs.stats()}")
        os.unlink(config)

        # Daemon: errors counted run after run; no crash.
        config = write_temp_config(probes(fs, "1s"), directory=state_dir)
        with Daemon("--config", config) as d:
            try:
                def enough_errors():
                    s, _ = scrape(d)
                    # good-buffered is staggered last: it may not have run yet when the EIO
                    # probes (1 s apart) already have their errors.
                    good = sum(prom.runs(s, "good-buffered", r) for r in ("ok", "error", "timeout"))
                    return s if good >= 1 and all(prom.runs(s, f"eio-{k}", "error") >= 2
                                                  for k in KINDS) else None
                samples = wait_for("two error results from every probe on eio.dat and a "
                                   "finished run of good-buffered",
                                   enough_errors, timeout=40, interval=0.5)
                if d.proc.poll() is not None:
                    fail(f"iodriftd exited {d.proc.returncode}: {d.stderr()[-2000:]}")
                for kind in KINDS:
                    name = f"eio-{kind}"
                    counts = {r: prom.runs(samples, name, r)
                              for r in ("ok", "error", "timeout", "skipped")}
                    print(f"  {name}: runs {counts}")
                    if counts["ok"] or counts["timeout"]:
                        fail(f"{name}: runs {counts}: want errors only")
                    if prom.value(samples, "iodrift_probe_success", probe=name) != 0:
                        fail(f"iodrift_probe_success{{probe={name}}} is not 0")
                if prom.runs(samples, "good-buffered", "ok") < 1 or \
                        prom.runs(samples, "good-buffered", "error"):
                    fail("good-buffered did not keep succeeding next to the EIO probes")
                log = d.stderr()
                if "result=error" not in log or eio_path not in log:
                    fail(f"the log does not report the errors on {eio_path}: {log[-1500:]}")
            finally:
                fs.abort()  # nothing should be blocked; never let the daemon's stop wait on FUSE
            rc = d.stop()
            if rc != 0:
                fail(f"iodriftd exited {rc} on SIGTERM, want 0: {d.stderr()[-1500:]}")
        os.unlink(config)
finally:
    shutil.rmtree(state_dir, ignore_errors=True)
print("ok")
