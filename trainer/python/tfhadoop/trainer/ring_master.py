"""The job master of ``--strategy allreduce``: ring membership (docs/design/trainer.md,
"Synchronous allreduce on YARN").

It starts ``--workers`` worker containers (``tfhadoop.trainer.allreduce``), waits for the gang
(all of them, or after ``--startup-wait`` at least ``--min-workers``; none within
``--gang-timeout``: it kills what it holds and fails, saying why), then publishes ring
generations in the key-value store (``ring``): each generation is a fixed MWMS cluster, and the
workers' supervisors restart their training processes for every new one.

- a member lost (preempted, node lost, failed, hung): replaced (``slots.Slots``: preempted or node
  lost at once and not counted, as in the PS mode); the survivors get the next generation at once if they are at least
  ``--min-workers`` (they restore the latest checkpoint);
- a worker arrives while the ring is short: the ring is asked to stop after its current round
  (``ring_stop``; the chief checkpoints, all exit 75) and the next generation takes it in;
- a training process fails of itself: a cluster error or a native crash (``NativeCrash``, killed by
  SIGSEGV and kin) restarts the generation (counted against
  ``max_coordinator_restarts``), anything else (a model bug) fails the job at once;
- a training process hangs (its supervisor killed it after ``round_timeout`` s without a round,
  ``TrainingHang``): the generation restarts at once (counted as a cluster error);
- YARN announces it will preempt a member (``preemption_warned``, watchdogs.PreemptionWarnings): unless
  ``--no-preemption-warnings``, a planned shrink: the ring is asked to stop after its current round
  (``ring_stop``: the chief checkpoints, nothing is redone) and the next generation leaves the warned
  worker out (``ring_shrunk``), if the others are at least ``--min-workers``; its replacement joins
  later by growth, as any arriving worker.

One state machine, like the PS master's, on the same core (``master_core``): ``State``,
``Event``, ``TRANSITIONS``; the gang's start is part of it (GANG).
"""
from __future__ import annotations

import enum
import json
import time

from tfhadoop.ports import free_ports
from tfhadoop.trainer import children, protocol
from tfhadoop.trainer.master_core import CLUSTER_ERRORS, RESTARTABLE_ERRORS, MasterCore
from tfhadoop.trainer.slots import backoff_s
from tfhadoop.trainer.spec import JobSettings
from tfhadoop.trainer.state_table import Rule

K = protocol.EventKind
EXIT_GRACE_S = 15  # a training process's cluster error waits this long for the container loss behind it
RESTARTABLE = (*RESTARTABLE_ERRORS, protocol.RING_HANG_ERROR)  # errors of a training process that restart its generation


class State(str, enum.Enum):
    GANG = "gang"  # waiting for the first ring's workers
    TRAINING = "training"  # a ring generation trains
    REFORMING = "reforming"  # a member was lost: waiting for >= min_workers to publish the next ring
    STOPPING = "stopping"  # the ring was asked to checkpoint and exit, to take in an arrived worker
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class Event(str, enum.Enum):
    AM_RESTARTED = "am_restarted"  # this master is attempt >= 2: the job's state is on HDFS
    CONTAINER_LOST = "container_lost"
    HEARTBEAT_STALE = "heartbeat_stale"
    REPLACEMENT_DUE = "replacement_due"
    GANG_COMPLETE = "gang_complete"  # all workers (or >= min_workers after startup_wait) published addresses
    GANG_TIMEOUT = "gang_timeout"  # fewer than min_workers within gang_timeout
    RING_READY = "ring_ready"  # after a loss: enough workers for the next generation
    WORKER_ARRIVED = "worker_arrived"  # a worker outside the ring while it is short
    RING_STOPPED = "ring_stopped"  # every member of the stopping ring exited 75 (or was lost)
    PROCESS_FAILED = "process_failed"  # a training process of the current generation failed of itself
    PROGRESS = "progress"  # the chief reported progress in this generation
    FINISHED = "finished"  # the chief's training process exited 0: trained, evaluated, exported
    PREEMPTION_WARNED = "preemption_warned"  # YARN announced it will take a container back (PreemptionMessage)


S = State
ALIVE = frozenset({S.GANG, S.TRAINING, S.REFORMING, S.STOPPING})
TRANSITIONS: dict[Event, Rule] = {
    Event.AM_RESTARTED: Rule(frozenset({S.GANG}), frozenset({S.FAILED}),
                             "record the attempt and the checkpoint it resumes from; an outcome that attempt "
                             "1 decided (result.json) ends this attempt with it", stay=True),
    Event.CONTAINER_LOST: Rule(ALIVE, frozenset({S.REFORMING, S.FAILED}),
                               "replace (preempted, on a lost node or hung: at once, not counted; failed: "
                               "backoff, abandon after max_worker_restarts); a ring member: REFORMING", stay=True),
    Event.HEARTBEAT_STALE: Rule(ALIVE, frozenset(), "event hang_detected, kill the container", stay=True),
    Event.REPLACEMENT_DUE: Rule(ALIVE, frozenset(), "start the slot's replacement container", stay=True),
    Event.GANG_COMPLETE: Rule(frozenset({S.GANG}), frozenset({S.TRAINING}), "event cluster_up, publish ring 1"),
    Event.GANG_TIMEOUT: Rule(frozenset({S.GANG, S.REFORMING}), frozenset({S.FAILED}),
                             "kill the containers held, fail saying how many of how many came"),
    Event.RING_READY: Rule(frozenset({S.REFORMING}), frozenset({S.TRAINING}), "publish the next ring"),
    Event.WORKER_ARRIVED: Rule(frozenset({S.TRAINING}), frozenset({S.STOPPING}),
                               "ask the ring to checkpoint after its round and exit 75 (ring_stop)"),
    Event.RING_STOPPED: Rule(frozenset({S.STOPPING}), frozenset({S.TRAINING}), "publish the next ring"),
    Event.PROCESS_FAILED: Rule(frozenset({S.TRAINING, S.STOPPING}), frozenset({S.REFORMING, S.FAILED}),
                               "a cluster error, a native crash (NativeCrash) or a hang (TrainingHang): restart the generation (REFORMING, "
                               "counted); else FAILED"),
    Event.PROGRESS: Rule(frozenset({S.TRAINING, S.STOPPING}), frozenset(), "event first_round", stay=True),
    Event.FINISHED: Rule(frozenset({S.TRAINING, S.STOPPING}), frozenset({S.SUCCEEDED}), "SUCCEEDED"),
    Event.PREEMPTION_WARNED: Rule(ALIVE, frozenset({S.STOPPING}),
                                  "event preemption_warned; unless --no-preemption-warnings, a ring member while "
                                  "training: ring_stop (checkpoint after the round), the next ring without it "
                                  "(ring_shrunk) if the others are >= min_workers", stay=True),
}


class RingMaster(MasterCore):
    """The allreduce job master; the same outward face as ``ps_master.PsMaster`` for
    ``master.main``, the job page and the client (events, progress, result)."""

    TRANSITIONS = TRANSITIONS
    Event = Event
    State = State
    services = ["worker"]

    def __init__(self, app, job: JobSettings, work: str, clock=time.monotonic, attempt: int = 1):
        ports = {("worker", i): port for i, port in enumerate(free_ports(job.workers))}
        super().__init__(app, job, work, clock, attempt, ports)
        self.state = State.GANG
        self.gen = 0
        self.ring: dict | None = None  # the published generation
        self.since = clock()  # when GANG/REFORMING began
        self.exits: dict[int, dict] = {}  # slot -> its last ring_exit already handled
        self.exit_seen: dict[tuple[int, int], float] = {}  # (slot, gen) -> when its failed exit was first seen
        self.failures = 0
        self.last_error: tuple | None = None
        self.progress_at_ring: bytes | None = None
        self.first_round_seen = True
        self.reached = 0  # the most steps any generation's chief reported (its progress, within ~1 s)
        self.reached_at_ring = 0  # ... when the current generation was published

    def handlers(self):
        return {
            Event.AM_RESTARTED: self.on_am_restarted,
            Event.CONTAINER_LOST: self.on_container_lost,
            Event.HEARTBEAT_STALE: self.on_heartbeat_stale,
            Event.REPLACEMENT_DUE: self.on_replacement_due,
            Event.GANG_COMPLETE: self.on_gang_complete,
            Event.GANG_TIMEOUT: self.on_gang_timeout,
            Event.RING_READY: self.on_ring_ready,
            Event.WORKER_ARRIVED: self.on_worker_arrived,
            Event.RING_STOPPED: self.on_ring_stopped,
            Event.PROCESS_FAILED: self.on_process_failed,
            Event.PROGRESS: self.on_progress,
            Event.FINISHED: self.on_finished,
            Event.PREEMPTION_WARNED: self.on_preemption_warned,
        }

    def ends_of_itself(self) -> bool:
        return True  # a supervisor whose training ended (rc 0): not a loss

    # -- handlers ---------------------------------------------------------------------------------
    def on_container_lost(self, c) -> State | None:
        loss = self.slots.lost(c, **self.preemption.note_loss(c.id))
        role, slot = loss.role, loss.slot
        in_ring = self.ring is not None and slot in self.ring["slots"]
        if not loss.counted or loss.hung:  # a ring member's hang is the ring's, not the slot's: not counted
            self.replace(slot, self.slots.next_attempt(role, slot), 0)
        else:
            n = self.slots.count_failure(role, slot)
            if n > self.job.max_worker_restarts:
                self.events.add(K.SLOT_ABANDONED, role=role, slot=slot, workers_alive=self.workers_alive())
                if self.workers_held() + len(self.delayed) < self.job.min_workers:
                    return self.fail(f"worker:{slot} lost {n} times ({loss.why}); fewer than --min-workers "
                                     f"{self.job.min_workers} left")
            else:
                self.replace(slot, n, backoff_s(n))
        if in_ring and self.state in (State.TRAINING, State.STOPPING):
            self.since = self.clock()
            return State.REFORMING
        return None

    def on_replacement_due(self, role: str, slot: int) -> None:
        self.slots.start_replacement(role, slot)

    def on_gang_complete(self, slots: list) -> State:
        devices = {}
        for s in slots:
            raw = self.app.kv.get(protocol.kv_up("worker", s))
            devices[s] = json.loads(raw.decode()).get("cuda_visible_devices") if raw else None
        self.events.add(K.CLUSTER_UP, slots=slots, workers=len(slots), strategy="allreduce",
                        cuda_visible_devices=devices, waited_s=round(self.clock() - self.since, 1))
        self.publish_ring(slots, K.RING_FORMED)
        return State.TRAINING

    def on_gang_timeout(self, present: list) -> State:
        why = (f"gang timeout: {len(present)} of {self.job.workers} workers started within "
               f"{self.job.gang_timeout:.0f} s, fewer than --min-workers {self.job.min_workers} "
               f"(not enough resources in queue {self.job.queue}); released the containers held")
        self.events.add(K.GANG_TIMEOUT, workers=len(present), wanted=self.job.workers,
                        min_workers=self.job.min_workers, gang_timeout=self.job.gang_timeout,
                        queue=self.job.queue)
        for cid in list(self.live.values()):
            try:
                self.app.kill_container(cid)
            except Exception as exc:  # noqa: BLE001 - it ended meanwhile
                print(f"cannot kill {cid}: {exc}", flush=True)
        self.delayed.clear()
        return self.fail(why)

    def on_ring_ready(self, slots: list) -> State:
        self.publish_ring(slots, K.RING_REFORMED)
        return State.TRAINING

    def on_worker_arrived(self, slots: list) -> State:
        self.app.kv[protocol.KV_RING_STOP] = str(self.gen).encode()
        self.events.add(K.RING_STOP_REQUESTED, gen=self.gen, arrived=slots)
        return State.STOPPING

    def on_ring_stopped(self, slots: list) -> State:
        kept = self.without_warned(slots)
        self.publish_ring(kept, K.RING_GROWN if len(kept) > len(self.ring_slots) else
                          K.RING_SHRUNK if len(kept) < len(slots) else K.RING_RESTARTED)
        return State.TRAINING

    def on_preemption_warned(self, role: str | None, slot: int | None, container: str | None,
                             yarn_container: str, contract: str, warned_at: float) -> State | None:
        """A planned shrink: the ring stops after its round (the chief checkpoints: nothing redone)
        and the next generation leaves the warned worker out, before YARN kills it mid-round."""
        acting = bool(self.job.preemption_warnings) and role == "worker" and slot is not None and \
            container is not None and self.live.get((role, slot)) == container
        if acting and container:
            self.warned[container] = self.clock()
        shrink = acting and self.state == State.TRAINING and slot in self.ring_slots and \
            len(self.without_warned(self.ring_slots)) < len(self.ring_slots)
        self.events.add(K.PREEMPTION_WARNED, role=role, slot=slot, container=container, yarn_container=yarn_container,
                        contract=contract, warned_at=warned_at, reaction=["shrink"] if shrink else [])
        if not shrink:
            return None
        self.app.kv[protocol.KV_RING_STOP] = str(self.gen).encode()
        self.events.add(K.RING_STOP_REQUESTED, gen=self.gen, leaving=[slot], reason=K.PREEMPTION_WARNED)
        return State.STOPPING

    def without_warned(self, slots: list) -> list:
        """``slots`` less the live warned workers, if at least --min-workers are left (else all)."""
        warned = {self.containers[cid][1] for cid in self.warned if cid in self.live.values()}
        kept = [s for s in slots if s not in warned]
        return kept if len(kept) >= self.job.min_workers else list(slots)

    def on_process_failed(self, slot: int, error: dict | None, rc: int) -> State:
        error = error or children.exit_error("training process", rc)
        if error["type"] == protocol.RING_HANG_ERROR:
            self.events.add(K.TRAINING_HANG, slot=slot, gen=self.gen, process_state=error.get("process_state"),
                            silent_s=error.get("silent_s"), round_timeout=self.job.round_timeout,
                            diagnostics=error["message"][:2000])
        else:
            self.events.add(K.TRAINING_PROCESS_FAILED, slot=slot, gen=self.gen, exit_code=rc,
                            error_type=error["type"], diagnostics=error["message"][:2000])
        key = (error["type"], error["message"])
        self.failures += 1
        if error["type"] not in RESTARTABLE or key == self.last_error:
            return self.fail(f"{error['type']}: {error['message']}")
        if self.failures > self.job.max_coordinator_restarts:
            return self.fail(f"training failed {self.failures} times, last: {error['message']}")
        self.last_error = key
        self.since = self.clock()
        return State.REFORMING

    def on_progress(self, restored: int | None, source: str | None = None) -> None:
        """The generation's first round: ``redone_steps`` is how far the steps reached before it
        (a lower bound after a loss: progress is reported about once a second; exact after a
        stop for growth) exceed the checkpoint it restored."""
        self.first_round_seen = True
        redone = None if restored is None else max(self.reached_at_ring - restored, 0)
        self.events.add(K.FIRST_ROUND, gen=self.gen, workers=len(self.ring_slots), restored_step=restored,
                        restored_from=source, redone_steps=redone)

    def on_finished(self) -> State:
        self.events.add(K.SUCCEEDED, role="chief", gen=self.gen)
        self.outcome = ("SUCCEEDED", "training finished")
        return State.SUCCEEDED

    # -- helpers ------------------------------------------------------------------------------------
    def start(self, slot: int) -> None:
        self.slots.start("worker", slot)

    def replace(self, slot: int, attempt: int, delay: float) -> None:
        self.slots.replace("worker", slot, attempt, delay)

    def present(self, addrs: dict) -> list[int]:
        """Live worker slots whose container published its address, in slot order."""
        return sorted(s for (_, s) in self.live if protocol.kv_addr("worker", s) in addrs)

    @property
    def ring_slots(self) -> list[int]:
        """The published generation's worker slots, chief first; asked only once there is one
        (TRAINING, STOPPING and what they handle)."""
        if self.ring is None:
            raise AssertionError(f"no ring published yet, in {self.state.value}")
        return self.ring["slots"]

    def publish_ring(self, slots: list, event: str) -> None:
        self.gen += 1
        addrs = self.app.kv.get_prefix(protocol.KV_ADDR)
        self.ring = {"gen": self.gen, "slots": slots,
                     "worker": [addrs[protocol.kv_addr("worker", s)].decode() for s in slots]}
        self.app.kv[protocol.KV_RING] = json.dumps(self.ring).encode()
        self.app.kv[protocol.KV_CLUSTER] = json.dumps({"worker": self.ring["worker"]}).encode()
        self.progress_at_ring, self.first_round_seen = self.app.kv.get(protocol.KV_PROGRESS), False
        self.note_progress(self.progress_at_ring)
        self.reached_at_ring = self.reached
        self.events.add(event, gen=self.gen, slots=slots, workers=len(slots), cluster=self.ring["worker"])

    # -- observations -> events ------------------------------------------------------------------
    def step(self) -> tuple[str, str] | None:
        self.observe_slots()
        if self.done:
            return self.outcome
        addrs = self.app.kv.get_prefix(protocol.KV_ADDR)
        present = self.present(addrs)
        waited = self.clock() - self.since
        if self.state == State.GANG:
            if len(present) == self.job.workers or (
                    waited >= self.job.startup_wait and len(present) >= self.job.min_workers):
                self.dispatch(Event.GANG_COMPLETE, slots=present)
            elif waited > self.job.gang_timeout:
                self.dispatch(Event.GANG_TIMEOUT, present=present)
        elif self.state == State.REFORMING:
            if len(present) >= self.job.min_workers:
                self.dispatch(Event.RING_READY, slots=self.without_warned(present))
            elif waited > self.job.gang_timeout:
                self.dispatch(Event.GANG_TIMEOUT, present=present)
        else:
            self.sampler.sample(self.workers_alive())
            self.observe_exits(present)
            if self.state == State.TRAINING:
                outside = [s for s in self.without_warned(present) if s not in self.ring_slots]
                if outside and len(self.ring_slots) < self.job.workers:
                    self.dispatch(Event.WORKER_ARRIVED, slots=outside)
            progress = self.app.kv.get(protocol.KV_PROGRESS)
            value = self.note_progress(progress)
            if not self.first_round_seen and not self.done and progress != self.progress_at_ring \
                    and value is not None and value.get("gen", self.gen) == self.gen:
                self.dispatch(Event.PROGRESS, restored=value.get("restored_steps"), source=value.get("restored_from"))
        return self.outcome

    def note_progress(self, raw: bytes | None) -> dict | None:
        value = json.loads(raw.decode()) if raw else None
        if value is not None:
            self.reached = max(self.reached, int(value.get("steps") or 0))
        return value

    def observe_exits(self, present: list) -> None:
        """The ring's training processes' exits (``ring_exit/<slot>``) in this generation."""
        exits = {}
        for key, raw in self.app.kv.get_prefix(protocol.KV_RING_EXIT).items():
            value = json.loads(raw.decode())
            slot = int(key[len(protocol.KV_RING_EXIT):])
            if value["gen"] == self.gen and slot in self.ring_slots:
                exits[slot] = value
        chief = self.ring_slots[0]
        if exits.get(chief, {}).get("rc") == 0:
            self.dispatch(Event.FINISHED)
            return
        for slot, value in sorted(exits.items()):
            if value["rc"] in (0, protocol.STOP_EXIT) or self.exits.get(slot) == value:
                continue
            # A peer's loss can fail a survivor's collective before YARN reports the loss: a cluster
            # error waits EXIT_GRACE_S for that loss (then a new generation makes this exit stale).
            error_type = (value.get("error") or {}).get("type")
            first = self.exit_seen.setdefault((slot, value["gen"]), self.clock())
            if error_type in CLUSTER_ERRORS and self.clock() - first < EXIT_GRACE_S:  # not a hang: already waited
                continue
            self.exits[slot] = value
            self.dispatch(Event.PROCESS_FAILED, slot=slot, error=value.get("error"), rc=value["rc"])
            return
        if self.state == State.STOPPING and all(exits.get(s, {}).get("rc") == protocol.STOP_EXIT for s in self.ring_slots):
            self.dispatch(Event.RING_STOPPED, slots=present)

    def run(self) -> tuple[str, str]:
        return self.run_loop(0.5)

    def launch(self) -> None:
        self.since = self.clock()
        for slot in range(self.job.workers):
            self.start(slot)
