#!/usr/bin/env python3
"""Three boots compared: the real iodriftd restarted 3 times on one state dir, each time on a
copy of tests/fixtures/proc/local-6.18 with another sys/kernel/random/boot_id and uptime (4000 s:
in 1 h's window [1 h, 2 h); 90000 s: in 1 d's window only, 1 h's long passed; 100 s: none), with one cached probe every 100 ms on a
1 MiB file. After the third start GET /api/v1/boots lists 3 boots for the probe, this boot first,
each past boot with its baseline, last ratio and exactly the marks its uptime reached;
`iodriftctl boots hot` (over a private dbus-daemon, the D-Bus method Boots) prints one line per
boot and `iodriftctl boots nosuch` is a usage error naming the probe; GET / carries the boots
chart with one line per boot. Needs no root; dbus-daemon for the iodriftctl part.
"""
import json
import re
import shutil
import tempfile
import uuid

from iodrift_test import dbus
from iodrift_test.daemon import Daemon
from iodrift_test.fake_boots import FakeBoots
from iodrift_test.skip import fail, need_tools
from iodrift_test.wait import wait_for

need_tools("dbus-daemon")

BOOTS = [(str(uuid.uuid4()), 4000.0, {"1h"}), (str(uuid.uuid4()), 90000.0, {"1d"}),
         (str(uuid.uuid4()), 100.0, set())]
MARKS = ("1h", "1d", "7d", "30d")


def hot_boots(d):
    status, _, body = d.get("/api/v1/boots")
    if status != 200:
        fail(f"/api/v1/boots answered {status}: {body}")
    doc = json.loads(body)
    probes = {p["name"]: p["boots"] for p in doc["probes"]}
    return doc, probes.get("hot", [])


work = tempfile.mkdtemp(prefix="iodrift-boots-")
try:
    fake = FakeBoots(work)
    with dbus.Bus() as bus:
        for i, (boot_id, uptime, _) in enumerate(BOOTS):
            fake.set_boot_id(boot_id)
            fake.set_uptime(uptime)
            with Daemon(*fake.daemon_args("--dbus", bus.address)) as d:
                def this_boot_counted():
                    doc, boots = hot_boots(d)
                    if doc["boot_id"] != boot_id or not boots:
                        return None
                    first = boots[0]
                    return boots if first["current"] and first["last_ratio"] is not None else None

                boots = wait_for(f"boot {i + 1}: a counted run of hot", this_boot_counted, 60,
                                 interval=0.2, detail=lambda: f"{hot_boots(d)}\n{d.stderr()[-2000:]}")
                if len(boots) != i + 1:
                    fail(f"boot {i + 1}: /api/v1/boots lists {len(boots)} boots of hot: {boots}")
                if i + 1 < len(BOOTS):
                    continue
                # The third boot: all three, newest first, each with the marks it reached.
                doc, boots = hot_boots(d)
                if [b["boot_id"] for b in boots] != [b[0] for b in reversed(BOOTS)]:
                    fail(f"boots not newest first: {[b['boot_id'] for b in boots]}")
                for b, (_, _, reached) in zip(boots, reversed(BOOTS)):
                    got = {m for m in MARKS if b[f"ratio_{m}"] is not None}
                    if got != reached or b["baseline"] is None or b["last_ratio"] is None \
                            or b["current"] != (b is boots[0]):
                        fail(f"boot {b['boot_id']}: marks {sorted(got)} (want {sorted(reached)}), "
                             f"baseline, last ratio, current: {b}")
                if doc["max_boots"] != 20 or doc["marks"] != list(MARKS):
                    fail(f"/api/v1/boots: max_boots, marks: {doc}")

                dbus.wait_for_service(bus.address, d)
                res = dbus.ctl(bus.address, "boots", "hot")
                lines = [l for l in res.stdout.splitlines() if re.match(r"  [0-9a-f]{8} ", l)]
                if res.returncode != 0 or [l[2:10] for l in lines] != [b[0][:8] for b in
                                                                       reversed(BOOTS)] \
                        or not lines[0].endswith("(this boot)"):
                    fail(f"iodriftctl boots hot: rc={res.returncode}\n{res.stdout}{res.stderr}")
                # The past boots are settled; this boot's figures move with every run.
                res = dbus.ctl(bus.address, "boots", "hot", "--json")
                got = json.loads(res.stdout) if res.returncode == 0 else {}
                if got.get("name") != "hot" or len(got.get("boots", [])) != 3 \
                        or got["boots"][0]["boot_id"] != boots[0]["boot_id"] \
                        or got["boots"][1:] != boots[1:]:
                    fail(f"iodriftctl boots hot --json: rc={res.returncode}\n{res.stdout}\n"
                         f"want the boots of /api/v1/boots: {boots}")
                status, _, page = d.get("/")
                m = re.search(r'<svg class="chart" id="boots-chart-0".*?</svg>', page, re.S)
                lines = re.findall(r'<g class="series boot-(\d+)"', m.group(0)) if m else []
                if status != 200 or lines != ["0", "1", "2"] or "<th>30d</th>" not in page:
                    fail(f"GET /: boots chart lines {lines} (want one per boot), table columns; "
                         f"{(m.group(0) if m else page)[:3000]}")
                res = dbus.ctl(bus.address, "boots", "nosuch")
                if res.returncode != 2 or "no probe named 'nosuch'" not in res.stderr:
                    fail(f"iodriftctl boots nosuch: rc={res.returncode}\n{res.stdout}{res.stderr}")

    print("ok: 3 boots in /api/v1/boots, iodriftctl boots and the status page's boots chart")
finally:
    shutil.rmtree(work, ignore_errors=True)
