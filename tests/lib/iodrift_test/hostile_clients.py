#!/usr/bin/env python3
"""Hostile HTTP(S) clients against iodriftd, and the latency of legitimate scrapes meanwhile.

Keeps N hostile connections of one kind open (every connection the server closes is reopened at
once, as an attacker would) while a legitimate client scrapes /metrics on fresh connections, and
prints the scrapes' p50/p99/max latency and failures:

  slowloris  request head sent one byte a second, never finished
  slowbody   POST head with Content-Length: 100000, then the body one byte a second
  nobody     POST head with Content-Length: 100, then nothing
  expect     GET head with Content-Length and `Expect: 100-continue`, then nothing
  handshake  (TLS) TCP connection with a partial ClientHello, one byte a second, never finished

Over TLS (--tls CAFILE) the HTTP kinds run inside a completed TLS handshake.

    PYTHONPATH=tests/lib python3 -m iodrift_test.hostile_clients --port 9723 --kind slowloris --hostile 190 --seconds 20
    PYTHONPATH=tests/lib python3 -m iodrift_test.hostile_clients --port 9723 --tls ca.crt --kind handshake

Also a module: tests/security/dos_test.py runs measure() against a daemon it starts.
Python stdlib only.
"""
import argparse
import selectors
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request

KINDS = ("slowloris", "slowbody", "nobody", "expect", "handshake")

_HEAD = b"Host: localhost\r\nUser-Agent: hostile\r\n"


def _payload(kind):
    """(bytes sent at once after connecting, bytes then sent one per `drip` seconds)."""
    if kind == "slowloris":
        return b"", b"GET /metrics HTTP/1.1\r\n" + _HEAD + b"X-Slow: " + b"a" * 100000
    if kind == "slowbody":
        return (b"POST /metrics HTTP/1.1\r\n" + _HEAD + b"Content-Length: 100000\r\n\r\n",
                b"a" * 100000)
    if kind == "nobody":
        return b"POST /metrics HTTP/1.1\r\n" + _HEAD + b"Content-Length: 100\r\n\r\n", b""
    if kind == "expect":
        return (b"GET /metrics HTTP/1.1\r\n" + _HEAD +
                b"Content-Length: 100000\r\nExpect: 100-continue\r\n\r\n", b"")
    if kind == "handshake":
        # A TLS record header announcing a 512-byte ClientHello, then its bytes one a second.
        return b"", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 600
    raise ValueError(f"unknown kind {kind}")


class _Conn:
    def __init__(self, sock, now):
        self.sock = sock
        self.state = "connecting"  # connecting → (tls) → sending
        self.opened = now
        self.next_drip = now
        self.offset = 0
        self.sent_head = False


class Hostile(threading.Thread):
    """Keeps `count` hostile connections of `kind` open until stop()."""

    def __init__(self, host, port, kind, count, tls=False, drip=1.0, max_opens_per_s=2000):
        super().__init__(daemon=True)
        self.host, self.port, self.kind, self.count = host, port, kind, count
        self.tls = tls and kind != "handshake"
        self.drip = drip
        self.max_opens_per_s = max_opens_per_s
        self.head, self.slow = _payload(kind)
        self._halt = threading.Event()
        self.opens = 0
        self.closed_by_server = 0
        self.answers = 0  # connections on which the server sent bytes (413, 100 Continue, …)
        self.open_samples = []
        self._ctx = None
        if self.tls:
            self._ctx = ssl.create_default_context()
            self._ctx.check_hostname = False
            self._ctx.verify_mode = ssl.CERT_NONE

    def stop(self):
        self._halt.set()
        self.join(10)

    def open_now(self):
        return self._open

    def _connect(self, sel, now):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.connect_ex((self.host, self.port))
        c = _Conn(s, now)
        sel.register(s, selectors.EVENT_WRITE, c)
        self.opens += 1
        return c

    def _close(self, sel, c, by_server):
        try:
            sel.unregister(c.sock)
        except (KeyError, ValueError):
            pass
        try:
            c.sock.close()
        except OSError:
            pass
        if by_server:
            self.closed_by_server += 1

    def _send(self, c, data):
        try:
            return c.sock.send(data)
        except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
            return 0

    def run(self):
        sel = selectors.DefaultSelector()
        conns = set()
        budget, budget_t = 0.0, time.monotonic()
        self._open = 0
        while not self._halt.is_set():
            now = time.monotonic()
            budget = min(self.max_opens_per_s, budget + (now - budget_t) * self.max_opens_per_s)
            budget_t = now
            while len(conns) < self.count and budget >= 1:
                conns.add(self._connect(sel, now))
                budget -= 1
            for key, events in sel.select(timeout=0.05):
                c = key.data
                try:
                    if c.state == "connecting":
                        err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                        if err:
                            raise OSError(err, "connect")
                        if self.tls:
                            c.sock = self._ctx.wrap_socket(c.sock, do_handshake_on_connect=False,
                                                           server_hostname="localhost")
                            sel.modify(key.fileobj, selectors.EVENT_READ, c)
                            c.state = "tls"
                        else:
                            sel.modify(key.fileobj, selectors.EVENT_READ, c)
                            c.state = "sending"
                    if c.state == "tls":
                        try:
                            c.sock.do_handshake()
                            c.state = "sending"
                        except ssl.SSLWantReadError:
                            continue
                        except ssl.SSLWantWriteError:
                            continue
                    if events & selectors.EVENT_READ and c.state == "sending":
                        try:
                            data = c.sock.recv(65536)
                        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                            data = None
                        if data == b"":
                            raise ConnectionResetError("closed")
                        if data:
                            self.answers += 1
                            raise ConnectionResetError("answered")  # reopen: stay hostile
                except (OSError, ssl.SSLError):
                    conns.discard(c)
                    self._close(sel, c, by_server=True)
            now = time.monotonic()
            for c in list(conns):
                if c.state != "sending":
                    continue
                try:
                    if not c.sent_head:
                        if self.head:
                            self._send(c, self.head)
                        c.sent_head = True
                    if now >= c.next_drip and c.offset < len(self.slow):
                        c.offset += self._send(c, self.slow[c.offset:c.offset + 1])
                        c.next_drip = now + self.drip
                except (OSError, ssl.SSLError):
                    conns.discard(c)
                    self._close(sel, c, by_server=True)
            self._open = sum(1 for c in conns if c.state != "connecting")
            self.open_samples.append(self._open)
        for c in list(conns):
            self._close(sel, c, by_server=False)
        sel.close()


def scrape_once(url, cafile=None, timeout=5.0):
    """(ok, seconds) of one GET on a fresh connection."""
    ctx = None
    if cafile:
        ctx = ssl.create_default_context(cafile=cafile)
    start = time.monotonic()
    try:
        req = urllib.request.Request(url, headers={"Connection": "close"})
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as resp:
            resp.read()
            ok = resp.status == 200
    except (urllib.error.URLError, OSError, ssl.SSLError):
        ok = False
    return ok, time.monotonic() - start


def percentile(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    k = min(len(s) - 1, max(0, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def measure(host, port, kind, hostile=190, seconds=20.0, cafile=None, interval=0.1,
            warmup=3.0, path="/metrics", scrape_timeout=5.0):
    """Runs `hostile` connections of `kind` and legitimate scrapes for `seconds` after `warmup`.

    Returns a dict: kind, tls, hostile (target), hostile_open (median open while measuring),
    opens, closed_by_server, scrapes, failures, p50, p99, max (seconds).
    """
    scheme = "https" if cafile else "http"
    url = f"{scheme}://{host}:{port}{path}" if not cafile else f"https://localhost:{port}{path}"
    attacker = Hostile(host, port, kind, hostile, tls=bool(cafile))
    attacker.start()
    time.sleep(warmup)
    mark = len(attacker.open_samples)
    latencies, failures = [], 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ok, took = scrape_once(url, cafile, scrape_timeout)
        latencies.append(took)
        failures += 0 if ok else 1
        time.sleep(interval)
    samples = sorted(attacker.open_samples[mark:]) or [0]
    attacker.stop()
    return {"kind": kind, "tls": bool(cafile), "hostile": hostile,
            "hostile_open": samples[len(samples) // 2], "opens": attacker.opens,
            "closed_by_server": attacker.closed_by_server, "scrapes": len(latencies),
            "failures": failures, "p50": percentile(latencies, 50),
            "p99": percentile(latencies, 99), "max": max(latencies) if latencies else 0.0}


def describe(r):
    return (f"{r['kind']:<10} {'TLS' if r['tls'] else 'plain':<5} hostile {r['hostile']} "
            f"(open {r['hostile_open']}, {r['opens']} opened, {r['closed_by_server']} cut by "
            f"the server): {r['scrapes']} scrapes, {r['failures']} failed, "
            f"p50 {r['p50'] * 1000:.0f} ms, p99 {r['p99'] * 1000:.0f} ms, "
            f"max {r['max'] * 1000:.0f} ms")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--kind", choices=KINDS + ("all",), default="all")
    ap.add_argument("--hostile", type=int, default=190)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--tls", metavar="CAFILE", help="the server's certificate: scrape over HTTPS")
    args = ap.parse_args()
    kinds = [k for k in KINDS if args.tls or k != "handshake"] if args.kind == "all" \
        else [args.kind]
    for kind in kinds:
        print(describe(measure(args.host, args.port, kind, args.hostile, args.seconds,
                               args.tls)), flush=True)


if __name__ == "__main__":
    main()
