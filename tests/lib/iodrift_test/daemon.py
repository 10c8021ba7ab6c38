"""The real iodriftd for a test: started on 127.0.0.1:0 with its own state dir, its port read
from its log, scraped over HTTP, stopped with SIGTERM; its log is printed when the test fails
inside the `with` block. Also `iodriftd --once --json` and the binaries' paths ($IODRIFTD,
$IODRIFTCTL, set by CTest)."""
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from iodrift_test import prom
from iodrift_test.skip import SKIP, fail

_SERVING = re.compile(r"serving metrics on (https?://[^ ]*:(\d+))/metrics")
LOG_TAIL_CHARS = 6000  # how much of the daemon's log a failing test prints


def binary():
    """Path of iodriftd from $IODRIFTD; fails the test unless it is an executable."""
    path = os.environ.get("IODRIFTD")
    if not path or not os.access(path, os.X_OK):
        fail(f"IODRIFTD does not name an executable: {path!r}")
    return path


def ctl_binary():
    """Path of iodriftctl from $IODRIFTCTL; fails the test unless it is an executable."""
    path = os.environ.get("IODRIFTCTL")
    if not path or not os.access(path, os.X_OK):
        fail(f"IODRIFTCTL does not name an executable: {path!r}")
    return path


class Daemon:
    """A running iodriftd on 127.0.0.1:0 with `--dbus none` (a later `--dbus ADDR` in `args`
    wins) and, unless `args` names one, `--state-dir` a fresh temp dir. Use as a context
    manager: entering waits (20 s) for the port; leaving stops it and removes the temp dir.

    `port`, `base` (http(s)://host:port) and `state_dir` are set; `stderr()` is its log so far.
    `strict_stop`: fail the test when SIGTERM does not stop it within 10 s (else just kill).
    `workdir`: an existing temp dir to use (and remove) instead of a fresh one."""

    def __init__(self, *args, env=None, strict_stop=True, workdir=None):
        self.dir = workdir or tempfile.mkdtemp(prefix="iodrift-e2e-")
        self.state_dir = self.dir
        self.args = [binary(), "--listen", "127.0.0.1:0", "--dbus", "none"]
        if "--state-dir" not in args:
            self.args += ["--state-dir", self.state_dir]
        self.args += list(args)
        self.env = dict(os.environ, **(env or {}))
        self.strict_stop = strict_stop
        self.proc = None
        self.port = None
        self.base = None
        self.log_path = os.path.join(self.dir, "stderr.log")

    def __enter__(self):
        self.log = open(self.log_path, "w+")
        self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL, stderr=self.log,
                                     env=self.env)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                fail(f"iodriftd exited with {self.proc.returncode}: {self.stderr()}")
            m = _SERVING.search(self.stderr())
            if m:
                self.base, self.port = m.group(1), int(m.group(2))
                return self
            time.sleep(0.05)
        fail(f"iodriftd did not report its port in 20 s: {self.stderr()}")

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None and not (exc_type is SystemExit and exc.code in (0, None, SKIP)):
            self.print_log()
        try:
            self.stop() if self.strict_stop else self._stop_quietly()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def print_log(self):
        """Prints the tail of the daemon's log (done on a failure inside the `with` block)."""
        try:
            text = self.stderr()
        except OSError:
            return
        print(f"--- iodriftd log ({self.log_path}, last {LOG_TAIL_CHARS} chars) ---\n"
              f"{text[-LOG_TAIL_CHARS:]}--- end of iodriftd log ---", file=sys.stdout)

    def stderr(self):
        with open(self.log_path) as f:
            return f.read()

    def alive(self):
        return self.proc.poll() is None

    def stop(self, timeout=10):
        """SIGTERM; fails the test when it is still running after `timeout` s. Returns the exit
        code (None when never started)."""
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                fail(f"iodriftd did not exit within {timeout} s of SIGTERM")
        return self.proc.returncode if self.proc else None

    def _stop_quietly(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def url(self, path="/metrics"):
        return f"http://127.0.0.1:{self.port}{path}"

    def get(self, path="/metrics", gzip_ok=False, method="GET", timeout=10):
        """Returns (status, headers, decoded body text)."""
        req = urllib.request.Request(self.url(path), method=method)
        if gzip_ok:
            req.add_header("Accept-Encoding", "gzip")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                raw = resp.read()
                headers = dict(resp.headers)
                status = resp.status
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read().decode(errors="replace")
        if headers.get("Content-Encoding") == "gzip":
            raw = gzip.decompress(raw)
        return status, headers, raw.decode()


class ConfDaemon(Daemon):
    """iodriftd --config FILE (written from `config_text`) with --state-dir DIR/state; `config`
    is the file's path. SIGTERM that is not honoured is not a failure here (kill)."""

    def __init__(self, config_text, env=None):
        directory = tempfile.mkdtemp(prefix="iodrift-sec-")
        self.config = os.path.join(directory, "iodrift.yaml")
        with open(self.config, "w") as f:
            f.write(config_text)
        super().__init__("--config", self.config, "--state-dir", os.path.join(directory, "state"),
                         env=env, strict_stop=False, workdir=directory)
        self.state_dir = os.path.join(directory, "state")


def scrape(daemon, timeout=10):
    """(samples, seconds) of one GET /metrics (samples as prom.parse gives them); fails the test
    on a non-200 answer."""
    start = time.monotonic()
    status, _, body = daemon.get("/metrics", timeout=timeout)
    elapsed = time.monotonic() - start
    if status != 200:
        fail(f"/metrics answered {status}")
    return prom.parse(body), elapsed


def wait_healthy(daemon, timeout=20):
    """Waits until GET /-/healthy answers 200; fails the test (with the log) otherwise."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if not daemon.alive():
            fail(f"iodriftd exited with {daemon.proc.returncode}: {daemon.stderr()}")
        try:
            last = daemon.get("/-/healthy", timeout=5)[0]
            if last == 200:
                return
        except OSError as e:
            last = e
        time.sleep(0.1)
    fail(f"/-/healthy not 200 within {timeout} s (last: {last}): {daemon.stderr()}")


def once_json(config, state_dir, timeout=60):
    """Runs `iodriftd --once --json --config CONFIG`; returns (returncode, parsed JSON, stderr).
    Fails the test when it prints no JSON."""
    res = subprocess.run([binary(), "--once", "--json", "--config", config,
                          "--dbus", "none", "--state-dir", state_dir],
                         capture_output=True, text=True, timeout=timeout)
    try:
        data = json.loads(res.stdout)
    except ValueError:
        fail(f"--once --json printed no JSON (exit {res.returncode}): "
             f"stdout={res.stdout[:500]!r} stderr={res.stderr[-1000:]!r}")
    return res.returncode, data, res.stderr
