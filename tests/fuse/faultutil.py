"""Helpers shared by the fault tests (tests/e2e/fault_*_test.py): configs, metric look-ups by
label, waiting, process facts. Python stdlib only; imports tests/e2e/harness.py."""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import harness  # noqa: E402

_SERIES = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def write_config(probes, directory=None, extra=""):
    """Writes a YAML config with `probes` (a list of dicts of key: value) and returns its path.

    Collectors that read root-only or large files are left on: the daemon is tested as shipped.
    """
    lines = ["dbus: none", "log_level: info"]
    if extra:
        lines.append(extra.rstrip("\n"))
    lines.append("probes:")
    for probe in probes:
        first = True
        for key, value in probe.items():
            lines.append(f"  {'- ' if first else '  '}{key}: {value}")
            first = False
    fd, path = tempfile.mkstemp(prefix="iodrift-fault-", suffix=".yaml", dir=directory)
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def parse(text):
    """Exposition text → list of (name, {labels}, value)."""
    out = []
    for series, value in harness.parse_metrics(text).items():
        m = _SERIES.match(series)
        if not m:
            continue
        labels = {k: v.replace('\\"', '"').replace("\\\\", "\\")
                  for k, v in _LABEL.findall(m.group(2) or "")}
        out.append((m.group(1), labels, value))
    return out


def value(samples, name, **labels):
    """The value of the one series of `name` whose labels include `labels`, else None."""
    found = [v for n, ls, v in samples
             if n == name and all(ls.get(k) == x for k, x in labels.items())]
    if len(found) > 1:
        harness.fail(f"{name}{labels} matches {len(found)} series")
    return found[0] if found else None


def runs(samples, probe, result):
    """iodrift_probe_runs_total{probe, result}, 0 when the series is absent."""
    return value(samples, "iodrift_probe_runs_total", probe=probe, result=result) or 0


def scrape(daemon, timeout=10):
    """(samples, seconds) of one GET /metrics; fails the test on a non-200 answer."""
    start = time.monotonic()
    status, _, body = daemon.get("/metrics", timeout=timeout)
    elapsed = time.monotonic() - start
    if status != 200:
        harness.fail(f"/metrics answered {status}")
    return parse(body), elapsed


def wait_for(what, predicate, timeout, interval=0.2):
    """Polls predicate() until it returns a true value (returned), or fails naming `what`."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    harness.fail(f"timed out after {timeout} s waiting for {what}")


def threads(pid):
    """Threads of process `pid` (from /proc/PID/status), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def leader_state(pid):
    """State letter of the thread-group leader (R, S, D, Z, …), or None when the process is gone.

    A process one of whose threads is stuck in a FUSE request cannot be reaped after it exits:
    its leader shows Z while the stuck thread stays in D until the request ends.
    """
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def once_json(config, state_dir, timeout=60):
    """Runs `iodriftd --once --json --config CONFIG`; returns (returncode, parsed JSON, stderr)."""
    res = subprocess.run([harness.binary(), "--once", "--json", "--config", config,
                          "--dbus", "none", "--state-dir", state_dir],
                         capture_output=True, text=True, timeout=timeout)
    try:
        data = json.loads(res.stdout)
    except ValueError:
        harness.fail(f"--once --json printed no JSON (exit {res.returncode}): "
                     f"stdout={res.stdout[:500]!r} stderr={res.stderr[-1000:]!r}")
    return res.returncode, data, res.stderr
