#!/usr/bin/env python3
"""Basic auth under a wrong-password flood, on the real iodriftd.

- 8 threads send wrong passwords as fast as they can for 6 s from 127.0.0.1, while a legitimate
  scraper (right password, verified once and then cached) scrapes from the same address:
  * the flood gets 429 once over its failure budget (10, then 1 a second): the number of 401s
    (each one a bcrypt) stays within that budget plus slack — before the fix every request
    ran bcrypt (~16 a second at cost 10) and none got 429;
  * every legitimate scrape succeeds (200), and its p50 stays well under the cost of bcrypt
    queues (< 300 ms; judged only when the machine is not overloaded);
- after the flood, a new wrong password is still 429 (the budget refills at 1 a second);
- a password longer than bcrypt's 72 bytes is refused even though its first 72 bytes are the
  configured password (bcrypt ignores the rest); the 72-byte password itself works.
Needs a bcrypt generator (python crypt or htpasswd); else skipped.
"""
import base64
import os
import threading
import time
import urllib.error
import urllib.request

from iodrift_test.daemon import ConfDaemon
from iodrift_test.skip import fail
from iodrift_test.web import bcrypt_hash


PASSWORD = "s3cret-scraper"
LONG = "L" * 72  # exactly bcrypt's limit
FLOOD_S = 6.0


def request(port, user, password, timeout=10):
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                 headers={"Authorization": f"Basic {token}"})
    start = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        status = e.code
    except OSError:
        status = 0
    return status, time.monotonic() - start


def main():
    config = (f"http:\n  basic_auth_users:\n    prometheus: {bcrypt_hash(PASSWORD)}\n"
              f"    long: {bcrypt_hash(LONG, cost=4)}\n")
    with ConfDaemon(config) as d:
        port = d.port
        status, _ = request(port, "prometheus", PASSWORD)
        if status != 200:
            fail(f"right password: want 200, got {status}")

        counts = {}
        lock = threading.Lock()
        stop = threading.Event()

        def flood(i):
            n = 0
            while not stop.is_set():
                status, _ = request(port, "prometheus", f"wrong-{i}-{n}")
                n += 1
                with lock:
                    counts[status] = counts.get(status, 0) + 1

        threads = [threading.Thread(target=flood, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        legit = []
        start = time.monotonic()
        while time.monotonic() - start < FLOOD_S:
            legit.append(request(port, "prometheus", PASSWORD))
            time.sleep(0.05)
        elapsed = time.monotonic() - start
        stop.set()
        for t in threads:
            t.join()
        times = sorted(t for _, t in legit)
        p50 = times[len(times) // 2]
        bad = [s for s, _ in legit if s != 200]
        print(f"flood {elapsed:.1f} s: answers {counts}; legitimate scrapes {len(legit)}, "
              f"failed {len(bad)}, p50 {p50 * 1000:.0f} ms, max {times[-1] * 1000:.0f} ms")
        if bad:
            fail(f"legitimate scrapes failed during the flood: {bad[:10]}")
        if counts.get(429, 0) == 0:
            fail(f"no 429 for a client flooding wrong passwords: {counts}")
        budget = 10 + elapsed * 1 + 10  # burst + refill + slack for timing
        if counts.get(401, 0) > budget:
            fail(f"{counts.get(401)} wrong passwords checked (401) in {elapsed:.1f} s, over "
                 f"the failure budget {budget:.0f}")
        if p50 > 0.3 and os.getloadavg()[0] <= 4 * (os.cpu_count() or 1):
            fail(f"legitimate scrape p50 {p50 * 1000:.0f} ms during the flood")
        status, _ = request(port, "prometheus", "yet-another-wrong")
        if status != 429:
            fail(f"wrong password right after the flood: want 429, got {status}")

        # bcrypt's 72-byte limit (a fresh client budget is not needed: user `long` is checked
        # by bcrypt only after the flood's budget refills).
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status, _ = request(port, "long", LONG)
            if status != 429:
                break
            time.sleep(1)
        if status != 200:
            fail(f"the 72-byte password: want 200, got {status}")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status, _ = request(port, "long", LONG + "anything")
            if status != 429:
                break
            time.sleep(1)
        if status != 401:
            fail(f"a 73+-byte password whose first 72 bytes match: want 401, got {status}")
        print("ok: passwords over 72 bytes refused")
        if not d.alive():
            fail(f"daemon died: {d.stderr()}")


if __name__ == "__main__":
    main()
