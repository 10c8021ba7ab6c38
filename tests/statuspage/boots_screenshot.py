#!/usr/bin/env python3
"""Makes docs/boots-chart.png: the status page's "Baselines by boot" table and boots chart, as the
real iodriftd renders them after three boots. Not a test (nothing is asserted); run by hand:

    IODRIFTD=build/bin/iodriftd IODRIFT_SOURCE_DIR=. PYTHONPATH=tests/lib \\
      python3 tests/statuspage/boots_screenshot.py docs/boots-chart.png

The boots are faked as statuspage.boots fakes them: a copy of tests/fixtures/proc/local-6.18 whose
boot_id changes between daemon lives and whose uptime is stepped through each life (LIVES), one
cached probe every 100 ms on a 1 MiB file. The ratios are what the probe measured; only the
boot ids and uptimes are made up. The page's section is cut out with the page's own style sheet
and photographed by headless Chromium (1400x420).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid

from iodrift_test.daemon import Daemon
from iodrift_test.fake_boots import FakeBoots
from iodrift_test.wait import wait_for

# Uptimes (s) each life steps through; the last life is the current boot.
LIVES = [[60, 900, 4000, 30000, 90000, 300000, 700000, 2000000, 2700000],
         [60, 900, 4000, 30000, 90000, 300000, 700000],
         [60, 900, 4000, 20000]]


def main(out):
    work = tempfile.mkdtemp(prefix="iodrift-shot-")
    try:
        fake = FakeBoots(work)
        page = ""
        for life in LIVES:
            fake.set_boot_id(str(uuid.uuid4()))
            fake.set_uptime(life[0])
            with Daemon(*fake.daemon_args()) as d:
                for up in life:
                    fake.set_uptime(up)

                    def counted(up=up):
                        _, _, body = d.get("/api/v1/boots")
                        for p in json.loads(body)["probes"]:
                            for b in p["boots"]:
                                if b["current"] and (b["last_uptime_seconds"] or 0) >= up:
                                    return True
                        return None

                    wait_for(f"a counted run at uptime {up}", counted, 60, interval=0.2)
                _, _, page = d.get("/")
        head = page[:page.find("<body")]
        start = page.find("<h2>Baselines by boot")
        end = page.find("<script", start)
        html = os.path.join(work, "boots.html")
        with open(html, "w") as f:
            f.write(head + '<body style="margin:12px">' + page[start:end] + "</body></html>")
        subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", f"--user-data-dir={work}/profile",
                        "--window-size=1400,420", f"--screenshot={os.path.abspath(out)}",
                        "file://" + html], check=True, capture_output=True, timeout=90,
                       env=dict(os.environ, HOME=work))
        print(f"wrote {out}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


main(sys.argv[1] if len(sys.argv) > 1 else "boots-chart.png")
