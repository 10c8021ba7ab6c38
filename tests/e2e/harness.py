"""Shared helpers for iodrift's end-to-end tests: start the real iodriftd, find its port, scrape.

Tests are plain python3 (stdlib only) scripts registered with CTest by tests/e2e/CMakeLists.txt.
A script that cannot run here (tool missing, needs root) exits 77: CTest reports it as skipped.
"""
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

SKIP = 77


def skip(reason):
    print(f"SKIPPED: {reason}")
    sys.exit(SKIP)


def fail(message):
    print(f"FAILED: {message}")
    sys.exit(1)


def binary():
    path = os.environ.get("IODRIFTD")
    if not path or not os.access(path, os.X_OK):
        fail(f"IODRIFTD does not name an executable: {path!r}")
    return path


class Daemon:
    """A running iodriftd on 127.0.0.1:0. Use as a context manager."""

    def __init__(self, *args, env=None):
        self.state_dir = tempfile.mkdtemp(prefix="iodrift-e2e-")
        self.args = [binary(), "--listen", "127.0.0.1:0", "--dbus", "none"]
        if "--state-dir" not in args:
            self.args += ["--state-dir", self.state_dir]
        self.args += list(args)
        self.env = dict(os.environ, **(env or {}))
        self.proc = None
        self.port = None
        self.log_path = os.path.join(self.state_dir, "stderr.log")

    def __enter__(self):
        self.log = open(self.log_path, "w+")
        self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL, stderr=self.log,
                                     env=self.env)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                fail(f"iodriftd exited with {self.proc.returncode}: {self.stderr()}")
            m = re.search(r"serving metrics on http://[^ ]*:(\d+)/metrics", self.stderr())
            if m:
                self.port = int(m.group(1))
                return self
            time.sleep(0.05)
        fail(f"iodriftd did not report its port in 20 s: {self.stderr()}")

    def __exit__(self, *exc):
        self.stop()
        shutil.rmtree(self.state_dir, ignore_errors=True)

    def stderr(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self, timeout=10):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                fail(f"iodriftd did not exit within {timeout} s of SIGTERM")
        return self.proc.returncode if self.proc else None

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


def parse_metrics(text):
    """Parses exposition text into {series: value} (series = name{labels} as printed)."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        out[series] = float(value)
    return out
