"""Polling for tests that wait on a real cluster (YARN containers, training progress)."""
from __future__ import annotations

import time


def wait_for(predicate, timeout: float, what: str, interval: float = 0.5, diagnose=None):
    """The first truthy value of ``predicate()`` within ``timeout`` s, else an AssertionError naming
    ``what`` and, when given, what ``diagnose()`` says of the state at the timeout (a CI run that
    times out must say why: the job's events, the cluster's applications, the container logs)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    detail = ""
    if diagnose is not None:
        try:
            detail = "\n" + diagnose()
        except Exception as e:  # noqa: BLE001 - the timeout is the failure; a broken diagnosis is a footnote
            detail = f"\n(no diagnosis: {e!r})"
    raise AssertionError(f"timed out after {timeout} s waiting for {what}{detail}")
