"""Suspects that describe the machine during a run, not the probe's own checks.

collectors/probes/context.h kMachineStateSuspects: io or memory pressure from other work, low free
memory. A run under them is kept out of the baseline like any suspect run; a test of a probe's own
checks (cache_not_dropped, residency_unverified, cache_evicted ...) leaves them aside, because a
busy machine sets them.

The list is read from that header, so the daemon and the tests cannot disagree on it.
"""
import os
import re

CONTEXT_H = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                         "collectors", "probes", "context.h")


def _machine_state(path=CONTEXT_H):
    with open(path) as f:
        text = f.read()
    m = re.search(r"kMachineStateSuspects\[\]\s*=\s*\{([^}]*)\}", text)
    names = tuple(re.findall(r'"([a-z_]+)"', m.group(1))) if m else ()
    if not names:
        raise RuntimeError(f"{os.path.normpath(path)}: no kMachineStateSuspects list found")
    return names


MACHINE_STATE = _machine_state()


def own(suspects):
    """The suspects of a run that are the probe's own (a list, as /api/v1/probes gives it)."""
    return [s for s in suspects or () if s not in MACHINE_STATE]


def machine_only(suspects):
    """Whether a run was kept out for the machine's state alone: it has suspects, all of them
    machine-state ones."""
    return bool(suspects) and not own(suspects)
