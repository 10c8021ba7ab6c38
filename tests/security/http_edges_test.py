#!/usr/bin/env python3
"""HTTP edge cases on the real iodriftd, with raw requests:

- `/metrics%00.html` (and `/-/healthy%00`) answer 404: paths match exactly, a %00 does not end
  them;
- a query value or key with a NUL or another control character (`?runs=1%00junk`) answers 400
  on every route, naming the argument; `?runs=1` still answers 200;
- `Accept-Encoding: gzip;q=0` gets an uncompressed body; `gzip` and `gzip;q=0.5` get gzip;
  `*;q=0` none;
- `Expect: 100-continue` with a body: no "100 Continue", a 413 at once, connection closed;
- a POST announcing a body it never sends is answered (413) at once, not held open until the
  connection timeout (10 s here).
"""
import socket
import time

from iodrift_test.daemon import ConfDaemon
from iodrift_test.skip import fail


CONFIG = "http:\n  connection_timeout: 10s\n"


def exchange(port, data, timeout=8):
    """Sends `data`; returns (everything the server sent until it closed, seconds)."""
    start = time.monotonic()
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(data)
    out = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except (ConnectionResetError, socket.timeout):
        pass
    s.close()
    return out, time.monotonic() - start


def status_of(reply):
    parts = reply.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[0].startswith(b"HTTP/1.") else None


def header(reply, name):
    head = reply.split(b"\r\n\r\n", 1)[0].decode(errors="replace")
    for line in head.split("\r\n")[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == name.lower():
            return v.strip()
    return None


def main():
    with ConfDaemon(CONFIG) as d:
        port = d.port
        for path in ("/metrics%00.html", "/metrics%00", "/-/healthy%00x", "/%00"):
            reply, _ = exchange(port, f"GET {path} HTTP/1.0\r\n\r\n".encode())
            if status_of(reply) != 404:
                fail(f"GET {path}: want 404, got {status_of(reply)}")
        reply, _ = exchange(port, b"GET /metrics HTTP/1.0\r\n\r\n")
        if status_of(reply) != 200:
            fail(f"GET /metrics: want 200, got {status_of(reply)}")
        print("ok: paths match exactly (%00 does not end them)")

        for path in ("/api/v1/probes?runs=1%00junk", "/api/v1/probes?runs=%00",
                     "/api/v1/probes?runs=1%1b%5b2J", "/metrics?x=%07", "/?ru%0ans=1"):
            reply, _ = exchange(port, f"GET {path} HTTP/1.0\r\n\r\n".encode())
            body = reply.split(b"\r\n\r\n", 1)[-1]
            if status_of(reply) != 400 or b"control character" not in body or b"\x1b" in body:
                fail(f"GET {path}: want 400 naming the control character, got "
                     f"{status_of(reply)} {body[:200]!r}")
        reply, _ = exchange(port, b"GET /api/v1/probes?runs=1 HTTP/1.0\r\n\r\n")
        if status_of(reply) != 200:
            fail(f"GET /api/v1/probes?runs=1: want 200, got {status_of(reply)}")
        print("ok: control characters in a query answer 400")

        for value, want in (("gzip;q=0", None), ("gzip; q=0.000", None), ("gzip", "gzip"),
                            ("gzip;q=0.5", "gzip"), ("identity, gzip;q=1", "gzip"),
                            ("*;q=0", None), ("*", "gzip"), ("br, gzip;q=0, *;q=1", None)):
            reply, _ = exchange(port, f"GET /metrics HTTP/1.0\r\nAccept-Encoding: {value}\r\n"
                                      f"\r\n".encode())
            got = header(reply, "Content-Encoding")
            if status_of(reply) != 200 or got != want:
                fail(f"Accept-Encoding: {value}: status {status_of(reply)}, Content-Encoding "
                     f"{got!r}, want {want!r}")
        print("ok: Accept-Encoding q-values honoured")

        reply, took = exchange(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1000"
                                     b"\r\nExpect: 100-continue\r\n\r\n")
        if b"100 Continue" in reply or status_of(reply) != 413:
            fail(f"Expect: 100-continue: got {reply[:200]!r}")
        if took > 5:
            fail(f"Expect: 100-continue answered only after {took:.1f} s")
        reply, took = exchange(port, b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100"
                                     b"\r\n\r\n")
        if status_of(reply) != 413:
            fail(f"POST with Content-Length and no body: want 413, got {reply[:200]!r}")
        if took > 5:
            fail(f"POST with Content-Length and no body held {took:.1f} s (connection_timeout "
                 f"10 s): the body must be refused before it is read")
        print(f"ok: bodies refused before they are read ({took * 1000:.0f} ms)")
        if not d.alive():
            fail(f"daemon died: {d.stderr()}")


if __name__ == "__main__":
    main()
