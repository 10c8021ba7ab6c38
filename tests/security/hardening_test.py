#!/usr/bin/env python3
"""Hardening of the HTTP endpoint on the real iodriftd (plain HTTP; the same code serves TLS).

- a 100 KB URL gets 414, 100 KB of headers (one header or thousands) get 431, never a crash;
- a request body gets 413, unknown paths 404, other methods 405;
- slowloris: a client sending one header byte a second is disconnected within
  connection_timeout (3 s here) plus the reaper's period, while other clients are served;
- more connections than max_connections (8 here) held open at once: the daemon holds at most
  8 + 64 (its hard limit; connections beyond max_connections that wait for a request head are
  evicted, oldest first, the rest wait in the kernel's accept queue), stays up, and once they
  are gone (closed, or cut off by the timeout) requests succeed again.
"""
import os
import socket
import time
import urllib.error
import urllib.request

from iodrift_test.daemon import ConfDaemon
from iodrift_test.skip import fail

CONFIG = "http:\n  max_connections: 8\n  connection_timeout: 3s\n"


def exchange(port, data, timeout=10):
    """Sends `data`, returns everything the server sends until it closes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass
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
    return out


def status_of(reply):
    parts = reply.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[0].startswith(b"HTTP/1.") else None


def sockets_of(pid):
    """Number of sockets the process holds open."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                count += 1
        except OSError:
            pass
    return count


def get(port, path="/metrics", timeout=10):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def main():
    with ConfDaemon(CONFIG) as d:
        port = d.port
        # Oversized request line and headers.
        cases = [
            ("100 KB URL", b"GET /" + b"a" * 100_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
            ("100 KB header", b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100_000 +
             b"\r\n\r\n", 431),
            ("20000 headers", b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"X-A: b\r\n" * 20_000 +
             b"\r\n", 431),
            ("request body", b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
             b"Connection: close\r\n\r\nhello", 413),
            ("unknown path", b"GET /etc/passwd HTTP/1.0\r\n\r\n", 404),
            ("other method", b"DELETE /metrics HTTP/1.0\r\n\r\n", 405),
            # Not HTTP at all: 400 or closed without an answer; either way no crash.
            ("junk", b"\x00\x01\x02garbage\r\n\r\n", (400, None)),
        ]
        for name, data, want in cases:
            got = status_of(exchange(port, data))
            if got not in (want if isinstance(want, tuple) else (want,)):
                fail(f"{name}: want {want}, got {got}")
            if not d.alive():
                fail(f"{name}: daemon died: {d.stderr()}")
        print("ok: oversized and unwanted requests refused")

        # Slowloris: one header byte a second.
        slow = socket.create_connection(("127.0.0.1", port), timeout=5)
        slow.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        start = time.monotonic()
        cut_after = None
        served_meanwhile = 0
        while time.monotonic() - start < 15:
            time.sleep(1)
            if get(port) == 200:
                served_meanwhile += 1
            try:
                slow.sendall(b"X")
                slow.setblocking(False)
                try:
                    if slow.recv(1) == b"":
                        raise ConnectionResetError
                except BlockingIOError:
                    pass
                finally:
                    slow.setblocking(True)
            except (BrokenPipeError, ConnectionResetError, OSError):
                cut_after = time.monotonic() - start
                break
        slow.close()
        if cut_after is None:
            fail("a client sending one header byte a second was not disconnected in 15 s")
        if cut_after > 3 + 4:
            fail(f"slowloris cut only after {cut_after:.1f} s (connection_timeout 3s)")
        if served_meanwhile < 2:
            fail(f"only {served_meanwhile} other requests served while the slow client was open")
        print(f"ok: slowloris cut after {cut_after:.1f} s; {served_meanwhile} scrapes served "
              f"meanwhile")

        # max_connections = 8: hold 40 connections open at once. libmicrohttpd stops accepting
        # at the hard limit (8 + 64); idle ones beyond 8 are evicted; the rest wait in the
        # kernel's accept queue. The daemon's own socket count shows the bound.
        before = sockets_of(d.proc.pid)
        held = []
        for _ in range(40):
            try:
                held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            except OSError:
                pass
        time.sleep(0.5)
        if not d.alive():
            fail(f"daemon died under 40 connections: {d.stderr()}")
        accepted = sockets_of(d.proc.pid) - before
        if accepted > 8 + 64:
            fail(f"max_connections 8 (hard limit 72) but the daemon holds {accepted} client "
                 f"sockets")
        for s in held:
            s.close()
        deadline = time.monotonic() + 10
        status = None
        while time.monotonic() < deadline:
            try:
                status = get(port, timeout=2)
                if status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        if status != 200:
            fail(f"no successful request after the connection flood (last {status})")
        # Held open without sending: the idle/slow-client timeout frees the slots by itself.
        held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(8)]
        time.sleep(3 + 2)
        status = get(port, timeout=5)
        for s in held:
            s.close()
        if status != 200:
            fail(f"8 silent connections kept the server full past connection_timeout: {status}")
        print(f"ok: 40 connections against max_connections 8: {accepted} accepted at once, "
              f"daemon up, served afterwards")


if __name__ == "__main__":
    main()
