"""The cause zoo's driver: one real iodriftd per case, a baseline formed on a healthy machine, a
cause induced, N consecutive runs under it read one by one (verdict, ratio, time parts), the
cause removed. Cases live in cases.py; causes_test.py runs them and prints the matrix.

    zoo.run_case(case)  ->  Outcome(case, runs=[Run...], skipped=None | "why, with figures")

A run's verdict is read from GET /api/v1/probes right after the run: the probe's top-level
"verdict" describes its last run. A buffered run whose direct twin has no run from the same
moment is undetermined until the daemon's follow-up twin run lands (the twin rule): such a
verdict is read again until it settles or the probe's next run starts.
"""
import contextlib
import json
import os
import signal
import time

from iodrift_test.config import write_config
from iodrift_test.daemon import Daemon
from iodrift_test.skip import fail

RUNS = int(os.environ.get("IODRIFT_CAUSES_RUNS", "3"))
SLOW = 0.9  # the verdict's own kSlowdownRatio: a run at or above it is "no slowdown"
SUSTAINED = 3  # the verdict's kSustainedRuns: slow runs in a row before a cause is named
TWIN_PENDING = "no run from the same moment"
# This machine's own page-cache drift (docs/probes.md, "Why buffered next to direct": on a VM whose free memory goes back to the
# host, a page-cache read slows with the state of free memory alone, the kernel CPU of allocating
# pages carrying the added time). A page-cache probe (buffered, cached) of the healthy case may
# meet it with nothing induced; such a run naming one of these causes is a co-present cause, shown
# in the matrix as such, not a wrong one; so is `device` (DEVICE_DRIFT). Any
# other cause named in the healthy case is wrong.
MACHINE_DRIFT = {"page_allocation", "hypervisor_reclaim"}
PAGE_CACHE_KINDS = {"buffered", "cached"}
# The healthy case's device is a loop device over a file in the VM's memory: a direct read of it
# measures the host's memory path, which drifts on its own. Measured in a whole-suite run: the
# healthy direct probe at 66 % and 69 % of a 4,681 MB/s baseline three runs in a row, its
# requests' off-CPU wait doubled (0.104 -> 0.20-0.21 s/GiB) at 0 % CPU pressure, named `device`.
# The device did slow; such a run is the machine's own drift too, not a wrong cause. The same
# device seen by the buffered probe (at 89 %, device busy 0.128 -> 0.256 s/GiB) likewise.
DEVICE_DRIFT = {"device"}
# Probes at nice 0 (the default is 10): on a machine that other work keeps busy, nice-10 readers
# wait for a CPU most of their time, and that background contention swamps the induced cause.
SCHEDULER = "scheduler:\n  nice: 0\n"
NO_SLOWDOWN = "no slowdown"  # matrix column: the run was not slow (ratio >= SLOW)


class Run:
    def __init__(self, probe, doc):
        self.probe = probe
        self.verdict = doc.get("verdict", "undetermined")
        self.text = doc.get("verdict_text", "")
        self.ratio = doc.get("ratio")
        self.start = doc.get("start_time_seconds")
        self.kind = doc.get("kind")
        self.evidence = {k: v for k, v in doc.items() if k not in ("history", "explain")}
        self.lasted = False  # set by mark_lasting()

    def device_wait(self):
        """Seconds the run's readers waited off-CPU for the device (its time parts), or 0."""
        parts = self.evidence.get("time_seconds") or {}
        return parts.get("device_wait") or 0.0

    def column(self):
        """Where the run goes in the matrix: the verdict, or NO_SLOWDOWN for an undetermined
        run that was not slow."""
        if self.verdict == "undetermined" and self.ratio is not None and self.ratio >= SLOW:
            return NO_SLOWDOWN
        return self.verdict


BACKGROUND_CPU = 0.10  # machine-wide CPU pressure (PSI some) above which others contend for CPU
# Others' I/O stall (machine-wide PSI io some, less the probes' own device wait) above which other
# work contends for the disk under the loop devices (their backing files share the machine's disk).
BACKGROUND_IO = 0.10
DEVICE_CAUSES = {"device", "device_busy"}


def pressure_total(resource):
    """Microseconds some task stalled on `resource` (PSI "some" total: cpu, io), or None."""
    try:
        with open(f"/proc/pressure/{resource}") as f:
            for line in f:
                if line.startswith("some"):
                    return int(line.split("total=")[1])
    except (OSError, IndexError, ValueError):
        pass
    return None


def mark_lasting(runs):
    """Marks each of one probe's runs (in order, the warm-up runs first) whose slowdown lasted:
    it and the SUSTAINED - 1 runs before it were all below SLOW, as the verdict requires before
    it names a cause (verdict.h kSustainedRuns)."""
    for i, r in enumerate(runs):
        window = runs[max(0, i - SUSTAINED + 1):i + 1]
        r.lasted = len(window) == SUSTAINED and all(
            x.ratio is not None and x.ratio < SLOW for x in window)


# A case whose induced slowdown lasted must be named: it fails when more than this share of its
# lasting runs were undetermined (a useless answer). Not every run: on a machine others load, a
# few runs of a page-cache probe fall to the background (the matrices in docs/causes.md).
UNNAMED_MAX = 0.5


class Outcome:
    def __init__(self, case, runs=(), skipped=None, note="", cpu_pressure=None,
                 io_pressure=None):
        self.case, self.runs, self.skipped, self.note = case, list(runs), skipped, note
        self.cpu_pressure = cpu_pressure  # share of the induced runs' time with CPU pressure
        self.io_pressure = io_pressure  # others' io stall: share of the induced runs' time

    def background_cpu(self):
        return (self.cpu_pressure or 0) >= BACKGROUND_CPU

    def background_io(self):
        return (self.io_pressure or 0) >= BACKGROUND_IO

    def accepted(self):
        """Verdicts that are not wrong for this case. On a machine that others load (CPU
        pressure >= BACKGROUND_CPU while the case ran) cpu_contention is not wrong either: the
        runs did wait for a CPU, and so did the loop devices' worker threads (device, device_busy);
        with others' io stall >= BACKGROUND_IO, device and device_busy are not wrong either: the
        disk under the loop devices served others too (co-present causes, marked in the matrix).
        Never one device cause in place of the other: in a case that induces device or
        device_busy, the other one is wrong whatever the load (others' share of the device's
        bytes tells them apart, and background load does not move it)."""
        ok = {"undetermined", self.case.expected, *self.case.also}
        co_present_device = set() if self.case.expected in DEVICE_CAUSES else DEVICE_CAUSES
        if self.background_cpu():
            # Also device: a loop device is served by a kernel worker thread that needs a CPU,
            # so on a CPU-loaded machine the loop device itself is slower (measured: healthy
            # runs at 42-81 % of baseline whose block I/O wait doubled, at 93-95 % CPU pressure).
            ok |= {"cpu_contention"} | co_present_device
        if self.background_io():
            ok |= co_present_device
        return ok

    def machine_drift(self, run):
        """A healthy-case run that met the machine's own drift: a page-cache run its page-cache
        drift, any run its memory-backed device's."""
        if self.case.expected is not None:
            return False
        return ((run.verdict in MACHINE_DRIFT and run.kind in PAGE_CACHE_KINDS)
                or run.verdict in DEVICE_DRIFT)

    def wrong(self):
        """Runs that name a cause other than the induced one (healthy: any cause but the
        machine's own drift: page-cache drift on a page-cache probe, `device` on its
        memory-backed device)."""
        return [r for r in self.runs
                if r.verdict not in self.accepted() and not self.machine_drift(r)]

    def correct(self):
        return sum(r.verdict == self.case.expected or r.verdict in self.case.also
                   for r in self.runs)

    def lasting(self):
        """The induced runs whose slowdown lasted (mark_lasting)."""
        return [r for r in self.runs if r.lasted]

    def unnamed(self):
        """Lasting runs left undetermined, when they are more than UNNAMED_MAX of the lasting
        runs of a case that induces a cause; else []."""
        if self.skipped or not self.case.expected or not self.case.min_slowdown:
            return []
        lasting = self.lasting()
        undetermined = [r for r in lasting if r.verdict == "undetermined"]
        return undetermined if len(undetermined) > UNNAMED_MAX * len(lasting) else []


class Case:
    """name: the row; expected: the cause it induces (None: healthy); setup(scratch) -> dict
    with "probes" (config dicts), optional "daemon_args"; induce(ctx) is a context manager
    around the induced runs; ctx is a dict (scratch, daemon, setup's dict)."""

    def __init__(self, name, expected, setup, induce, min_slowdown=True, before=None, also=()):
        self.name, self.expected, self.setup, self.induce = name, expected, setup, induce
        self.min_slowdown = min_slowdown
        # Causes that name this case as rightly, more or less specifically (page_allocation and
        # hypervisor_reclaim: the same slow page allocation, the latter when the step itself saw
        # memory reported to the host).
        self.also = tuple(also)
        self.before = before  # optional callable(ctx) after the daemon starts (cgroup, taskset)


def api(d):
    status, _, body = d.get("/api/v1/probes?runs=0", timeout=30)
    if status != 200:
        fail(f"/api/v1/probes answered {status}")
    return {p["name"]: p for p in json.loads(body)["probes"]}


def wait_until(what, predicate, timeout, interval=0.25):
    """Like wait.wait_for but returns None on timeout (a case that cannot produce its effect is
    skipped with figures, not failed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return None


def wait_baselines(d, names, timeout=180):
    def ready():
        probes = api(d)
        return probes if all(probes.get(n, {}).get("baseline") for n in names) else None
    probes = wait_until("baselines", ready, timeout)
    if probes is None:
        fail(f"no baseline for {names} in {timeout} s: {json.dumps(api(d))[:2000]}")
    return {n: probes[n]["baseline"] for n in names}


def collect(d, names, runs, since, timeout):
    """The first `runs` runs of each probe that started at or after `since`, each with the
    verdict it settled on. Returns {name: [Run]} (fewer runs when the timeout passed)."""
    got = {n: [] for n in names}
    pending = {}  # name -> Run whose verdict waits for the twin
    deadline = time.monotonic() + timeout
    seen = {}
    while time.monotonic() < deadline and any(len(got[n]) < runs for n in names):
        probes = api(d)
        for n in names:
            doc = probes.get(n)
            if not doc or doc.get("start_time_seconds") is None:
                continue
            start = doc["start_time_seconds"]
            if start < since:
                continue
            p = pending.get(n)
            if p is not None and p.start != start:
                got[n].append(p)  # the next run started before the twin settled it
                del pending[n]
            if seen.get(n) == start and n not in pending:
                continue
            seen[n] = start
            run = Run(n, doc)
            if len(got[n]) >= runs:
                continue
            if TWIN_PENDING in run.text:
                pending[n] = run
            else:
                pending.pop(n, None)
                got[n].append(run)
        time.sleep(0.2)
    for n, p in pending.items():
        if len(got[n]) < runs:
            got[n].append(p)
    return got


def run_case(case, scratch):
    setup = case.setup(scratch)
    if isinstance(setup, str):
        return Outcome(case, skipped=setup)
    probes = setup["probes"]
    names = [p["name"] for p in probes]

    def write(probes):
        return write_config(scratch.path("iodrift.yaml"), probes,
                            state_dir=scratch.path("state"),
                            extra=SCHEDULER + setup.get("extra", ""))
    config = write(probes)
    stack = setup.get("stack") or contextlib.ExitStack()
    ctx = dict(setup, scratch=scratch, stack=stack)
    with stack, Daemon("--config", config) as d:  # the daemon stops before the stack unwinds
        ctx["daemon"] = d

        def reload(new_probes):
            """Rewrites the config with new_probes and waits until the daemon applied it."""
            applied = d.stderr().count("reload: applied")
            write(new_probes)
            d.proc.send_signal(signal.SIGHUP)
            if wait_until("the reload", lambda: d.stderr().count("reload: applied") > applied,
                          30) is None:
                fail(f"{case.name}: the daemon did not apply the reload in 30 s")
        ctx["probes"], ctx["reload"] = probes, reload
        if case.before:
            case.before(ctx)
        baselines = wait_baselines(d, names)
        ctx["baselines"] = baselines
        with case.induce(ctx) as why_not:
            if why_not:
                return Outcome(case, skipped=why_not)
            since = time.time()
            psi0, io0, t0 = pressure_total("cpu"), pressure_total("io"), time.monotonic()
            # The verdict names a cause once a slowdown lasted SUSTAINED runs (verdict.h
            # kSustainedRuns): the first SUSTAINED - 1 runs under the cause are left out.
            warmup = SUSTAINED - 1
            got = collect(d, names, RUNS + warmup, since, timeout=60 + 20 * (RUNS + warmup))
            for n in names:
                mark_lasting(got[n])
            got = {n: got[n][warmup:] for n in names}
            psi1, io1, t1 = pressure_total("cpu"), pressure_total("io"), time.monotonic()
    pressure = (psi1 - psi0) / 1e6 / (t1 - t0) if psi0 is not None and psi1 is not None else None
    runs = [r for n in names for r in got[n]]
    io_pressure = None
    if io0 is not None and io1 is not None:
        # Less the probes' own device wait (an upper bound of their part in "some"): what is left
        # is others' io stall. collect() may read a run that started just before t0: bounded by 0.
        own = sum(r.device_wait() for r in runs)
        io_pressure = max(0.0, ((io1 - io0) / 1e6 - own) / (t1 - t0))
    if any(len(got[n]) < RUNS for n in names):
        fail(f"{case.name}: fewer than {RUNS} runs per probe under the induced cause: "
             f"{ {n: len(got[n]) for n in names} }")
    ratios = [r.ratio for r in runs if r.ratio is not None]
    note = f"baselines {', '.join(f'{n} {b / 1e6:.0f} MB/s' for n, b in baselines.items())}"
    if pressure is not None:
        note += f"; CPU pressure (PSI some) {100 * pressure:.0f} % of the induced runs' time"
    if io_pressure is not None:
        note += f"; others' io stall {100 * io_pressure:.0f} %"
    if case.expected and case.min_slowdown:
        slow = [r for r in runs if r.ratio is not None and r.ratio < SLOW]
        if not slow:
            return Outcome(case, runs, skipped=(
                f"the induced condition did not slow the probes on this machine: ratios "
                f"{', '.join(f'{x:.2f}' for x in ratios)} ({note})"), note=note,
                cpu_pressure=pressure, io_pressure=io_pressure)
    return Outcome(case, runs, note=note, cpu_pressure=pressure, io_pressure=io_pressure)


def matrix(outcomes):
    """The confusion matrix as text: one row per case, one column per verdict seen."""
    columns = []
    for o in outcomes:
        for r in o.runs:
            if r.column() not in columns:
                columns.append(r.column())
    order = ["device", "device_busy", "memory_reclaim", "memory_compaction", "page_allocation",
             "hypervisor_reclaim", "cpu_contention", "remote_filesystem",
             "undetermined", NO_SLOWDOWN]
    columns = sorted(columns, key=lambda c: order.index(c) if c in order else len(order))
    head = ["case (induced)"] + columns + ["named", "result"]
    rows = []
    for o in outcomes:
        counts = {c: sum(r.column() == c for r in o.runs) for c in columns}
        expected = o.case.expected or "(none)"
        if o.skipped:
            result = "skipped"
        elif o.wrong():
            result = "WRONG CAUSE"
        elif o.unnamed():
            result = f"UNNAMED ({len(o.unnamed())} of {len(o.lasting())} lasting runs undetermined)"
        elif o.case.expected is None:
            result = "ok"
        else:
            result = "ok" if o.correct() * 10 >= 9 * len(o.runs) else "below 9/10"
        if o.background_cpu() and not o.skipped and o.case.expected != "cpu_contention":
            result += f" (CPU pressure {100 * o.cpu_pressure:.0f} %)"
        if o.background_io() and not o.skipped and o.case.expected not in DEVICE_CAUSES:
            result += f" (others' io stall {100 * o.io_pressure:.0f} %)"
        drift = sum(o.machine_drift(r) for r in o.runs)
        if drift:
            result += f" ({drift} run(s) met the machine's own drift)"
        named = f"{o.correct()}/{len(o.runs)}" if o.case.expected else "-"
        rows.append([f"{o.case.name} ({expected})"] + [str(counts[c] or ".") for c in columns]
                    + [named, result])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"
    out = [line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in rows]
    return "\n".join(out)
