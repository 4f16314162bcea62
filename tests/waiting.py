"""Polling for tests that wait on a real cluster (YARN containers, training progress)."""
from __future__ import annotations

import time


def wait_for(predicate, timeout: float, what: str, interval: float = 0.5):
    """The first truthy value of ``predicate()`` within ``timeout`` s, else an AssertionError naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
