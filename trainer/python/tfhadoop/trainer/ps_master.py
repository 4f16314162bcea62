"""The job master of the parameter-server strategy: its states, events, table and handlers.

It starts every parameter server and worker container (``slots.Slots``), assembles the cluster
spec from the addresses they publish, runs the coordinator as a child process
(``coordinator_process``) and reacts to what it observes:

- a worker lost: training goes on with the others (the coordinator re-queues its closures); a
  replacement for the same slot and port is requested (preempted or node lost: at once, not
  counted; failed or hung: after a backoff, 2, 4, .. 30 s) and rejoins the running training;
  after ``max_worker_restarts`` failures the slot stays empty while ``min_workers`` are alive;
- a replacement back at another address: put at the slot's task index, the coordinator restarted
  from a fresh checkpoint with the new spec (``worker_moved``, then ``rescaled``);
- a parameter server lost: the coordinator is stopped, the PS replaced at the same address, the
  coordinator restarted from the latest checkpoint (a PS after ``max_ps_restarts``: FAILED);
- the coordinator failed: restarted with backoff, unless the error repeats or is not a cluster
  error (a model bug); hung (``watchdogs.CoordinatorWatchdog``): killed and restarted likewise;
- YARN's warning before a preemption: a worker gets no new closure, a checkpoint due soon is
  taken now; a warned PS: a checkpoint now.

``TRANSITIONS`` below is the whole state machine (docs/design/trainer.md shows it); the starting
is part of it (STARTING: no loop outside the table waits for the containers).
"""
from __future__ import annotations

import enum
import json
import socket

from tfhadoop.ports import free_port, free_ports
from tfhadoop.trainer import protocol
from tfhadoop.trainer.coordinator_process import CoordinatorProcess
from tfhadoop.trainer.master_core import MasterCore
from tfhadoop.trainer.ps_coordination import CoordinatorHandling
from tfhadoop.trainer.spec import JobSettings
from tfhadoop.trainer.state_table import Rule
from tfhadoop.trainer.watchdogs import CoordinatorWatchdog

K = protocol.EventKind
# A server whose heartbeat has been silent this long is not handed to a coordinator as "up": after
# a lost node its "up" key outlives its process until YARN declares the node lost.
SILENT_S = max(3 * protocol.HEARTBEAT_S, 10)


class State(str, enum.Enum):
    """Where the job is: what the coordinator process is doing, or the end."""

    STARTING = "starting"  # containers start; the spec is assembled from the addresses they publish
    WAITING = "waiting"  # a coordinator process waits for every server of the spec (and its backoff)
    TRAINING = "training"  # the coordinator trains with the spec it was given
    RESCALING = "rescaling"  # it was asked to checkpoint and exit 75: the spec changed
    PS_RECOVERY = "ps_recovery"  # no coordinator: a lost PS's replacement waits out its backoff
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class Event(str, enum.Enum):
    """What the master observes; ``PsMaster.step`` turns observations into these, one handler each."""

    AM_RESTARTED = "am_restarted"  # this master is attempt >= 2: the job's state is on HDFS
    CONTAINER_LOST = "container_lost"  # a worker or PS container ended (preempted, failed, killed, hung)
    HEARTBEAT_STALE = "heartbeat_stale"  # a role's heartbeat did not change for --hang-timeout s
    REPLACEMENT_DUE = "replacement_due"  # a lost slot's backoff is over
    SPEC_ASSEMBLED = "spec_assembled"  # every PS and the first workers published their addresses
    STARTUP_LATE = "startup_late"  # ... not within --startup-timeout, or their servers did not come up
    ADDRESSES_CHANGED = "addresses_changed"  # a replacement came back elsewhere, or a late worker arrived
    CLUSTER_UP = "cluster_up"  # every server of the first spec serves
    SERVERS_UP = "servers_up"  # every server of the spec serves, beats, and the backoff is over
    SERVERS_LATE = "servers_late"  # ... not within --startup-timeout of the coordinator's start
    SPEC_CHANGED = "spec_changed"  # the spec differs from the coordinator's and all its servers serve
    ALL_WORKERS_BACK = "all_workers_back"  # every worker the coordinator began with was lost; all serve again
    PROGRESS = "progress"  # the coordinator reported progress since it was given the spec
    COORDINATOR_STALE = "coordinator_stale"  # its heartbeat is silent, or it is stuck in one phase
    DRAIN_STALLED = "drain_stalled"  # asked to rescale, it completed no closure for DRAIN_STALL_S s
    COORDINATOR_EXITED = "coordinator_exited"
    PREEMPTION_WARNED = "preemption_warned"  # YARN announced it will take a container back (PreemptionMessage)


S = State
RUNNING = frozenset({S.WAITING, S.TRAINING, S.RESCALING, S.PS_RECOVERY})
ALIVE = RUNNING | {S.STARTING}

# The state machine, all of it: for each event, where it is handled, what its handler does, and
# where that can lead. ``dispatch`` (state_table.TableMachine) enforces both sets.
TRANSITIONS: dict[Event, Rule] = {
    Event.AM_RESTARTED: Rule(frozenset({S.STARTING}), frozenset({S.FAILED}),
                             "record the attempt and the checkpoint it resumes from; an outcome that attempt "
                             "1 decided (result.json) ends this attempt with it", stay=True),
    Event.CONTAINER_LOST: Rule(ALIVE, frozenset({S.PS_RECOVERY, S.WAITING, S.FAILED}),
                               "preempted, on a lost node or hung while starting, or preempted or on a lost node "
                               "later: replace at once, not counted; failed while starting: FAILED; a worker: "
                               "replace after backoff (2, 4, .. 30 s) or abandon the slot after "
                               "max_worker_restarts (FAILED below min_workers; reopened when a coordinator is "
                               "next spawned); a PS: stop the coordinator, replace, PS_RECOVERY (FAILED after "
                               "max_ps_restarts)", stay=True),
    Event.HEARTBEAT_STALE: Rule(ALIVE, frozenset(), "event hang_detected, kill the container: its loss follows "
                                                     "(counted as a failure) and replaces it", stay=True),
    Event.REPLACEMENT_DUE: Rule(ALIVE, frozenset({S.WAITING}), "start the slot's replacement container; a PS "
                                "while in PS_RECOVERY: spawn the next coordinator -> WAITING", stay=True),
    Event.SPEC_ASSEMBLED: Rule(frozenset({S.STARTING}), frozenset(),
                               "publish the first spec (cluster): every PS, and every worker or after "
                               "startup_wait s at least min_workers; the rest join later", stay=True),
    Event.STARTUP_LATE: Rule(frozenset({S.STARTING}), frozenset({S.FAILED}),
                             "fail: the containers did not start, or their servers did not come up, within "
                             "startup_timeout (not enough resources in the queue?)"),
    Event.ADDRESSES_CHANGED: Rule(RUNNING, frozenset(), "put moved and late workers into the spec "
                                                        "(worker_moved, workers_added)", stay=True),
    Event.CLUSTER_UP: Rule(frozenset({S.STARTING}), frozenset({S.WAITING}), "event cluster_up"),
    Event.SERVERS_UP: Rule(frozenset({S.WAITING}), frozenset({S.TRAINING}),
                           "hand the waiting coordinator the spec (cluster.json): every server up and heard "
                           "(a heartbeat since the last coordinator failure, none silent 10 s)"),
    Event.SERVERS_LATE: Rule(frozenset({S.WAITING}), frozenset({S.FAILED}), "fail: servers did not come up"),
    Event.SPEC_CHANGED: Rule(frozenset({S.TRAINING}), frozenset({S.RESCALING, S.WAITING}),
                             "ask the coordinator to checkpoint and exit 75; when every worker it "
                             "began with was lost (it cannot drain), restart it from the checkpoint now"),
    Event.ALL_WORKERS_BACK: Rule(frozenset({S.TRAINING}), frozenset({S.WAITING}),
                                 "restart the coordinator from the checkpoint now (rescaled, drained false): "
                                 "TensorFlow's recovery of every worker at once can leave it silent"),
    Event.PROGRESS: Rule(frozenset({S.TRAINING, S.RESCALING}), frozenset(),
                         "event first_progress (once per coordinator)", stay=True),
    Event.COORDINATOR_STALE: Rule(frozenset({S.TRAINING, S.RESCALING}), frozenset({S.WAITING, S.FAILED}),
                                  "event coordinator_hung (phase, silent or stuck), kill it; restart from the "
                                  "checkpoint after backoff as a failure (FAILED after max_coordinator_restarts)"),
    Event.DRAIN_STALLED: Rule(frozenset({S.RESCALING}), frozenset({S.WAITING}),
                              "restart the coordinator from the checkpoint now (rescaled, drained false): "
                              "TensorFlow waits for the moved worker at its old address, so the closures "
                              "in flight never finish"),
    Event.COORDINATOR_EXITED: Rule(frozenset({S.STARTING, S.WAITING, S.TRAINING, S.RESCALING}),
                                   frozenset({S.WAITING, S.SUCCEEDED, S.FAILED}),
                                   "while starting: FAILED; 0: SUCCEEDED; 75 after a rescale request: respawn "
                                   "with the new spec; a cluster error or a native crash (NativeCrash: SIGSEGV and kin): respawn after "
                                   "backoff; its port taken by another process: respawn on a new port; a model bug, a "
                                   "repeated error or more than max_coordinator_restarts: FAILED"),
    Event.PREEMPTION_WARNED: Rule(ALIVE, frozenset(),
                                  "event preemption_warned; unless --no-preemption-warnings: a worker gets no new "
                                  "closure until it is lost and its old address answers no more (avoid_workers.json; spared after 60 s: "
                                  "preemption_withdrawn; none avoided while every live worker is warned) and a "
                                  "checkpoint due within 15 s is taken now; a PS: a checkpoint now "
                                  "(checkpoint_soon.json)", stay=True),
}


class PsMaster(CoordinatorHandling, MasterCore):
    """The PS-strategy job master: ``run`` launches the containers and the coordinator, then
    ``step`` each second until the job ends."""

    TRANSITIONS = TRANSITIONS
    Event = Event
    State = State
    services = ["ps", "worker"]

    def __init__(self, app, job: JobSettings, work: str, clock=None, attempt: int = 1):
        import time

        slots = [("ps", i) for i in range(job.ps)] + [("worker", i) for i in range(job.workers)]
        super().__init__(app, job, work, clock or time.monotonic, attempt, dict(zip(slots, free_ports(len(slots)))))
        self.state = State.STARTING
        self.process = CoordinatorProcess(work)
        self.coordinator_watch = CoordinatorWatchdog(app, self.slots, self.heartbeats, self.job, self.now)
        self.started_at = 0.0  # when the containers were requested (self.clock)
        self.spec_at = 0.0  # when the first spec was published
        self.abandoned: set[int] = set()  # worker slots left empty after max_worker_restarts failures
        self.in_spec: list[int] = []  # worker slots in the cluster spec, in task-index order
        self.cluster: dict = {}  # the spec the containers see ("cluster" in the key-value store)
        self.init_coordinator_handling()

    def handlers(self):
        return {
            Event.AM_RESTARTED: self.on_am_restarted,
            Event.CONTAINER_LOST: self.on_container_lost,
            Event.HEARTBEAT_STALE: self.on_heartbeat_stale,
            Event.REPLACEMENT_DUE: self.on_replacement_due,
            Event.SPEC_ASSEMBLED: self.on_spec_assembled,
            Event.STARTUP_LATE: self.on_startup_late,
            Event.ADDRESSES_CHANGED: self.on_addresses_changed,
            Event.CLUSTER_UP: self.on_cluster_up,
            Event.SERVERS_UP: self.on_servers_up,
            Event.SERVERS_LATE: self.on_servers_late,
            Event.SPEC_CHANGED: self.on_spec_changed,
            Event.ALL_WORKERS_BACK: self.on_all_workers_back,
            Event.PROGRESS: self.on_progress,
            Event.COORDINATOR_STALE: self.on_coordinator_stale,
            Event.DRAIN_STALLED: self.on_drain_stalled,
            Event.COORDINATOR_EXITED: self.on_coordinator_exited,
            Event.PREEMPTION_WARNED: self.on_preemption_warned,
        }

    # -- handlers -------------------------------------------------------------------------------
    def on_container_lost(self, c) -> State | None:
        loss = self.slots.lost(c, **self.preemption.note_loss(c.id))
        role, slot = loss.role, loss.slot
        if role == "worker" and self.live.get((role, slot)) is None:
            self.lost_since_begin.add(slot)
        self.publish_avoided()
        attempt = self.slots.next_attempt(role, slot)
        if self.state == State.STARTING:
            if not (loss.preempted or loss.hung or loss.node_lost):  # cannot start: a setup error, fail fast
                return self.fail(f"{c.id} failed while starting: {loss.why}")
            return self.replace(role, slot, attempt=attempt, delay=0)
        if not loss.counted:  # YARN took it back, or its node is gone: not the slot's failure
            return self.replace(role, slot, attempt=attempt, delay=0)
        n = self.slots.count_failure(role, slot)
        limit = (self.job.max_worker_restarts if role == "worker" else self.job.max_ps_restarts)
        if n > limit:
            if role == "ps" or self.workers_held() < self.job.min_workers:
                return self.fail(f"{role}:{slot} lost {n} times ({loss.why})")
            self.events.add(K.SLOT_ABANDONED, role=role, slot=slot, workers_alive=self.workers_alive())
            self.abandoned.add(slot)
            return None
        from tfhadoop.trainer.slots import backoff_s

        return self.replace(role, slot, n, delay=backoff_s(n))

    def on_replacement_due(self, role: str, slot: int) -> State | None:
        return self.start_replacement(role, slot, self.state)

    def on_spec_assembled(self, present: list[int]) -> None:
        addrs = self.app.kv.get_prefix(protocol.KV_ADDR)
        self.in_spec = present
        self.spec_at = self.clock()
        self.publish_cluster({"ps": [addrs[protocol.kv_addr("ps", s)].decode() for s in range(self.job.ps)],
                              "worker": [addrs[protocol.kv_addr("worker", s)].decode() for s in present],
                              "chief": [self.chief_address()]})

    def chief_address(self) -> str:
        """The coordinator's address: this container's host and a port free now, which the
        coordinator binds seconds later."""
        return f"{socket.getfqdn()}:{free_port()}"

    def on_startup_late(self, why: str) -> State:
        return self.fail(f"{why} (not enough resources in queue {self.job.queue}?)")

    def on_addresses_changed(self, moved: dict, arrived: list, addrs: dict) -> None:
        cluster = {k: list(v) for k, v in self.cluster.items()}
        for (role, slot), (i, addr) in moved.items():
            self.events.add(protocol.moved_event(role), role=role, slot=slot, old=cluster[role][i], new=addr)
            cluster[role][i] = addr
            self.ports[(role, slot)] = int(addr.rsplit(":", 1)[1])  # the slot's next replacement tries it first
        if arrived:
            cluster["worker"] += [addrs[protocol.kv_addr("worker", s)].decode() for s in arrived]
            self.in_spec = self.in_spec + arrived
            self.events.add(K.WORKERS_ADDED, role="worker", slots=arrived, workers=len(cluster["worker"]))
        self.publish_cluster(cluster)

    def on_cluster_up(self) -> State:
        devices = {s: json.loads(self.app.kv[protocol.kv_up("worker", s)].decode()).get("cuda_visible_devices")
                   for s in self.in_spec}
        self.events.add(K.CLUSTER_UP, cluster=self.cluster, slots=self.in_spec, workers=len(self.cluster["worker"]),
                        cuda_visible_devices=devices)
        return State.WAITING

    def on_servers_up(self) -> State:
        self.begin_coordinator()
        return State.TRAINING

    def on_servers_late(self, missing: list) -> State:
        return self.fail(f"{', '.join(missing)} did not come up within {self.job.startup_timeout} s")

    # -- containers -------------------------------------------------------------------------------
    def start(self, role: str, slot: int) -> None:
        self.slots.start(role, slot)

    def replace(self, role: str, slot: int, attempt: int, delay: float = 0) -> State | None:
        """A replacement for a lost container, at once or after ``delay`` s of backoff. A lost PS
        (after the start) stops the coordinator (its variables are gone): PS_RECOVERY until the PS
        starts."""
        nxt = None
        if role == "ps" and self.state in RUNNING:
            self.stop_coordinator()
            nxt = State.PS_RECOVERY
        if self.slots.replace(role, slot, attempt, delay):
            return self.after_replacement_started(role, slot, nxt or self.state) or nxt
        return nxt

    def start_replacement(self, role: str, slot: int, state: State) -> State | None:
        self.slots.start_replacement(role, slot)
        return self.after_replacement_started(role, slot, state)

    def after_replacement_started(self, role: str, slot: int, state: State) -> State | None:
        """A PS replaced in PS_RECOVERY: spawn the next coordinator, which begins once every server
        is up (WAITING)."""
        if role == "ps" and state == State.PS_RECOVERY:
            self.spawn_coordinator()
            return State.WAITING
        return None

    def publish_cluster(self, cluster: dict) -> None:
        self.cluster = cluster
        self.app.kv[protocol.KV_CLUSTER] = json.dumps(cluster).encode()

    def spec_index(self, role: str, slot: int) -> int | None:
        """The slot's task index in the spec (workers are in arrival order); None: not in it."""
        if role == "ps":
            return slot
        return self.in_spec.index(slot) if slot in self.in_spec else None

    def spec_slots(self) -> list[tuple[str, int]]:
        return [("ps", s) for s in range(self.job.ps)] + [("worker", s) for s in self.in_spec]

    def missing_servers(self, up: dict) -> list[str]:
        """``up/...`` keys of the servers in the spec that are not serving (yet), or unheard lately."""
        return [protocol.kv_up(r, s) for r, s in self.spec_slots()
                if protocol.kv_up(r, s) not in up or self.unheard(r, s)]

    def unheard(self, role: str, slot: int) -> bool:
        """The slot's server has not beaten since the last coordinator failure, or has been silent
        for ``SILENT_S``: after a lost node its process is gone but its "up" key stays until YARN
        declares the node lost, and a coordinator given it would only fail again."""
        last = self.heartbeats.last_beat(role, slot)
        return last is not None and (last <= self.failed_at or self.clock() - last > SILENT_S)

    # -- the run --------------------------------------------------------------------------------
    def run(self) -> tuple[str, str]:
        """The coordinator process first (its imports overlap the containers' start), then the
        containers; then a round of observations each second (0.3 s while starting) until the end."""
        return self.run_loop(1.0, starting_period_s=0.3)

    def launch(self) -> None:
        self.spawn_coordinator()
        self.started_at = self.clock()
        for role, slot in self.ports:
            self.start(role, slot)

    def step(self) -> tuple[str, str] | None:
        """One round: observe containers, heartbeats, addresses and the coordinator, dispatch what
        changed; the outcome once the job ended."""
        self.observe_slots()
        self.publish_avoided()
        self.note_hdfs_retries()
        if self.state == State.STARTING:
            self.observe_start()
        elif self.state in RUNNING:
            self.sampler.sample(self.workers_alive())
            addrs = self.app.kv.get_prefix(protocol.KV_ADDR)
            changes = self.address_changes(addrs)
            if changes:
                self.dispatch(Event.ADDRESSES_CHANGED, **changes, addrs=addrs)
            up = self.app.kv.get_prefix(protocol.KV_UP)
            self.slots.note_up(up)
            self.observe_coordinator(up)
        return self.outcome

    def observe_start(self) -> None:
        """STARTING: the first spec once its addresses are in, then CLUSTER_UP once its servers serve;
        a coordinator that exits meanwhile, or a start slower than ``startup_timeout``, fails."""
        if (rc := self.process.poll()) is not None:
            self.dispatch(Event.COORDINATOR_EXITED, rc=rc)
            return
        timeout, waited = self.job.startup_timeout, self.clock() - self.started_at
        if not self.cluster:
            addrs = self.app.kv.get_prefix(protocol.KV_ADDR)
            missing_ps = [s for s in range(self.job.ps) if protocol.kv_addr("ps", s) not in addrs]
            present = [s for s in range(self.job.workers) if protocol.kv_addr("worker", s) in addrs]
            enough = len(present) == self.job.workers or (
                waited >= self.job.startup_wait and len(present) >= self.job.min_workers)
            if not missing_ps and enough:
                self.dispatch(Event.SPEC_ASSEMBLED, present=present)
            elif waited > timeout:
                why = (f"ps:{missing_ps[0]} did not start within {timeout:.0f} s" if missing_ps else
                       f"{len(present)} of {self.job.workers} workers started within {timeout:.0f} s, "
                       f"fewer than --min-workers {self.job.min_workers}")
                self.dispatch(Event.STARTUP_LATE, why=why)
                return
        if self.cluster and self.state == State.STARTING:
            up = self.app.kv.get_prefix(protocol.KV_UP)
            missing = [protocol.kv_up(r, s) for r, s in self.spec_slots() if protocol.kv_up(r, s) not in up]
            if not missing:
                self.dispatch(Event.CLUSTER_UP)
            elif self.clock() - self.spec_at > timeout:
                self.dispatch(Event.STARTUP_LATE, why=f"{missing[0]} did not come up within {timeout:.0f} s")

    def address_changes(self, addrs: dict) -> dict | None:
        """What the containers published since the spec was made: a replacement at a new address
        (the coordinator cannot reach it at the old one) and workers that were not in the spec."""
        moved = {}
        for role, slot in self.live:
            i, addr = self.spec_index(role, slot), addrs.get(protocol.kv_addr(role, slot))
            if i is not None and addr and addr.decode() != self.cluster[role][i]:
                moved[(role, slot)] = (i, addr.decode())
        arrived = [s for s in range(self.job.workers)
                   if s not in self.in_spec and protocol.kv_addr("worker", s) in addrs]
        return {"moved": moved, "arrived": arrived} if moved or arrived else None
