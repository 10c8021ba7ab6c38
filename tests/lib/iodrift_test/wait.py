"""Waiting on a condition (never on a fixed sleep) with a timeout and a failure that says what
was awaited."""
import time

from iodrift_test.skip import fail


def wait_for(what, predicate, timeout, interval=0.2, detail=None):
    """Calls predicate() until it returns a true value, which is returned. It is called at least
    once; after `timeout` seconds the test fails with `timed out after T s waiting for WHAT`,
    followed by detail() (e.g. the last document seen, the daemon's log) when given."""
    deadline = time.monotonic() + timeout
    while True:
        last = predicate()
        if last:
            return last
        if time.monotonic() >= deadline:
            break
        time.sleep(interval)
    message = f"timed out after {timeout} s waiting for {what}"
    if detail is not None:
        message += f"\n{detail()}"
    fail(message)
