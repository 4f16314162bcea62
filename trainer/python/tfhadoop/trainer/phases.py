"""The coordinator's side of its watchdog: what it is doing (its phase) and that it is alive, in
the key-value store (``protocol.KV_COORDINATOR``), so that the master can tell a coordinator that
is stopped (its heartbeat thread is silent) or stuck (one phase, e.g. a join on a closure that
never returns, longer than that phase's ``--phase-timeouts`` limit) from one that is merely slow
in a phase allowed to be long (an evaluation, an HDFS outage waited out)."""
from __future__ import annotations

import contextlib
import json
import os
import threading
import time

from tfhadoop.trainer import protocol


class PhaseReporter:
    """``enter(phase)`` and ``progress()`` from the coordinator's main thread; a daemon thread
    (``start``) writes the report every ``period`` s with a new ``beat``. ``app`` None: nothing is
    written (a coordinator run outside YARN)."""

    def __init__(self, app, period: float = protocol.HEARTBEAT_S):
        self.app, self.period = app, period
        self.phase, self.mark, self.beat = protocol.PHASE_STARTING, 0, 0
        self.lock = threading.Lock()

    def report(self) -> dict:
        return {"pid": os.getpid(), "phase": self.phase, "mark": self.mark, "beat": self.beat}

    def write(self) -> None:
        if self.app is None:
            return
        with self.lock:
            value = json.dumps(self.report()).encode()
        try:
            self.app.kv[protocol.KV_COORDINATOR] = value
        except Exception:  # noqa: BLE001 - the next beat tries again
            pass

    def enter(self, phase: str) -> None:
        """A new phase: its time limit starts now (written at once, not at the next beat)."""
        assert phase in protocol.PHASES, phase
        with self.lock:
            self.phase, self.mark = phase, self.mark + 1
        self.write()

    def progress(self) -> None:
        """Progress in the current phase (a closure completed): its time limit starts again."""
        with self.lock:
            self.mark += 1

    @contextlib.contextmanager
    def during(self, phase: str):
        """``phase`` for the block, then back to the phase before it."""
        before = self.phase
        self.enter(phase)
        try:
            yield
        finally:
            self.enter(before)

    def start(self) -> PhaseReporter:
        def beat():
            while True:
                with self.lock:
                    self.beat += 1
                self.write()
                time.sleep(self.period)

        threading.Thread(target=beat, name="coordinator-heartbeat", daemon=True).start()
        return self
