"""What the PS master and the ring master share: their settings, event log, progress sampler,
slots and watchdogs, the handlers of the events both have (an application master restart, a
hung container, a due replacement) and the first half of each round of observations (containers
ended, heartbeats, replacements due, preemption warnings, unwritten event lines retried).

Each master's own module adds its states, events, table and the handlers particular to it. Both
have the events named here (``Event.AM_RESTARTED``, ``CONTAINER_LOST``, ``HEARTBEAT_STALE``,
``REPLACEMENT_DUE``, ``PREEMPTION_WARNED``).
"""
from __future__ import annotations

import enum
import time

from tfhadoop.trainer import protocol
from tfhadoop.trainer.event_log import EventLog
from tfhadoop.trainer.jobpage import Sampler
from tfhadoop.trainer.slots import Slots
from tfhadoop.trainer.spec import JobSettings
from tfhadoop.trainer.state_table import TableMachine
from tfhadoop.trainer.tensorboard_service import TensorBoardWatch
from tfhadoop.trainer.watchdogs import HeartbeatWatchdog, PreemptionWarnings

# Errors of a coordinator or a training process that a lost server causes: restarted, not a model bug.
CLUSTER_ERRORS = ("UnavailableError", "AbortedError", "CancelledError", "DeadlineExceededError")
# Errors that restart a coordinator or a ring generation from the checkpoint: a lost server's, and a
# crash inside TensorFlow's runtime (a CI run saw a coordinator killed by SIGSEGV 6 s after a
# rescale, 2026-11-28). A model bug raises a Python error instead; the same error twice in a row fails.
RESTARTABLE_ERRORS = (*CLUSTER_ERRORS, protocol.NATIVE_CRASH_ERROR)


class MasterCore(TableMachine):
    """The common state of a job master. ``services``: the Skein services of its slots; ``ports``:
    (role, slot) -> the port each slot's container binds first."""

    Event: type[enum.Enum]
    services: list[str]

    def __init__(self, app, job: JobSettings, work: str, clock, attempt: int, ports: dict[tuple[str, int], int]):
        self.app, self.job, self.work, self.clock, self.attempt = app, job, work, clock, attempt
        self.outcome: tuple[str, str] | None = None  # (final status, diagnostics) once SUCCEEDED/FAILED
        self.decided_before = False  # the outcome is an earlier attempt's (result.json)
        app_id = getattr(app, "id", None)
        self.events = EventLog(app, self.job.checkpoint_dir, app_id)
        self.sampler = Sampler(app, self.job.checkpoint_dir, app_id)
        now = self.now  # the watchdogs read the master's clock at each call (a test swaps it)
        self.slots = Slots(app, self.events, ports, self.gpus, now)
        self.heartbeats = HeartbeatWatchdog(app, self.slots, self.job, now)
        self.preemption = PreemptionWarnings(app, self.slots, self.events, work, now)
        self.tensorboard = TensorBoardWatch(app, self.events, job.tensorboard)

    def now(self) -> float:
        return self.clock()

    def gpus(self, role: str) -> int:
        return self.job.worker_gpus if role == "worker" else 0

    # the slots' bookkeeping, as the masters' callers (job page, tests) name it
    @property
    def ports(self) -> dict[tuple[str, int], int]:
        return self.slots.ports

    @property
    def live(self) -> dict[tuple[str, int], str]:
        return self.slots.live

    @property
    def containers(self) -> dict[str, tuple[str, int]]:
        return self.slots.containers

    @property
    def restarts(self) -> dict[tuple[str, int], int]:
        return self.slots.restarts

    @property
    def delayed(self) -> dict[tuple[str, int], float]:
        return self.slots.delayed

    @property
    def warned(self) -> dict[str, float]:
        return self.preemption.warned

    def workers_alive(self) -> int:
        """Workers whose container runs (shown to users: samples, events)."""
        return self.slots.workers_alive()

    def workers_held(self) -> int:
        """Worker slots with a container, running or requested (what decisions count on)."""
        return self.slots.workers_held()

    def stop_coordinator(self) -> None:
        """Stop the coordinator process, if the strategy has one (``master.main`` calls it on every master)."""

    # -- handlers both masters have ------------------------------------------------------------
    def on_am_restarted(self):
        """Attempt >= 2: an outcome attempt 1 decided (``result.json``: Skein retries a FAILED
        application) ends this attempt with it; else record the checkpoint it resumes from."""
        from tfhadoop.trainer import jobdir

        result = jobdir.result(self.job.checkpoint_dir, getattr(self.app, "id", None))
        if result and result.get("status") == "FAILED":
            self.decided_before = True
            return self.fail(result.get("diagnostics", "failed in an earlier attempt"))
        state = jobdir.latest_state(self.job.checkpoint_dir) or {}
        self.events.add(protocol.EventKind.AM_RESTARTED, role="master", attempt=self.attempt,
                        checkpoint={k: state.get(k) for k in ("epoch", "steps")} if state else None)
        return None

    def on_heartbeat_stale(self, role: str, slot: int, container: str, silent_s: float) -> None:
        self.heartbeats.kill(role, slot, container, silent_s, self.events)

    # -- observations -> events ----------------------------------------------------------------
    def observe_slots(self) -> None:
        """Containers ended, stale heartbeats, due replacements, preemption warnings (and the
        warnings withdrawn), the TensorBoard container, and the event lines HDFS refused so far,
        retried each round."""
        E = self.Event
        self.slots.begin_round()
        for c in self.slots.ended(self.services):
            if self.done:
                break
            if str(c.state) == "SUCCEEDED" and self.ends_of_itself():
                self.slots.finished(c)
            else:
                self.dispatch(E["CONTAINER_LOST"], c=c)
        for stale in self.heartbeats.stale():
            self.dispatch(E["HEARTBEAT_STALE"], **stale)
        for role, slot in self.slots.due():
            if not self.done:
                self.dispatch(E["REPLACEMENT_DUE"], role=role, slot=slot)
        for warning in self.preemption.new():
            if not self.done:
                self.dispatch(E["PREEMPTION_WARNED"], **warning)
        self.preemption.forget_spared()
        self.tensorboard.observe()  # --tensorboard: its URL and its loss, as events only
        self.slots.publish_alive()  # a requested container that began running since
        self.events.flush()

    def ends_of_itself(self) -> bool:
        """A container that SUCCEEDED ended its work (a ring member after training), not lost."""
        return False

    def run_loop(self, period_s: float, starting_period_s: float | None = None) -> tuple[str, str]:
        """``step`` until the job ends; an attempt >= 2 first checks whether attempt 1 decided it."""
        if self.attempt > 1:
            self.dispatch(self.Event["AM_RESTARTED"])
            if self.done:
                return self.final()
        self.launch()
        while True:
            outcome = self.step()
            if outcome:
                return outcome
            time.sleep(period_s if starting_period_s is None or self.state.name != "STARTING" else starting_period_s)

    def launch(self) -> None:
        raise NotImplementedError

    def step(self) -> tuple[str, str] | None:
        raise NotImplementedError
