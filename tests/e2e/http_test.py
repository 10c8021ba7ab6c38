#!/usr/bin/env python3
"""HTTP behaviour: landing page, 404, 405, HEAD, request bodies refused, bind failure message."""
import os
import socket
import subprocess

from iodrift_test.daemon import Daemon, binary
from iodrift_test.skip import fail


source = os.environ["IODRIFT_SOURCE_DIR"]
config = os.path.join(source, "tests/e2e/no-probes.yaml")

with Daemon("--config", config) as d:
    status, headers, body = d.get("/")
    if status != 200 or "/metrics" not in body or "text/html" not in headers.get("Content-Type", ""):
        fail(f"landing page: {status} {headers}")
    status, _, body = d.get("/-/healthy")
    if status != 200 or body != "ok\n":
        fail(f"/-/healthy: {status} {body!r}")
    status, _, _ = d.get("/nope")
    if status != 404:
        fail(f"unknown path answered {status}, want 404")
    status, _, _ = d.get("/metrics", method="DELETE")
    if status != 405:
        fail(f"DELETE answered {status}, want 405")
    status, headers, body = d.get("/metrics", method="HEAD")
    if status != 200 or body:
        fail(f"HEAD answered {status} with {len(body)} body bytes")
    # A POST with a body is refused.
    s = socket.create_connection(("127.0.0.1", d.port), timeout=5)
    s.sendall(b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
    reply = s.recv(200).decode(errors="replace")
    s.close()
    if " 413 " not in reply.split("\r\n")[0]:
        fail(f"POST with a body: {reply.splitlines()[0] if reply else 'no reply'}")

    # A second daemon on the same port: exit 1 with one line naming the address.
    res = subprocess.run([binary(), "--config", config, "--listen",
                          f"127.0.0.1:{d.port}", "--dbus", "none", "--state-dir", d.state_dir],
                         capture_output=True, text=True, timeout=20)
    if res.returncode != 1:
        fail(f"second daemon on a busy port exited {res.returncode}, want 1")
    if f"listen 127.0.0.1:{d.port}: address already in use" not in res.stderr:
        fail(f"bind failure message does not name the address: {res.stderr!r}")
    if d.stop() != 0:
        fail("iodriftd did not exit 0 on SIGTERM")
print("ok")
