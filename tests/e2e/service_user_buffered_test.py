#!/usr/bin/env python3
"""Buffered probes as the packaged service runs them: iodriftd as user `iodrift` with only the
unit's capability (CAP_DAC_READ_SEARCH: inheritable, ambient and bounding set, nothing else), on
(a) a root-owned mode 0600 file on ext4 (a loop-mounted scratch filesystem) and (b) a loop device
(root:disk 0660), with a state directory owned by iodrift.

The kernel hides page-cache residency (mincore, cachestat) from a caller that neither owns nor
may write a file, so the probe proves the drop with its readers' own /proc/thread-self/io
read_bytes (collectors/probes/residency_witness.h). Checks:
  1. the daemon really runs as iodrift with CapEff = CapPrm = dac_read_search only;
  2. every run of both buffered probes (and of a cached probe on the device) is clean —
     result ok, no suspect (no residency_unverified, no cache_not_dropped), residency_witness
     "task_io", storage_read_fraction >= 0.99 — and each forms its baseline after the number of
     runs the daemon says it needs (/api/v1/probes baseline_runs_needed);
  3. the witness can fail: with every page of the file mapped by another process (fadvise cannot
     drop mapped pages), `iodriftd --once --json` as iodrift reports the buffered run skipped
     with suspect cache_not_dropped.
Prints read_bytes fraction per run.

Needs root (loop devices, mounts, setpriv, creates user/group `iodrift` when missing and removes
them afterwards only then); exits 77 otherwise or when a tool is missing.
"""
import grp
import json
import mmap
import os
import pwd
import shutil
import subprocess

from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon, binary
from iodrift_test.devices import Scratch, need_root
from iodrift_test import suspects
from iodrift_test.skip import fail, need_tools
from iodrift_test.wait import wait_for

need_root("mkfs.ext4", "losetup")
need_tools("setpriv", "useradd", "userdel", "getent")

CAP_DAC_READ_SEARCH = 1 << 2
# What systemd/iodrift.service grants: User=/Group=iodrift, AmbientCapabilities= and
# CapabilityBoundingSet=CAP_DAC_READ_SEARCH.
AS_IODRIFT = ("setpriv", "--reuid=iodrift", "--regid=iodrift", "--init-groups",
              "--inh-caps=-all,+dac_read_search", "--ambient-caps=-all,+dac_read_search",
              "--bounding-set=-all,+dac_read_search")


def caps(pid):
    """{field: int} of the Cap* lines and the real uid of /proc/PID/status."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.startswith("Cap"):
                out[key] = int(value.strip(), 16)
            elif key == "Uid":
                out["uid"] = int(value.split()[0])
    return out


created_user = False
if subprocess.run(["getent", "passwd", "iodrift"], capture_output=True).returncode != 0:
    # As systemd/iodrift.sysusers makes it (a system user with a group of the same name).
    res = subprocess.run(["useradd", "--system", "--user-group", "--no-create-home",
                          "--home-dir", "/var/lib/iodrift", "--shell", "/usr/sbin/nologin",
                          "--comment", "iodrift read-throughput monitor", "iodrift"],
                         capture_output=True, text=True)
    if res.returncode != 0:
        # useradd makes the user and the group together or neither; nothing half made remains.
        fail(f"useradd iodrift: {res.stderr}")
    created_user = True
raw = None
raw_mode = None
try:
    iodrift = pwd.getpwnam("iodrift")
    disk_gid = grp.getgrnam("disk").gr_gid
    with Scratch("svcuser") as s:
        raw = s.loop(64 << 20, "raw", fill_random=True, mkfs=False)
        st = os.stat(raw)
        raw_mode = (st.st_uid, st.st_gid, st.st_mode & 0o7777)
        os.chown(raw, 0, disk_gid)
        os.chmod(raw, 0o660)
        mnt = s.mount(s.loop(128 << 20, "fs"), "mnt")
        data = os.path.join(mnt, "data.bin")
        with open(data, "wb") as f:
            f.write(os.urandom(32 << 20))
            os.fsync(f.fileno())
        os.chmod(data, 0o600)  # root's, unreadable by others: only the capability reads it

        # The daemon runs as iodrift: binary and config where it can reach them, state its own.
        exe = s.path("iodriftd")
        shutil.copy(binary(), exe)
        os.chmod(exe, 0o755)
        state = s.path("state")
        os.makedirs(state, mode=0o750)
        os.chown(state, iodrift.pw_uid, iodrift.pw_gid)
        probes = [
            {"name": "file-buffered", "kind": "buffered", "target": data, "interval": "1s",
             "size": "16MiB", "time_budget": "10s", "timeout": "30s"},
            {"name": "dev-buffered", "kind": "buffered", "target": raw, "interval": "1s",
             "size": "16MiB", "time_budget": "10s", "timeout": "30s"},
            {"name": "dev-cached", "kind": "cached", "target": raw, "interval": "1s"},
        ]
        config = write_config(s.path("iodrift.yaml"), probes, state)

        d = Daemon("--config", config, "--state-dir", state)
        d.args = [*AS_IODRIFT, exe, *d.args[1:]]
        with d:
            c = caps(d.proc.pid)  # setpriv execs iodriftd in place
            if c["uid"] != iodrift.pw_uid:
                fail(f"the daemon runs as uid {c['uid']}, want iodrift ({iodrift.pw_uid})")
            for field in ("CapEff", "CapPrm", "CapAmb", "CapBnd"):
                if c[field] != CAP_DAC_READ_SEARCH:
                    fail(f"the daemon's {field} is {c[field]:#x}, want dac_read_search only")

            def api():
                status, _, body = d.get("/api/v1/probes")
                if status != 200:
                    fail(f"/api/v1/probes answered {status}: {body[:500]}")
                return {p["name"]: p for p in json.loads(body)["probes"]}

            last, printed = {}, {}

            def all_baselines():
                got = api()
                last.clear()
                last.update(got)
                for name in ("file-buffered", "dev-buffered", "dev-cached"):
                    p = got.get(name)
                    if p is None:
                        return None
                    runs = p["runs"]
                    # Every run so far clean of the probe's own suspects (a busy machine's io or
                    # memory pressure only delays the baseline; it is not under test here).
                    if runs["ok"] != sum(runs.values()) or suspects.own(p["suspect"]):
                        fail(f"{name}: runs {runs}, suspect {p['suspect']}, "
                             f"error {p['error']!r}, witness {p.get('residency_witness')!r}")
                    if p.get("residency_witness") != "task_io":
                        fail(f"{name}: residency_witness {p.get('residency_witness')!r}, "
                             "want 'task_io'")
                    fraction = p["extra"].get("storage_read_fraction")
                    if name.endswith("buffered") and not (fraction and fraction >= 0.99):
                        fail(f"{name}: storage_read_fraction {fraction}, want >= 0.99")
                    if name.endswith("cached") and not (fraction is not None and fraction <= 0.01):
                        fail(f"{name}: storage_read_fraction {fraction}, want <= 0.01")
                    if printed.get(name) != runs["ok"]:
                        printed[name] = runs["ok"]
                        print(f"{name}: run {runs['ok']}: {p['bytes']} bytes, "
                              f"read_bytes/bytes {fraction}")
                    if p["baseline"] is None:
                        return None
                    if p["baseline_runs_counted"] != p["baseline_runs_needed"] or \
                            runs["ok"] < p["baseline_runs_needed"]:
                        fail(f"{name}: baseline after {runs['ok']} runs, counted "
                             f"{p['baseline_runs_counted']} of {p['baseline_runs_needed']}")
                return got

            got = wait_for("baselines of file-buffered, dev-buffered and dev-cached",
                           all_baselines, timeout=180, interval=0.5,
                           detail=lambda: json.dumps(last, indent=1)[-4000:])
            for name, p in got.items():
                print(f"{name}: baseline {p['baseline']:.0f} after {p['runs']['ok']} clean runs "
                      f"({p['baseline_runs_needed']} needed)")

        # The witness fails when the cache was not dropped: another process maps every page.
        once = write_config(s.path("once.yaml"), probes[:1], state)
        with open(data, "rb") as f:
            m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
            try:
                touched = sum(m[i] for i in range(0, len(m), 4096))  # fault every page in
                res = subprocess.run([*AS_IODRIFT, exe, "--once", "--json", "--config", once,
                                      "--dbus", "none", "--state-dir", state],
                                     capture_output=True, text=True, timeout=120)
            finally:
                m.close()
        try:
            held = json.loads(res.stdout)["probes"][0]
        except (ValueError, KeyError, IndexError):
            fail(f"--once printed no result (exit {res.returncode}): {res.stdout[:500]!r} "
                 f"{res.stderr[-1000:]!r}")
        if held["result"] != "skipped" or "cache_not_dropped" not in held["suspect"]:
            fail(f"pages held by another process: result {held['result']!r}, suspect "
                 f"{held['suspect']}, error {held['error']!r}; want skipped, cache_not_dropped "
                 f"(checksum of the touched pages {touched})")
        if held.get("residency_witness") != "task_io":
            fail(f"held pages: residency_witness {held.get('residency_witness')!r}")
        print(f"held pages: skipped, read_bytes/bytes "
              f"{held['extra'].get('storage_read_fraction')}: {held['error']}")
        os.chown(raw, *raw_mode[:2])
        os.chmod(raw, raw_mode[2])
        raw = None
finally:
    if raw is not None and raw_mode is not None and os.path.exists(raw):
        os.chown(raw, *raw_mode[:2])
        os.chmod(raw, raw_mode[2])
    if created_user:
        subprocess.run(["userdel", "iodrift"], capture_output=True)
print("ok: buffered and cached probes as iodrift with CAP_DAC_READ_SEARCH are clean and form "
      "baselines; held pages are cache_not_dropped")
