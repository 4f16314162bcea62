"""The PS master's handlers and helpers about its coordinator process: begin it with the spec,
rescale it, restart it after a failure or a hang, relay preemption warnings and HDFS retries.

Part of ``ps_master.PsMaster`` (kept apart so that each file reads in one sitting); what it uses
of the master is declared below.
"""
from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from tfhadoop.ports import answers
from tfhadoop.trainer import protocol
from tfhadoop.trainer.master_core import RESTARTABLE_ERRORS

if TYPE_CHECKING:
    import enum

    import skein

    from tfhadoop.trainer.coordinator_process import CoordinatorProcess
    from tfhadoop.trainer.event_log import EventLog
    from tfhadoop.trainer.slots import Slots
    from tfhadoop.trainer.spec import JobSettings
    from tfhadoop.trainer.watchdogs import CoordinatorWatchdog, PreemptionWarnings

K = protocol.EventKind
# YARN kills a container it announced for preemption after
# yarn.resourcemanager.monitor.capacity.preemption.max_wait_before_kill (default 15 s): a checkpoint
# due that soon after a worker's warning is taken at once, while every worker is still there.
PREEMPTION_CHECKPOINT_WITHIN_S = 15.0
# A draining coordinator completes a closure every second or so (a task of ~10 steps), under load
# too; none for this long means one waits for a worker that will not answer (on_drain_stalled).
DRAIN_STALL_S = 30.0


# What TensorFlow raises (UnknownError) when the coordinator cannot bind its own server's port.
SERVER_NOT_STARTED = "Could not start gRPC server"


def chief_port_taken(error: dict) -> bool:
    """Whether the coordinator failed binding the chief's port (another process holds it)."""
    return error["type"] == "UnknownError" and SERVER_NOT_STARTED in error["message"]


class CoordinatorHandling:
    """The coordinator's side of ``PsMaster``."""

    app: skein.ApplicationClient
    job: JobSettings
    clock: Callable[[], float]
    events: EventLog
    slots: Slots
    process: CoordinatorProcess
    coordinator_watch: CoordinatorWatchdog
    preemption: PreemptionWarnings
    State: type[enum.Enum]
    Event: type[enum.Enum]
    state: Any
    outcome: tuple[str, str] | None
    cluster: dict
    in_spec: list[int]
    abandoned: set[int]
    live: dict[tuple[str, int], str]
    containers: dict[str, tuple[str, int]]
    restarts: dict[tuple[str, int], int]
    fail: Callable[[str], Any]
    dispatch: Callable[..., None]
    replace: Callable[..., object]
    spec_index: Callable[[str, int], int | None]
    missing_servers: Callable[[dict], list[str]]
    workers_alive: Callable[[], int]
    publish_cluster: Callable[[dict], None]
    chief_address: Callable[[], str]

    def init_coordinator_handling(self) -> None:
        self.coordinator_attempts = 0  # coordinator processes started, for the events' ``attempt``
        self.coordinator_failures = 0  # only these count against max_coordinator_restarts
        self.last_error: dict | None = None
        self.hdfs_retries_seen = 0  # entries of the coordinator's hdfs_retries already logged
        self.failed_at = float("-inf")  # when the coordinator last failed (self.clock)
        self.given: dict | None = None  # the spec the current coordinator began with; None: not begun
        self.given_slots: list[int] = []  # the worker slots of that spec
        self.lost_since_begin: set[int] = set()  # of those, the slots whose worker was lost since
        self.begin_after = 0.0  # backoff: the current coordinator begins no earlier (self.clock)
        self.spawned_at = 0.0  # when the current coordinator process was started (self.clock)
        self.progress_at_begin: bytes | None = None  # "progress" when it was given the spec
        self.first_progress_seen = True
        self.rescale_pending = False
        self.rescale_requested_at = 0.0  # when the coordinator was last asked to drain (self.clock)
        self.avoiding: list[int] | None = None  # the task indexes last written to AVOID_WORKERS_FILE
        # whether a process accepts connections at an address; a kernel answers a local connect at
        # once, also on a busy host, and a dead host is as good as a dead process
        self.answers: Callable[[str], bool] = partial(answers, timeout=0.1)

    @property
    def coordinator(self) -> subprocess.Popen | None:
        return self.process.process

    # -- handlers -------------------------------------------------------------------------------
    def on_spec_changed(self):
        """Every server of the new spec is up: the coordinator checkpoints after its closures in
        flight and exits RESCALE_EXIT; it is restarted with the new spec and restores that checkpoint.

        Not when every worker it began with was lost meanwhile (all preempted at once, one or more
        replacements at a new address): TensorFlow recovers lost workers all together, waiting at
        the moved one's old address, which never answers, so the closures in flight never finish
        and the coordinator can neither drain nor checkpoint (seen in CI: silent until the hang
        watchdog killed it 120 s later). It is restarted now, from the latest checkpoint: what it
        did since is what those workers' loss took anyway."""
        given = self.given["worker"] if self.given else []
        moved = any(self.cluster["worker"][i] != address for i, address in enumerate(given))
        if moved and self.every_worker_lost():
            return self.restart_undrained("every worker the coordinator began with was lost; one came back elsewhere")
        self.process.request_rescale()
        self.rescale_pending, self.rescale_requested_at = True, self.clock()
        self.events.add(K.RESCALE_REQUESTED, role="chief", workers=len(self.cluster["worker"]))
        return self.State["RESCALING"]

    def on_all_workers_back(self):
        """Every worker the coordinator began with was lost (all preempted at once) and each is
        back at its address: restart the coordinator from the latest checkpoint rather than let
        TensorFlow reconnect it to all of them. That recovery left it silent, its closures never
        finishing, until the hang watchdog killed it 120 s later (seen 3 times in CI and here,
        2026-11-26/27; cause inside TensorFlow not established). Nothing is lost by it: without
        a worker it took no step since the losses."""
        return self.restart_undrained("every worker the coordinator began with was lost; all are back")

    def on_drain_stalled(self, stalled_s: float):
        """Asked to drain, the coordinator completed no closure for ``DRAIN_STALL_S`` s: a closure
        in flight on the moved worker waits for its old address, which never answers (seen in CI
        under load, 2026-11-29: silent until the hang watchdog killed it, counted as a failure).
        Restart it from the latest checkpoint now, as a planned restart."""
        return self.restart_undrained(f"no closure completed in {stalled_s:.0f} s of draining")

    def restart_undrained(self, why: str):
        """Restart the coordinator from the latest checkpoint now, without asking it to drain."""
        self.events.add(K.RESCALED, role="chief", workers=len(self.cluster["worker"]), drained=False, why=why)
        self.stop_coordinator()
        self.spawn_coordinator(planned=True)
        return self.State["WAITING"]

    def every_worker_lost(self) -> bool:
        """Every worker of the current coordinator's spec was lost since it began."""
        return bool(self.given_slots) and set(self.given_slots) <= self.lost_since_begin

    def on_progress(self) -> None:
        """The coordinator's first progress: how long a start or restart took."""
        self.first_progress_seen = True
        self.events.add(K.FIRST_PROGRESS, role="chief", attempt=self.coordinator_attempts)

    def on_coordinator_exited(self, rc: int):
        if self.state == self.State["STARTING"]:
            error = self.process.error(rc)
            return self.fail(f"the coordinator exited while the cluster started: {error['type']}: {error['message']}")
        if rc == protocol.RESCALE_EXIT and self.state == self.State["RESCALING"]:
            self.events.add(K.RESCALED, role="chief", workers=len(self.cluster["worker"]))
            self.spawn_coordinator(planned=True)
            return self.State["WAITING"]
        if rc == 0:
            self.events.add(K.SUCCEEDED, role="chief")
            self.outcome = ("SUCCEEDED", "training finished")
            return self.State["SUCCEEDED"]
        error = self.process.error(rc)
        self.events.add(K.COORDINATOR_FAILED, role="chief", exit_code=rc, error_type=error["type"],
                        diagnostics=error["message"][:2000])
        self.coordinator_failures += 1
        self.failed_at = self.clock()
        repeated = self.last_error is not None and (error["type"], error["message"]) == \
            (self.last_error["type"], self.last_error["message"])
        if chief_port_taken(error):
            # Another process bound the chief's port between the master's choice and the
            # coordinator's bind (a CI run, 2026-11-28): not the model's fault, a new port.
            self.publish_cluster({**self.cluster, "chief": [self.chief_address()]})
        elif error["type"] not in RESTARTABLE_ERRORS or repeated:
            return self.fail(f"{error['type']}: {error['message']}")
        self.last_error = error
        return self.restart_coordinator(error["message"])

    def on_coordinator_stale(self, phase: str, reason: str, silent_s: float, in_phase_s: float, limit_s: float):
        """A stopped or stuck coordinator: killed (its exit is ours, not polled), then restarted from
        the latest checkpoint like one that failed with a cluster error."""
        self.events.add(K.COORDINATOR_HUNG, role="chief", attempt=self.coordinator_attempts, phase=phase,
                        reason=reason, silent_s=round(silent_s, 1), in_phase_s=round(in_phase_s, 1), limit_s=limit_s)
        self.stop_coordinator()
        self.coordinator_failures += 1
        self.failed_at = self.clock()
        what = (f"silent for {silent_s:.0f} s" if reason == "silent" else
                f"in phase {phase} for {in_phase_s:.0f} s without progress")
        return self.restart_coordinator(f"coordinator hung ({what})")

    def on_preemption_warned(self, role: str | None, slot: int | None, container: str | None,
                             yarn_container: str, contract: str, warned_at: float) -> None:
        """YARN will take ``container`` back (within max_wait_before_kill, 15 s by default): a worker
        is handed no new closure from now on, so that none of its work is in flight when it goes,
        and a checkpoint due soon is taken now; a PS: a checkpoint now. The loss itself is handled
        as any preemption (CONTAINER_LOST)."""
        key = (role, slot) if role in ("ps", "worker") and slot is not None else None  # None: the AM's, or not ours
        acting = bool(self.job.preemption_warnings) and key is not None and self.live.get(key) == container
        reaction = []
        if acting and role == "worker" and container:
            self.preemption.warned[container] = self.clock()
            self.publish_avoided()
            reaction.append("avoid")
        if acting and self.state in (self.State["TRAINING"], self.State["WAITING"]):
            self.process.request_checkpoint("ps" if role == "ps" else "worker", PREEMPTION_CHECKPOINT_WITHIN_S)
            reaction.append("checkpoint_now" if role == "ps" else
                            f"checkpoint_if_due_within_{PREEMPTION_CHECKPOINT_WITHIN_S:g}s")
        self.events.add(K.PREEMPTION_WARNED, role=role, slot=slot, container=container, yarn_container=yarn_container,
                        contract=contract, warned_at=warned_at, reaction=reaction,
                        task=self.spec_index(*key) if key else None)

    # -- the coordinator process ------------------------------------------------------------------
    def publish_avoided(self) -> None:
        """The task indexes of the live warned workers, for the coordinator (written only when they
        changed): it hands them no new closure. Not when every live worker is warned: then nothing
        would train until YARN's kill (or its sparing), which costs more than the closures in
        flight redone elsewhere. A warned worker YARN reported lost stays avoided while its old
        address still answers (``PreemptionWarnings.departed_workers``), unless no other worker runs
        (every worker preempted at once: TensorFlow then sees the failures and waits, as before)."""
        warned = [i for cid in self.preemption.warned if cid in self.containers
                  for role, slot in [self.containers[cid]]
                  if role == "worker" and self.live.get((role, slot)) == cid
                  for i in [self.spec_index(role, slot)] if i is not None]
        if len(warned) >= self.workers_alive():  # no other worker to steer the work to
            tasks = []  # nor a reason to probe the departed ones' old addresses
        else:
            tasks = sorted(set(warned) | set(self.departed_still_running()))
        if tasks != self.avoiding:
            self.process.avoid(tasks)
            self.avoiding = tasks

    def departed_still_running(self) -> list[int]:
        """The task indexes of the lost warned workers whose old address still answers; the
        others are forgotten (a closure for one fails at once, and TensorFlow waits for its
        replacement). One short connect each: a NodeManager's kill is a heartbeat away."""
        running = []
        for role, slot in self.preemption.departed_workers():
            i = self.spec_index(role, slot)
            given = self.given["worker"] if self.given else []
            if i is not None and i < len(given) and self.answers(given[i]):
                running.append(i)
            else:
                self.preemption.forget_departed((role, slot))
        return running

    def restart_coordinator(self, message: str):
        """After a coordinator failure: a new one after backoff (2, 4, .. 30 s), resuming from the
        checkpoint; FAILED after ``max_coordinator_restarts``."""
        if self.coordinator_failures > self.job.max_coordinator_restarts:
            return self.fail(f"coordinator failed {self.coordinator_failures} times, last: {message}")
        self.begin_after = self.clock() + min(2 ** self.coordinator_failures, 30)
        self.spawn_coordinator()
        return self.State["WAITING"]

    def spawn_coordinator(self, planned: bool = False) -> None:
        """Start a coordinator process now (it waits for the spec: ``begin_coordinator``).
        ``planned``: a restart the master chose (a new spec), not a new attempt after a failure."""
        self.coordinator_attempts += 0 if planned else 1
        self.process.spawn()
        self.rescale_pending, self.given, self.spawned_at = False, None, self.clock()
        self.app.kv.discard(protocol.KV_HDFS_RETRIES)  # each coordinator lists its own retries
        self.hdfs_retries_seen = 0
        self.reopen_abandoned()

    def reopen_abandoned(self) -> None:
        """A new coordinator connects to every worker of its spec, an abandoned slot's included
        (its task index stays: the others' cannot move), so the slot gets a replacement again
        (``slot_reopened``, its failures counted from 0) rather than leave the coordinator
        waiting for, or failing against, a worker that is gone."""
        for slot in sorted(self.abandoned & set(self.in_spec)):
            self.abandoned.discard(slot)
            self.restarts[("worker", slot)] = 0
            self.events.add(K.SLOT_REOPENED, role="worker", slot=slot)
            self.replace("worker", slot, attempt=1, delay=0)

    def begin_coordinator(self) -> None:
        """Hand the waiting coordinator the current spec."""
        self.avoiding = None
        self.publish_avoided()  # task indexes of the new spec
        self.process.begin(self.cluster, self.in_spec)
        self.given = json.loads(json.dumps(self.cluster))
        self.given_slots, self.lost_since_begin = list(self.in_spec), set()
        self.coordinator_watch.watch()
        self.progress_at_begin, self.first_progress_seen = self.app.kv.get(protocol.KV_PROGRESS), False
        self.events.add(K.COORDINATOR_STARTED, role="chief", attempt=self.coordinator_attempts,
                        workers=len(self.cluster["worker"]), cluster=self.cluster,
                        waited_s=round(self.clock() - self.spawned_at, 1))

    def stop_coordinator(self) -> None:
        """Kill the coordinator and forget it: its exit (-9) is ours, never a coordinator failure
        to be polled; the next one is spawned when the lost PS's replacement starts."""
        self.process.stop()

    # -- observations -> events -------------------------------------------------------------------
    def note_hdfs_retries(self) -> None:
        """The coordinator's retried HDFS operations (``hdfs.retry``) as ``hdfs_retry`` events:
        an outage that a checkpoint waited out is named in the log."""
        raw = self.app.kv.get(protocol.KV_HDFS_RETRIES)
        retries = json.loads(raw.decode()) if raw else []
        for r in retries[self.hdfs_retries_seen:]:
            self.events.add(K.HDFS_RETRY, role="chief", **{k: r[k] for k in ("what", "attempt", "error", "delay_s")})
        self.hdfs_retries_seen = max(self.hdfs_retries_seen, len(retries))

    def observe_coordinator(self, up: dict) -> None:
        if self.coordinator is None:  # PS_RECOVERY: stopped for a lost PS whose replacement waits
            return
        rc = self.coordinator.poll()
        if rc is not None:
            self.dispatch(self.Event["COORDINATOR_EXITED"], rc=rc)
            return
        missing = self.missing_servers(up)
        if self.state == self.State["WAITING"]:
            if not missing and self.clock() >= self.begin_after:
                self.dispatch(self.Event["SERVERS_UP"])
            elif missing and self.clock() - self.spawned_at > self.job.startup_timeout:
                self.dispatch(self.Event["SERVERS_LATE"], missing=missing)
            return
        stale = self.coordinator_watch.stale(getattr(self.coordinator, "pid", None))
        if stale:
            self.dispatch(self.Event["COORDINATOR_STALE"], **stale)
            return
        if self.state == self.State["RESCALING"]:
            stalled = self.coordinator_watch.training_stalled_s(since=self.rescale_requested_at)
            if stalled > DRAIN_STALL_S:
                self.dispatch(self.Event["DRAIN_STALLED"], stalled_s=stalled)
                return
        if self.state == self.State["TRAINING"] and self.cluster != self.given and not missing:
            self.dispatch(self.Event["SPEC_CHANGED"])
        elif self.state == self.State["TRAINING"] and self.every_worker_lost() and not missing \
                and self.workers_alive() >= len(self.given_slots):
            self.dispatch(self.Event["ALL_WORKERS_BACK"])
        if not self.first_progress_seen:
            progress = self.app.kv.get(protocol.KV_PROGRESS)
            if progress is not None and progress != self.progress_at_begin:
                self.dispatch(self.Event["PROGRESS"])
