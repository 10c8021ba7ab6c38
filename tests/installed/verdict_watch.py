"""The verdict of each run of one probe of the installed service, for the checks that induce a
slowdown (installed.cause, installed.reclaim).

Usage: verdict_watch.py PROBE EXPECTED LASTING_RUNS [SECONDS [CO_PRESENT]]
Reads /api/v1/probes (through the shell function `api`, exported by the caller) after each new run
of PROBE (its ok + error count grows) and prints one line per run, with the machine's CPU pressure
(host /proc/pressure/cpu "some", share of the time since the run before). The run in progress
when the slowdown came is not judged (it may have been half slowed). CO_PRESENT (a cause name) is
not a wrong answer in a run during which the machine's CPU pressure was >= BACKGROUND_CPU — the
cause zoo's rule for cpu_contention on a machine others load (tests/causes/zoo.py
Outcome.accepted) — but it does not count as EXPECTED either. Exits
  0  a run named EXPECTED (the verdict names a cause only once the slowdown lasted);
  1  a run named another cause (a wrong answer fails at once);
  2  LASTING_RUNS runs of a lasting slowdown (kSustainedRuns runs in a row below kSlowdownRatio,
     the verdict's rule) went by without EXPECTED;
  3  SECONDS (default 170) went by after the slowdown lasted, before 0, 1 or 2;
  4  SECONDS went by and the slowdown never lasted (the cause did not slow the probe).
"""
import json
import subprocess
import sys
import time

SLOW, SUSTAINED = 0.9, 3  # the verdict's kSlowdownRatio and kSustainedRuns (verdict.h)
BACKGROUND_CPU = 0.10  # tests/causes/zoo.py


def read(probe):
    out = subprocess.run(["bash", "-c", "api"], capture_output=True, text=True).stdout
    for p in json.loads(out or '{"probes": []}')["probes"]:
        if p.get("name") == probe:
            return p
    return None


def cpu_some_us():
    try:
        with open("/proc/pressure/cpu") as f:
            return int(f.readline().split("total=")[1])
    except (OSError, IndexError, ValueError):
        return None


def main():
    probe, expected, lasting_runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    deadline = time.monotonic() + (float(sys.argv[4]) if len(sys.argv) > 4 else 170)
    co_present = sys.argv[5] if len(sys.argv) > 5 else None
    seen, slow_in_row, lasting, lasted = None, 0, 0, False
    at, psi = time.monotonic(), cpu_some_us()
    while time.monotonic() < deadline:
        p = read(probe)
        runs = sum(p.get("runs", {}).values()) if p else None
        if p is None or runs == seen:
            time.sleep(0.3)
            continue
        first = seen is None
        seen = runs
        now, psi_now = time.monotonic(), cpu_some_us()
        cpu = (psi_now - psi) / 1e6 / (now - at) if psi is not None and psi_now is not None else 0
        at, psi = now, psi_now
        if first:
            continue
        ratio, cause = p.get("ratio"), p.get("cause") or p.get("verdict")
        print(f"run {runs}: ratio {ratio}, CPU pressure {cpu:.0%}, {p.get('verdict_text', '')}",
              flush=True)
        if cause == expected:
            return 0
        if cause != "undetermined" and not (cause == co_present and cpu >= BACKGROUND_CPU):
            return 1
        slow_in_row = slow_in_row + 1 if ratio is not None and ratio < SLOW else 0
        if slow_in_row >= SUSTAINED:
            lasted = True
            lasting += 1
            if lasting >= lasting_runs:
                return 2
    return 3 if lasted else 4


if __name__ == "__main__":
    sys.exit(main())
