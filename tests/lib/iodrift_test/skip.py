"""How a test script ends early: skipped (exit 77, CTest's SKIP_RETURN_CODE for every Python
test here) or failed (exit 1), with the reason on stdout; plus the usual preconditions."""
import os
import shutil
import sys

SKIP = 77


def skip(reason):
    """Exits 77 (CTest: skipped) after printing `SKIPPED: reason`."""
    print(f"SKIPPED: {reason}")
    sys.exit(SKIP)


def fail(message):
    """Exits 1 (CTest: failed) after printing `FAILED: message`."""
    print(f"FAILED: {message}")
    sys.exit(1)


def need_tools(*tools, reason="{tool} is not installed"):
    """Skips unless every tool is on PATH; `reason` is formatted with the first missing one."""
    for tool in tools:
        if shutil.which(tool) is None:
            skip(reason.format(tool=tool))


def need(tool):
    """Skips unless `tool` is on PATH (reason `TOOL not installed`)."""
    need_tools(tool, reason="{tool} not installed")


def require_root(reason):
    """Skips with `reason` unless running as root."""
    if os.geteuid() != 0:
        skip(reason)
