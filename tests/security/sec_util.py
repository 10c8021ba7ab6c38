"""Helpers for the security tests: a throw-away CA-less self-signed certificate, bcrypt hashes,
and an iodriftd started on a config file (plain or TLS), on 127.0.0.1 only.

stdlib only; reuses skip()/fail()/binary() of tests/e2e/harness.py.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from harness import fail, skip, binary  # noqa: E402,F401


def need(tool):
    if shutil.which(tool) is None:
        skip(f"{tool} not installed")


def make_cert(directory, name="tls"):
    """A self-signed EC certificate for localhost / 127.0.0.1; returns (cert, key) paths."""
    need("openssl")
    cert = os.path.join(directory, name + ".crt")
    key = os.path.join(directory, name + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-keyout", key, "-out", cert],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return cert, key


def bcrypt_hash(password, cost=10):
    """bcrypt of `password`: python's crypt module (libxcrypt), else htpasswd -B, else skip."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            import crypt
            method = getattr(crypt, "METHOD_BLOWFISH", None)
            if method is not None:
                h = crypt.crypt(password, crypt.mksalt(method, rounds=2 ** cost))
                if h and h.startswith("$2"):
                    return h
        except ImportError:
            pass
    if shutil.which("htpasswd"):
        out = subprocess.run(["htpasswd", "-nbBC", str(cost), "", password], check=True,
                             capture_output=True, text=True).stdout
        return out.strip().lstrip(":")
    skip("no bcrypt generator (python crypt with bcrypt, or htpasswd from apache2-utils)")


class ConfDaemon:
    """iodriftd --config FILE on 127.0.0.1:0. Use as a context manager; `base` is its URL."""

    def __init__(self, config_text, env=None):
        self.dir = tempfile.mkdtemp(prefix="iodrift-sec-")
        self.config = os.path.join(self.dir, "iodrift.yaml")
        with open(self.config, "w") as f:
            f.write(config_text)
        self.args = [binary(), "--config", self.config, "--listen", "127.0.0.1:0",
                     "--dbus", "none", "--state-dir", os.path.join(self.dir, "state")]
        self.env = dict(os.environ, **(env or {}))
        self.log_path = os.path.join(self.dir, "stderr.log")
        self.proc = None
        self.port = None
        self.base = None

    def __enter__(self):
        self.log = open(self.log_path, "w+")
        self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL, stderr=self.log,
                                     env=self.env)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                fail(f"iodriftd exited with {self.proc.returncode}: {self.stderr()}")
            m = re.search(r"serving metrics on (https?://[^ ]*:(\d+))/metrics", self.stderr())
            if m:
                self.base, self.port = m.group(1), int(m.group(2))
                return self
            time.sleep(0.05)
        fail(f"iodriftd did not report its port in 20 s: {self.stderr()}")

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def alive(self):
        return self.proc.poll() is None

    def stderr(self):
        with open(self.log_path) as f:
            return f.read()


def curl(*args, timeout=15):
    """Runs curl; returns (exit code, HTTP status or 0, body)."""
    need("curl")
    r = subprocess.run(["curl", "-sS", "--max-time", "10", "-o", "-", "-w", "\n%{http_code}",
                        *args], capture_output=True, text=True, timeout=timeout)
    body, _, code = r.stdout.rpartition("\n")
    return r.returncode, int(code or 0), body
