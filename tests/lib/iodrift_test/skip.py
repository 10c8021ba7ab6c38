"""How a test script ends early: skipped (exit 77, CTest's SKIP_RETURN_CODE for every Python
test here) or failed (exit 1), with the reason on stdout; plus the usual preconditions.

Two kinds of skip. `skip(reason)` is for a condition no runner promises: a kernel feature this
kernel lacks, a quiet machine, `IODRIFT_BENCH` unset. `skip_guaranteed(reason)` is for what CI
provides — root, loop devices and mounts, systemd-nspawn, the packages tools/dev.sh installs —
and under `IODRIFT_CI_GUARANTEED=1` (exported by .ci/run) it fails instead, naming what is
missing. `need_tools`, `need` and `require_root` are guaranteed skips unless told otherwise."""
import os
import shutil
import sys

SKIP = 77
GUARANTEED_ENV = "IODRIFT_CI_GUARANTEED"


def ci_guaranteed():
    """True when the environment promises root, loop devices, nspawn and dev.sh's packages."""
    return os.environ.get(GUARANTEED_ENV) == "1"


def skip(reason):
    """Exits 77 (CTest: skipped) after printing `SKIPPED: reason`."""
    print(f"SKIPPED: {reason}")
    sys.exit(SKIP)


def fail(message):
    """Exits 1 (CTest: failed) after printing `FAILED: message`."""
    print(f"FAILED: {message}")
    sys.exit(1)


def skip_guaranteed(reason):
    """Skips with `reason`; fails instead when CI guarantees the condition (see above)."""
    if ci_guaranteed():
        fail(f"skip on a condition CI guarantees ({GUARANTEED_ENV}=1): {reason}")
    skip(reason)


def need_tools(*tools, reason="{tool} is not installed", guaranteed=True):
    """Skips unless every tool is on PATH; `reason` is formatted with the first missing one.
    `guaranteed=False` for a tool that tools/dev.sh does not install."""
    for tool in tools:
        if shutil.which(tool) is None:
            (skip_guaranteed if guaranteed else skip)(reason.format(tool=tool))


def need(tool, guaranteed=True):
    """Skips unless `tool` is on PATH (reason `TOOL not installed`)."""
    need_tools(tool, reason="{tool} not installed", guaranteed=guaranteed)


def require_root(reason):
    """Skips with `reason` unless running as root (a guaranteed skip: CI runs as root)."""
    if os.geteuid() != 0:
        skip_guaranteed(reason)
