"""Suspects that describe the machine during a run, not the probe's own checks.

collectors/probes/context.h kMachineStateSuspects: io or memory pressure from other work, low free
memory. A run under them is kept out of the baseline like any suspect run; a test of a probe's own
checks (cache_not_dropped, residency_unverified, cache_evicted ...) leaves them aside, because a
busy machine sets them.
"""

MACHINE_STATE = ("low_free_memory", "io_pressure", "memory_pressure")


def own(suspects):
    """The suspects of a run that are the probe's own (a list, as /api/v1/probes gives it)."""
    return [s for s in suspects or () if s not in MACHINE_STATE]
