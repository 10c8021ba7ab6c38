#!/usr/bin/env python3
"""iodriftctl against a hostile service: what the service sends is printed with its control
characters escaped.

A fake org.iodrift.Monitor1 on a private bus (tests/lib/iodrift_test/dbus_service.py) answers
ListProbes, Explain, ExplainFields, Boots, Reload and RunProbe (an error) with text full of terminal escape codes:
clear screen (ESC [2J), set window title (ESC ] 0; … BEL), a C1 CSI (U+009B), DEL, carriage
return and backspace. For `list`, `explain`, `boots` (text and --json), `reload` and `run`, iodriftctl's output (stdout and
stderr) must hold no control character but newline and tab, no DEL and no C1 control — each is
shown as \\xNN or \\u00NN — and `list --json` must still give back the exact strings.
Before the fix iodriftctl printed them raw: the service could clear or retitle the terminal.
"""
import json
import os
import re
import subprocess

from iodrift_test import dbus
from iodrift_test.daemon import ctl_binary
from iodrift_test.dbus_service import Service
from iodrift_test.skip import fail, need_tools

need_tools("dbus-daemon")

NAME = "evil\x1b]0;pwned\x07"
KIND = "cached\r\x08"
TARGET = "/t\x1b[2J\x1b[H\u009b31m\x7f"
EXPLAIN = "Verdict: fine\x1b[31m red \u009b31m c1 \x7f del\rover\n2nd line\twith tab\n"
PROBLEM = "a.yaml:1:1: x\x1b[8m hidden \x1b[0m"
ERROR = "boom\x1b[2J\x1b[3J"

# Any control character but \n and \t, DEL, or a C1 control in UTF-8.
RAW = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


def ctl(address, *args):
    return subprocess.run([ctl_binary(), "--bus", address, *args], capture_output=True,
                          timeout=60)


def check(what, res, want_escaped):
    for stream, data in (("stdout", res.stdout), ("stderr", res.stderr)):
        m = RAW.search(data)
        if m:
            fail(f"iodriftctl {what}: raw control byte {m.group(0)!r} in {stream}: {data!r}")
    both = res.stdout + res.stderr
    for escaped in want_escaped:
        if escaped.encode() not in both:
            fail(f"iodriftctl {what}: {escaped!r} not in its output: {both!r}")


with dbus.Bus() as bus:
    svc = Service(bus.address)
    svc.request_name(dbus.NAME)
    svc.answer({
        "ListProbes": ("a(sss)", [(NAME, KIND, TARGET), ("plain", "memory", "")]),
        "Explain": ("sa{sd}", EXPLAIN, {"ratio\x1b[1m": 0.5}),
        "ExplainFields": ("a{sv}", {"cause": ("s", "device\x1b[2J"),
                                    "verdict_text": ("s", EXPLAIN.split("\n")[0]),
                                    "text": ("s", EXPLAIN),
                                    "figures": ("a{sd}", {"ratio\x1b[1m": 0.5})}),
        "Reload": ("as", [PROBLEM, "second\x1b[2K"]),
        "Boots": ("ss", "boots\x1b[2J text\x9b", '{"name":"x\x1b]0;t\x07","boots":[]}\n'),
        "RunProbe": ("!error", "org.iodrift.Error.Failed", ERROR),
    })
    try:
        res = ctl(bus.address, "list")
        if res.returncode != 0:
            fail(f"iodriftctl list: exit {res.returncode} {res.stderr!r}")
        check("list", res, [r"evil\x1b]0;pwned\x07", r"cached\x0d\x08",
                            r"/t\x1b[2J\x1b[H\u009b31m\x7f"])
        # Columns still line up: the escaped cells are padded as they are shown.
        lines = res.stdout.decode().splitlines()
        if len(lines) != 3 or lines[1].index("cached") != lines[0].index("KIND"):
            fail(f"iodriftctl list: columns out of line: {lines}")

        res = ctl(bus.address, "list", "--json")
        if RAW.search(res.stdout):
            fail(f"iodriftctl list --json: raw control byte in {res.stdout!r}")
        got = json.loads(res.stdout)
        if got[0] != {"name": NAME, "kind": KIND, "target": TARGET}:
            fail(f"iodriftctl list --json changed the strings: {got[0]!r}")

        res = ctl(bus.address, "explain", "x")
        check("explain", res, [r"fine\x1b[31m red \u009b31m c1 \x7f del\x0dover",
                               "2nd line\twith tab\n"])

        # The cause is read from ExplainFields' `cause` field, never from the text (which says
        # "fine" here); in JSON it keeps its exact characters.
        res = ctl(bus.address, "explain", "x", "--json")
        if RAW.search(res.stdout):
            fail(f"iodriftctl explain --json: raw control byte in {res.stdout!r}")
        got = json.loads(res.stdout)
        if got.get("cause") != "device\x1b[2J" or got.get("verdict") != got.get("cause"):
            fail(f"iodriftctl explain --json: cause {got.get('cause')!r}, want the field's "
                 f"'device\\x1b[2J': {res.stdout!r}")

        res = ctl(bus.address, "boots", "x")
        check("boots", res, [r"boots\x1b[2J text\u009b"])
        res = ctl(bus.address, "boots", "x", "--json")
        check("boots --json", res, [r'{"name":"x\x1b]0;t\x07","boots":[]}'])

        res = ctl(bus.address, "reload")
        if res.returncode != 1:
            fail(f"iodriftctl reload: exit {res.returncode}, want 1 (problems)")
        check("reload", res, [r"x\x1b[8m hidden \x1b[0m", r"second\x1b[2K"])

        res = ctl(bus.address, "run", "x")
        if res.returncode != 1:
            fail(f"iodriftctl run: exit {res.returncode}, want 1 (error reply)")
        check("run", res, [r"boom\x1b[2J\x1b[3J"])
    finally:
        svc.close()

print("ok: iodriftctl escapes what a hostile service sends (list, explain, boots, reload, run)")
