#!/usr/bin/env python3
"""TLS + basic auth on the real iodriftd (http.tls_cert_file / tls_key_file / basic_auth_users).

A throw-away self-signed certificate (openssl CLI) and a bcrypt hash made at test time; curl is
the client. Checks: the right credentials over TLS with --cacert get the metrics; a wrong
password, an unknown user and no credentials get 401 with `WWW-Authenticate: Basic
realm="iodrift"` (on every path); plain HTTP to the TLS port and curl without the CA fail; a
missing key file is a config error naming the key (exit 78); a certificate that is not valid PEM
data stops the daemon at start with a clear message (exit 1); the systemd watchdog keeps being
pinged with TLS and auth on.
"""
import os
import socket
import subprocess
import tempfile
import time

from iodrift_test.daemon import ConfDaemon, binary
from iodrift_test.skip import fail, need
from iodrift_test.web import bcrypt_hash, curl, make_cert


def main():
    need("curl")
    need("openssl")
    tmp = tempfile.mkdtemp(prefix="iodrift-tls-")
    cert, key = make_cert(tmp)
    other_cert, other_key = make_cert(tmp, "other")
    password = "correct horse battery staple"
    config = (f"http:\n  tls_cert_file: {cert}\n  tls_key_file: {key}\n"
              f"  basic_auth_users:\n    prometheus: {bcrypt_hash(password)}\n"
              f"    second: {bcrypt_hash('other', cost=4)}\n")

    with ConfDaemon(config) as d:
        if not d.base.startswith("https://"):
            fail(f"TLS configured but the daemon serves {d.base}")
        url = f"https://localhost:{d.port}/metrics"
        # Right credentials, several times (the later ones come from the verification cache).
        for _ in range(3):
            rc, status, body = curl("--cacert", cert, "-u", f"prometheus:{password}", url)
            if rc != 0 or status != 200 or "iodrift_" not in body:
                fail(f"right credentials: curl rc={rc} status={status} body={body[:200]!r}")
        rc, status, _ = curl("--cacert", cert, "-u", "second:other", url)
        if status != 200:
            fail(f"second user: status {status}")
        # Wrong password, unknown user, no credentials, another user's password: 401.
        for args in (["-u", "prometheus:wrong"], ["-u", f"nobody:{password}"], [],
                     ["-u", "second:" + password], ["-H", "Authorization: Bearer abc"]):
            rc, status, body = curl("--cacert", cert, *args, url)
            if status != 401:
                fail(f"{args}: want 401, got rc={rc} status={status}")
            if "iodrift_" in body:
                fail(f"{args}: 401 response leaks metrics")
        # Unknown paths are 401 before 404 (nothing about which paths exist).
        rc, status, _ = curl("--cacert", cert, f"https://localhost:{d.port}/nope")
        if status != 401:
            fail(f"unknown path without credentials: want 401, got {status}")
        rc, status, _ = curl("--cacert", cert, "-u", f"prometheus:{password}",
                             f"https://localhost:{d.port}/nope")
        if status != 404:
            fail(f"unknown path with credentials: want 404, got {status}")
        r = subprocess.run(["curl", "-sS", "-D", "-", "-o", "/dev/null", "--cacert", cert, url],
                           capture_output=True, text=True, timeout=15)
        if 'www-authenticate: basic realm="iodrift"' not in r.stdout.lower():
            fail(f"401 without WWW-Authenticate: {r.stdout!r}")
        # Plain HTTP to the TLS port: no HTTP answer.
        rc, status, _ = curl("-u", f"prometheus:{password}", f"http://127.0.0.1:{d.port}/metrics")
        if rc == 0 or status != 0:
            fail(f"plain HTTP to the TLS port answered: rc={rc} status={status}")
        # Without the CA, or with another CA: certificate verification fails (curl exit 60).
        rc, status, _ = curl("-u", f"prometheus:{password}", url)
        if rc != 60:
            fail(f"curl without --cacert: want exit 60 (verification failed), got {rc}")
        rc, status, _ = curl("--cacert", other_cert, "-u", f"prometheus:{password}", url)
        if rc != 60:
            fail(f"curl with another CA: want exit 60, got {rc}")
        # TLS 1.1 and older are refused.
        rc, status, _ = curl("--cacert", cert, "--tlsv1.0", "--tls-max", "1.1",
                             "-u", f"prometheus:{password}", url)
        if status == 200:
            fail("a TLS 1.1 client was served")
        if not d.alive():
            fail(f"daemon died: {d.stderr()}")
    print("ok: TLS + basic auth")

    # A missing key file: a config error naming the key, before anything starts.
    bad = os.path.join(tmp, "bad.yaml")
    with open(bad, "w") as f:
        f.write(f"http:\n  tls_cert_file: {cert}\n  tls_key_file: {tmp}/missing.key\n")
    r = subprocess.run([binary(), "--config", bad, "--check-config"], capture_output=True,
                       text=True, timeout=30)
    if r.returncode != 78 or f"{bad}:3:17: http.tls_key_file: cannot read" not in r.stderr:
        fail(f"missing key file: rc={r.returncode} stderr={r.stderr!r}")
    # PEM markers but not a certificate: passes the loader, fails at start with exit 1.
    junk = os.path.join(tmp, "junk.crt")
    with open(junk, "w") as f:
        f.write("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n")
    with open(bad, "w") as f:
        f.write(f"http:\n  tls_cert_file: {junk}\n  tls_key_file: {key}\n")
    r = subprocess.run([binary(), "--config", bad, "--listen", "127.0.0.1:0", "--dbus", "none",
                        "--state-dir", os.path.join(tmp, "state")],
                       capture_output=True, text=True, timeout=30)
    if r.returncode != 1 or "TLS: tls_cert_file " + junk not in r.stderr:
        fail(f"invalid certificate: want exit 1 naming the file, got rc={r.returncode} "
             f"stderr={r.stderr!r}")
    # A key that does not belong to the certificate: the same.
    with open(bad, "w") as f:
        f.write(f"http:\n  tls_cert_file: {cert}\n  tls_key_file: {other_key}\n")
    r = subprocess.run([binary(), "--config", bad, "--listen", "127.0.0.1:0", "--dbus", "none",
                        "--state-dir", os.path.join(tmp, "state")],
                       capture_output=True, text=True, timeout=30)
    if r.returncode != 1 or "TLS: tls_cert_file" not in r.stderr:
        fail(f"mismatched key: want exit 1, got rc={r.returncode} stderr={r.stderr!r}")
    print("ok: bad TLS files")

    # The systemd watchdog: liveness must pass with TLS and auth on (a fake NOTIFY_SOCKET).
    sock_path = os.path.join(tmp, "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(sock_path)
    sock.settimeout(0.5)
    env = {"NOTIFY_SOCKET": sock_path, "WATCHDOG_USEC": "600000"}
    with ConfDaemon(config, env=env) as d:
        pings = 0
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            try:
                if "WATCHDOG=1" in sock.recv(4096).decode():
                    pings += 1
            except socket.timeout:
                pass
        if pings < 5:
            fail(f"only {pings} watchdog pings in 4 s with TLS + auth (want >= 5): {d.stderr()}")
        if "liveness check failed" in d.stderr():
            fail(f"liveness check failed with TLS + auth: {d.stderr()}")
    sock.close()
    print(f"ok: watchdog pinged {pings} times in 4 s with TLS + auth")
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
