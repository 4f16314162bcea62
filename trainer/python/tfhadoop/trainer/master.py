"""The job master: runs as Skein's ``master.script`` in the application master container.

It starts every parameter server and worker container itself (``add_container`` with the slot
and port each must use), assembles the cluster spec from the addresses the containers publish
(Skein key-value store), runs the coordinator as a child process, and watches the containers:

- a worker lost (preempted, node lost, crashed): training goes on with the others (the
  coordinator re-queues its closures); a replacement for the same slot and port is requested at
  once and rejoins the running training. Preemptions are not failures and are not counted; a
  slot whose containers keep failing gets its next replacement after a backoff (2, 4, ... 30 s),
  and after ``max_worker_restarts`` failures the slot stays empty while at least
  ``min_workers`` are alive (a PS after ``max_ps_restarts``: the job fails);
- a replacement that comes back at another address (another host, or its port was taken): the
  master puts that address at the slot's task index and restarts the coordinator from a fresh
  checkpoint with the new spec (``worker_moved``, then the scale-up path: ``rescaled``);
- a parameter server lost: the coordinator is stopped, a replacement PS is started at the same
  address and the coordinator restarts from the latest checkpoint on HDFS;
- the coordinator fails: restarted with backoff, unless the error repeats or is not a cluster
  error (a model bug): then the application fails at once with that error. Only its own failures
  count against ``max_coordinator_restarts``; one the master stopped (a lost PS) or restarted for
  a new spec does not.

- a worker or PS whose heartbeat (``hb/<role>/<slot>``, bumped by a thread of the role) stops
  for ``hang_timeout`` s: killed, then replaced as a lost container (``hang_detected``);
- the coordinator hung: its report (``coordinator`` in the key-value store: phase and heartbeat,
  trainer/python/tfhadoop/trainer/phases.py) silent for ``hang_timeout`` s, or one phase without progress longer
  than that phase's ``phase_timeouts`` limit: killed and restarted from the checkpoint as after a
  failure (``coordinator_hung``);
- the application master lost: YARN starts attempt 2, whose master restarts every role and the
  coordinator from the latest checkpoint in the job directory (``am_restarted``);
- YARN's warning before it preempts a container (``preemption_warned``: the PreemptionMessage that
  Skein's application master receives, recorded by the agent in yarn/am-agent): a worker is
  handed no new closure (``avoid_workers.json``: its closures in flight finish, so nothing of
  its work is lost at the kill) and a checkpoint due within ``PREEMPTION_CHECKPOINT_WITHIN_S`` is
  taken now; a warned PS: a checkpoint now (the restart after its loss resumes from there).
  ``--no-preemption-warnings``: the events only, no reaction.

All of this is one state machine: ``State``, ``Event`` and the ``TRANSITIONS`` table, one
``on_<event>`` handler each (docs/design/trainer.md shows the table).

The coordinator process is started before the servers are up (it imports TensorFlow and the model
meanwhile) and begins when the master writes ``cluster.json``: once every server in the spec is up.

Every failure and recovery is an event (time, role, slot, container, exit status, diagnostics),
in ``<checkpoint_dir>/events.jsonl`` (all) and the key-value store under ``events`` (the newest).
"""
from __future__ import annotations

import collections
import dataclasses
import enum
import json
import os
import socket
import subprocess
import sys
import time
from typing import TYPE_CHECKING

from tfhadoop.ports import free_port, free_ports
from tfhadoop.trainer import children, protocol
from tfhadoop.trainer.job import job_settings
from tfhadoop.trainer.jobpage import Sampler

if TYPE_CHECKING:
    from collections.abc import Callable

    import skein

REPLACE_BACKOFF_MAX_S = 30  # a slot whose containers keep failing waits 2, 4, ... up to this many s
# YARN's diagnostics (Skein has no exit status) of a container YARN took back (-102) and of one on a
# NodeManager declared LOST (-100): neither is the container's failure.
PREEMPTED_DIAGNOSTICS = "preempted"
NODE_LOST_DIAGNOSTICS = "released on a *lost* node"
# A server whose heartbeat has been silent this long is not handed to a coordinator as "up": after
# a lost node its "up" key outlives its process until YARN declares the node lost.
SILENT_S = max(3 * protocol.HEARTBEAT_S, 10)
CLUSTER_ERRORS = ("UnavailableError", "AbortedError", "CancelledError", "DeadlineExceededError")
# YARN kills a container it announced for preemption after
# yarn.resourcemanager.monitor.capacity.preemption.max_wait_before_kill (default 15 s): a checkpoint
# due that soon after a worker's warning is taken at once, while every worker is still there.
PREEMPTION_CHECKPOINT_WITHIN_S = 15.0
# A warned container still running this long after its warning was spared (YARN found the resources
# elsewhere, or the other application ended): it gets work again (``preemption_withdrawn``).
PREEMPTION_WITHDRAWN_S = 60.0


class EventLog:
    """Every failure and recovery: appended line by line to ``<job_dir>/events.jsonl`` on HDFS, the
    full log, which outlives the application; the newest ones (``protocol.EVENTS_TAIL``) in the
    key-value store (``events``) for live display: rewriting the whole list there on each event
    would pass gRPC's 4 MB message limit in a long job. Each event carries the application id (a
    resumed job appends to the same log) and ``seq``, its number in this application's events,
    by which a client shows each event once, whether from the tail or from the file."""

    def __init__(self, app, job_dir: str, app_id: str | None = None):
        self.app, self.url, self.events = app, protocol.job_file(job_dir, protocol.EVENTS_FILE), []
        self.app_id, self.base = app_id, 0  # base: events of this application before this attempt
        self.recent: collections.deque[str] = collections.deque(maxlen=protocol.EVENTS_TAIL)  # as JSON
        self.unwritten: list[str] = []  # lines HDFS refused (safe mode, NameNode restart): appended later

    def resume(self) -> None:
        """A later attempt of the same application numbers its events after the earlier ones'."""
        from tfhadoop.trainer import jobdir

        url = self.url.rsplit("/", 1)[0]
        self.base = max((jobdir.seq(e, i) + 1 for i, e in enumerate(jobdir.events(url, self.app_id))), default=0)

    def add(self, kind: str, **fields) -> dict:
        event = {"time": time.time(), "event": kind, **fields, "seq": self.base + len(self.events)}
        if self.app_id:
            event["app"] = self.app_id
        self.events.append(event)
        self.recent.append(json.dumps(event))
        print("event:", self.recent[-1], flush=True)
        self.app.kv[protocol.KV_EVENTS] = self.tail()
        self.unwritten.append(self.recent[-1])
        self.flush()
        return event

    def flush(self) -> None:
        """Append the lines not yet in the file; those HDFS refuses stay for the next try (each
        event and each round of the master's loop), so an outage delays lines, never drops them."""
        if not self.unwritten:
            return
        try:
            from tfhadoop.connectors import hdfs

            hdfs.append_bytes(self.url, "".join(line + "\n" for line in self.unwritten).encode())
            self.unwritten.clear()
        except Exception as exc:  # noqa: BLE001 - kept for the next try; the key-value store's tail has them
            print(f"cannot append to {self.url} ({len(self.unwritten)} line(s) kept for later): {exc}", flush=True)

    def flush_waiting(self, budget_s: float | None = None, sleep=time.sleep) -> None:
        """At the job's end: append what HDFS refused, waiting out an outage (``hdfs.retry``'s
        backoff, its budget unless ``budget_s``), since no later round of the loop will try again.
        Lines still refused after that are said in the log (the key-value tail had them)."""
        from tfhadoop.connectors import hdfs

        def appended():
            self.flush()
            if self.unwritten:
                raise OSError(f"{len(self.unwritten)} event line(s) not appended to {self.url}")

        try:
            hdfs.retry(appended, "event log", budget_s=hdfs.RETRY_BUDGET_S if budget_s is None else budget_s,
                       sleep=sleep)
        except OSError as exc:
            print(f"giving up: {exc}", flush=True)

    def tail(self) -> bytes:
        """The newest events as JSON, at most ``EVENTS_TAIL`` of them and ``EVENTS_TAIL_BYTES``."""
        lines = list(self.recent)
        size = sum(len(line) + 1 for line in lines) + 1
        while len(lines) > 1 and size > protocol.EVENTS_TAIL_BYTES:
            size -= len(lines.pop(0)) + 1
        return ("[" + ",".join(lines) + "]").encode()

    def rewrite(self) -> None:
        """Replace this application's lines by ``self.events`` (after details were added to past
        events), keeping other applications' lines; written whole, then renamed over."""
        from tfhadoop.connectors import hdfs

        self.recent.clear()
        self.recent.extend(json.dumps(e) for e in self.events[-protocol.EVENTS_TAIL:])
        try:
            old = hdfs.read_bytes(self.url).decode().splitlines() if hdfs.exists(self.url) else []
            kept = [line for line in old if line.strip() and (json.loads(line).get("app") != self.app_id
                                                              or json.loads(line).get("seq", 0) < self.base)]
            hdfs.write_bytes(self.url, "".join(line + "\n" for line in kept + [json.dumps(e) for e in self.events])
                                .encode())
        except Exception as exc:  # noqa: BLE001 - the appended log stays as it was
            print(f"cannot rewrite {self.url}: {exc}", flush=True)


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
    """What the master observes; ``Master.step`` turns observations into these, one handler each."""

    AM_RESTARTED = "am_restarted"  # this master is attempt >= 2: the job's state is on HDFS
    CONTAINER_LOST = "container_lost"  # a worker or PS container ended (preempted, failed, killed, hung)
    HEARTBEAT_STALE = "heartbeat_stale"  # a role's heartbeat did not change for --hang-timeout s
    REPLACEMENT_DUE = "replacement_due"  # a lost slot's backoff is over
    ADDRESSES_CHANGED = "addresses_changed"  # a replacement came back elsewhere, or a late worker arrived
    CLUSTER_UP = "cluster_up"  # every PS and the first workers serve: the first spec is published
    SERVERS_UP = "servers_up"  # every server of the spec serves, beats, and the backoff is over
    SERVERS_LATE = "servers_late"  # ... not within --startup-timeout of the coordinator's start
    SPEC_CHANGED = "spec_changed"  # the spec differs from the coordinator's and all its servers serve
    PROGRESS = "progress"  # the coordinator reported progress since it was given the spec
    COORDINATOR_STALE = "coordinator_stale"  # its heartbeat is silent, or it is stuck in one phase
    COORDINATOR_EXITED = "coordinator_exited"
    PREEMPTION_WARNED = "preemption_warned"  # YARN announced it will take a container back (PreemptionMessage)


S = State
RUNNING = frozenset({S.WAITING, S.TRAINING, S.RESCALING, S.PS_RECOVERY})
ALIVE = RUNNING | {S.STARTING}


@dataclasses.dataclass(frozen=True)
class Rule:
    states: frozenset  # the states in which the event is handled (elsewhere it is ignored)
    next: frozenset  # the other states the handler may lead to
    does: str  # what the handler does (docs/design/trainer.md shows this table)
    stay: bool = False  # it may also leave the state as it is


class TableMachine:
    """``dispatch``/``fail``/``done`` over a class's ``TRANSITIONS`` table, shared by the PS master
    and the allreduce ring master: an event is handled only in the states its rule names, by
    ``on_<event>``, which returns the next state (None: stay), and that state must be one the rule
    allows. Subclasses' ``State`` enums have SUCCEEDED and FAILED."""

    TRANSITIONS: dict = {}

    def dispatch(self, event, **data) -> None:
        rule = self.TRANSITIONS[event]
        if self.state not in rule.states:
            return
        before = self.state
        nxt = getattr(self, f"on_{event.value}")(**data) or self.state
        if nxt not in rule.next and not (rule.stay and nxt == before):
            raise AssertionError(f"{event.value} in {self.state.value} led to {nxt.value}, not in {sorted(rule.next)}")
        self.state = nxt

    def fail(self, diagnostics: str):
        self.outcome = ("FAILED", diagnostics)
        return type(self.state).FAILED

    @property
    def done(self) -> bool:
        return self.state in (type(self.state).SUCCEEDED, type(self.state).FAILED)

    def final(self) -> tuple[str, str]:
        """The outcome of a machine that is ``done``: ``fail``, or the handler that succeeded, set it."""
        if self.outcome is None:
            raise AssertionError(f"{self.state.value} without an outcome")
        return self.outcome


# The state machine, all of it: for each event, where it is handled, what its handler
# (``Master.on_<event>``) does, and where that can lead. ``Master.dispatch`` enforces both sets.
TRANSITIONS: dict[Event, Rule] = {
    Event.AM_RESTARTED: Rule(frozenset({S.STARTING}), frozenset({S.FAILED}),
                             "record the attempt and the checkpoint it resumes from; an outcome that attempt "
                             "1 decided (result.json) ends this attempt with it", stay=True),
    Event.CONTAINER_LOST: Rule(ALIVE, frozenset({S.PS_RECOVERY, S.WAITING, S.FAILED}),
                               "preempted, on a lost node or hung while starting, or preempted or on a lost node "
                               "later: replace at once, not counted; failed while starting: FAILED; a worker: "
                               "replace after backoff (2, 4, .. "
                               "30 s) or abandon the slot after max_worker_restarts (FAILED below "
                               "min_workers; reopened when a coordinator is next spawned); a PS: stop the coordinator, replace, PS_RECOVERY (FAILED after "
                               "max_ps_restarts)", stay=True),
    Event.HEARTBEAT_STALE: Rule(ALIVE, frozenset(), "event hang_detected, kill the container: its loss follows "
                                                     "(counted as a failure) and replaces it", stay=True),
    Event.REPLACEMENT_DUE: Rule(ALIVE, frozenset({S.WAITING}), "start the slot's replacement container; a PS "
                                "while in PS_RECOVERY: spawn the next coordinator -> WAITING", stay=True),
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
    Event.PROGRESS: Rule(frozenset({S.TRAINING, S.RESCALING}), frozenset(),
                         "event first_wave (once per coordinator)", stay=True),
    Event.COORDINATOR_STALE: Rule(frozenset({S.TRAINING, S.RESCALING}), frozenset({S.WAITING, S.FAILED}),
                                  "event coordinator_hung (phase, silent or stuck), kill it; restart from the "
                                  "checkpoint after backoff as a failure (FAILED after max_coordinator_restarts)"),
    Event.COORDINATOR_EXITED: Rule(frozenset({S.WAITING, S.TRAINING, S.RESCALING}),
                                   frozenset({S.WAITING, S.SUCCEEDED, S.FAILED}),
                                   "0: SUCCEEDED; 75 after a rescale request: respawn with the new spec; a "
                                   "cluster error: respawn after backoff; a model bug, a repeated error or "
                                   "more than max_coordinator_restarts: FAILED"),
    Event.PREEMPTION_WARNED: Rule(ALIVE, frozenset(),
                                  "event preemption_warned; unless --no-preemption-warnings: a worker gets no new "
                                  "closure until it is lost (avoid_workers.json; spared after 60 s: preemption_withdrawn; "
                                  "none avoided while every live worker is warned) and a checkpoint due within 15 s is taken now; a PS: a "
                                  "checkpoint now (checkpoint_soon.json)", stay=True),
}


def transition_table() -> str:
    """TRANSITIONS as the Markdown table in docs/design/trainer.md (a test keeps them equal)."""
    order = list(State)

    def states(xs):
        return ", ".join(x.value for x in sorted(xs, key=order.index))

    rows = ["| event | handled in | handler does | leads to |", "|---|---|---|---|"]
    rows += [f"| {e.value} | {states(r.states)} | {r.does} | {', '.join(['(same)'] * r.stay + [states(r.next)] * bool(r.next))} |"
             for e, r in TRANSITIONS.items()]
    return "\n".join(rows) + "\n"


class OnMaster:
    """What the watches below use of the master that mixes them in (TableMachine and the
    master's ``__init__`` provide them): declared, not assigned, so a type checker knows them."""

    app: skein.ApplicationClient
    job: dict
    clock: Callable[[], float]
    events: EventLog
    live: dict[tuple[str, int], str]  # (role, slot) -> skein container id
    done: bool
    dispatch: Callable[..., None]


class HeartbeatWatch(OnMaster):
    """Hang detection shared by the PS master and the ring master: when each live container's
    heartbeat (``hb/<role>/<slot>`` in the key-value store) last changed, and the kill of one
    silent for ``hang_timeout`` s. Needs, besides :class:`OnMaster`'s, the attributes below."""

    beats: dict[str, tuple[bytes, float]]  # container -> (last heartbeat, when it changed)
    hung: set[str]  # containers killed because their heartbeat stopped

    def watch_heartbeats(self, stale_event) -> None:
        """Read the heartbeats, note which changed, and dispatch ``stale_event`` (the master's own
        HEARTBEAT_STALE) for each live container silent for ``hang_timeout`` s (0: off)."""
        beats = self.app.kv.get_prefix(protocol.KV_HEARTBEAT)
        self.note_beats(beats)
        if self.job["hang_timeout"] and not self.done:
            for stale in self.stale_heartbeats(beats):
                self.dispatch(stale_event, **stale)

    def note_beats(self, beats: dict) -> None:
        """When each live container's heartbeat last changed, by this master's clock (the roles'
        clocks are never compared)."""
        now = self.clock()
        for (role, slot), cid in self.live.items():
            value = beats.get(f"{protocol.KV_HEARTBEAT}{role}/{slot}")
            if value is None or value.split(b" ", 1)[0].decode() != cid:
                continue
            last = self.beats.get(cid)
            if last is None or last[0] != value:
                self.beats[cid] = (value, now)

    def silent_for(self, role: str, slot: int) -> float:
        """Seconds since the slot's live container last beat; 0 before its first beat (then
        ``startup_timeout`` covers it) or when no container is live."""
        last = self.beats.get(self.live.get((role, slot), ""))
        return self.clock() - last[1] if last else 0.0

    def stale_heartbeats(self, beats: dict) -> list[dict]:
        """Live containers whose heartbeat has not changed for ``hang_timeout`` s. A container
        counts from its first beat: before that, ``startup_timeout`` covers it."""
        out = []
        for (role, slot), cid in sorted(self.live.items()):
            silent = self.silent_for(role, slot)
            if cid not in self.hung and silent > self.job["hang_timeout"]:
                out.append({"role": role, "slot": slot, "container": cid, "silent_s": silent})
        return out

    def on_heartbeat_stale(self, role: str, slot: int, container: str, silent_s: float) -> None:
        self.hung.add(container)
        self.events.add("hang_detected", role=role, slot=slot, container=container, silent_s=round(silent_s, 1),
                        hang_timeout=self.job["hang_timeout"])
        try:
            self.app.kill_container(container)
        except Exception as exc:  # noqa: BLE001 - it ended meanwhile: its loss is seen all the same
            print(f"cannot kill {container}: {exc}", flush=True)


class PreemptionWatch(OnMaster):
    """YARN's preemption warnings, shared by the PS master and the ring master: the lines the agent
    in Skein's application master JVM (yarn/am-agent) appends to ``PREEMPTION_WARNINGS_FILE`` in
    the work dir, each a container YARN named in a PreemptionMessage, turned into the master's own
    PREEMPTION_WARNED event with the role and slot of that container. ``warned`` holds the warned
    containers (-> when, by ``clock``) until they are lost or spared. Needs, besides
    :class:`OnMaster`'s, the attributes below."""

    work: str
    containers: dict[str, tuple[str, int]]  # skein container id -> (role, slot)
    warned: dict[str, float]
    warnings_read: int  # bytes of PREEMPTION_WARNINGS_FILE read

    def read_preemption_warnings(self) -> list[dict]:
        """The complete lines appended since the last call (a line still being written waits)."""
        path = os.path.join(self.work, protocol.PREEMPTION_WARNINGS_FILE)
        try:
            with open(path, "rb") as f:
                f.seek(self.warnings_read)
                data = f.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1
        self.warnings_read += end
        out = []
        for line in data[:end].splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                print(f"ignoring a malformed line of {path}: {line[:200]!r}", flush=True)
        return out

    def watch_preemption_warnings(self, event) -> None:
        """Dispatch ``event`` for each new warning, and forget the warnings of containers still
        running ``PREEMPTION_WITHDRAWN_S`` after them (``preemption_withdrawn``)."""
        warnings = self.read_preemption_warnings()
        if warnings:
            by_yarn_id = {c.yarn_container_id: c.id for c in self.app.get_containers(services=["ps", "worker"])
                          if getattr(c, "yarn_container_id", None)}
            for w in warnings:
                yarn_id = w.get("container")
                cid = by_yarn_id.get(yarn_id) if yarn_id else None
                other = ("master", None) if yarn_id == os.environ.get("CONTAINER_ID") else (None, None)
                role, slot = self.containers.get(cid, other) if cid else other
                if not self.done:
                    self.dispatch(event, role=role, slot=slot, container=cid, yarn_container=w.get("container"),
                                  contract=w.get("contract"), warned_at=(w.get("time") or 0) / 1000)
        for cid, at in list(self.warned.items()):
            if self.clock() - at > PREEMPTION_WITHDRAWN_S and cid in self.live.values():
                del self.warned[cid]
                role, slot = self.containers[cid]
                self.events.add("preemption_withdrawn", role=role, slot=slot, container=cid,
                                after_s=round(self.clock() - at, 1))

    def note_warned_loss(self, cid: str) -> dict:
        """For the container_lost event: how long after its warning a warned container went."""
        at = self.warned.pop(cid, None)
        return {} if at is None else {"warned_s": round(self.clock() - at, 1)}


class CoordinatorWatch(OnMaster):
    """The coordinator's watchdog on the master's side: when its report (``protocol.KV_COORDINATOR``,
    written by trainer/python/tfhadoop/trainer/phases.py) last had a new ``beat`` and a new ``(phase, mark)``, by
    this master's clock. Needs, besides :class:`OnMaster`'s, the attributes below."""

    coordinator: subprocess.Popen | None
    replacing: set[tuple[str, int]]
    delayed: dict[tuple[str, int], float]
    silent_for: Callable[[str, int], float]  # HeartbeatWatch's

    def servers_quiet(self) -> bool:
        """A server's heartbeat has missed two beats, or a lost one is not back: the coordinator's
        own heartbeat is then not judged. Seen on the embedded cluster: while a worker was stopped,
        the coordinator's heartbeat thread stopped too (a TensorFlow call waiting on that worker
        holds the GIL), and the worker's hang would also have restarted the coordinator."""
        quiet = 2 * protocol.HEARTBEAT_S + 1
        return bool(self.replacing or self.delayed) or any(self.silent_for(r, s) > quiet for r, s in self.live)

    def workers_serving(self) -> int:
        """Live workers whose server is up (a replacement's ``up`` key is new: ``replace`` drops the old)."""
        up = self.app.kv.get_prefix(protocol.KV_UP)
        return sum(1 for role, slot in self.live if role == "worker" and f"{protocol.KV_UP}worker/{slot}" in up)

    def watch_coordinator(self) -> None:
        """Judge the coordinator just given the spec from now on (an older report is not its own)."""
        now = self.clock()
        self.coord_seen = {"beat": None, "beat_at": now, "mark": None, "mark_at": now, "phase": None}

    def stale_coordinator(self) -> dict | None:
        """The data of a COORDINATOR_STALE event, or None: its heartbeat silent for ``hang_timeout``
        s (counted from its first beat, as a container's), or its phase unchanged, without
        progress, longer than ``phase_timeouts[phase]``. "training" does not count while no worker
        serves (all lost, replacements not up): the coordinator then waits for them, no hang."""
        if self.coordinator is None or not hasattr(self, "coord_seen"):
            return None
        seen, now = self.coord_seen, self.clock()
        raw = self.app.kv.get(protocol.KV_COORDINATOR)
        report = json.loads(raw.decode()) if raw else {}
        if report.get("pid") == getattr(self.coordinator, "pid", None):
            if report.get("beat") != seen["beat"]:
                seen.update(beat=report.get("beat"), beat_at=now)
            if (report.get("phase"), report.get("mark")) != (seen["phase"], seen["mark"]):
                seen.update(phase=report.get("phase"), mark=report.get("mark"), mark_at=now)
        if seen["phase"] == protocol.PHASE_TRAINING and not self.workers_serving():
            seen["mark_at"] = now
        if self.servers_quiet():
            seen["beat_at"] = now
        silent, in_phase = now - seen["beat_at"], now - seen["mark_at"]
        limit = self.job["phase_timeouts"].get(seen["phase"])
        data = {"phase": seen["phase"], "silent_s": silent, "in_phase_s": in_phase}
        if seen["beat"] is not None and self.job["hang_timeout"] and silent > self.job["hang_timeout"]:
            return {**data, "reason": "silent", "limit_s": self.job["hang_timeout"]}
        if limit and in_phase > limit:
            return {**data, "reason": "stuck", "limit_s": limit}
        return None


class Master(TableMachine, HeartbeatWatch, CoordinatorWatch, PreemptionWatch):
    TRANSITIONS = TRANSITIONS

    def __init__(self, app, job: dict, work: str, clock=time.monotonic, attempt: int = 1):
        self.app, self.job, self.work, self.clock, self.attempt = app, job_settings(job), work, clock, attempt
        job = self.job
        self.state = State.STARTING
        self.outcome: tuple[str, str] | None = None  # (final status, diagnostics) once SUCCEEDED/FAILED
        self.decided_before = False  # the outcome is an earlier attempt's (result.json)
        self.events = EventLog(app, job["checkpoint_dir"], getattr(app, "id", None))
        self.sampler = Sampler(app, job["checkpoint_dir"], getattr(app, "id", None))
        slots = [("ps", i) for i in range(job["ps"])] + [("worker", i) for i in range(job["workers"])]
        self.ports = dict(zip(slots, free_ports(len(slots))))
        self.containers: dict[str, tuple[str, int]] = {}  # skein container id -> (role, slot)
        self.live: dict[tuple[str, int], str] = {}  # (role, slot) -> skein container id
        self.restarts: dict[tuple[str, int], int] = {}
        self.seen_finished: set[str] = set()
        self.replacing: set[tuple[str, int]] = set()  # replacements whose server is not up yet
        self.delayed: dict[tuple[str, int], float] = {}  # replacements waiting out a backoff -> due time
        self.beats: dict[str, tuple[bytes, float]] = {}  # container -> (last heartbeat, when it changed)
        self.hung: set[str] = set()  # containers killed because their heartbeat stopped
        self.abandoned: set[int] = set()  # worker slots left empty after max_worker_restarts failures
        self.coordinator: subprocess.Popen | None = None  # None: stopped for a lost PS, none yet
        self.coordinator_attempts = 0  # coordinator processes started, for the events' ``attempt``
        self.coordinator_failures = 0  # only these count against max_coordinator_restarts
        self.last_error: dict | None = None
        self.hdfs_retries_seen = 0  # entries of the coordinator's hdfs_retries already logged
        self.failed_at = float("-inf")  # when the coordinator last failed (self.clock)
        self.in_spec: list[int] = []  # worker slots in the cluster spec, in task-index order
        self.cluster: dict = {}  # the spec the containers see ("cluster" in the key-value store)
        self.given: dict | None = None  # the spec the current coordinator began with; None: not begun
        self.given_slots: list[int] = []  # the worker slots of that spec
        self.lost_since_begin: set[int] = set()  # of those, the slots whose worker was lost since
        self.begin_after = 0.0  # backoff: the current coordinator begins no earlier (self.clock)
        self.spawned_at = 0.0  # when the current coordinator process was started (self.clock)
        self.progress_at_begin: bytes | None = None  # "progress" when it was given the spec
        self.first_wave_seen = True
        self.rescale_pending = False
        self.warnings_read = 0  # bytes of PREEMPTION_WARNINGS_FILE read
        self.warned: dict[str, float] = {}  # containers YARN announced it will preempt -> when (self.clock)
        self.avoiding: list[int] | None = None  # the task indexes last written to AVOID_WORKERS_FILE
        self.checkpoint_requests = 0

    # -- the state machine's handlers (dispatch: TableMachine) ---------------------------------
    def on_am_restarted(self) -> State | None:
        from tfhadoop.trainer import jobdir

        result = jobdir.result(self.job["checkpoint_dir"], getattr(self.app, "id", None))
        if result and result.get("status") == "FAILED":  # attempt 1 decided; Skein retried its FAILED
            self.decided_before = True
            return self.fail(result.get("diagnostics", "failed in an earlier attempt"))
        state = jobdir.latest_state(self.job["checkpoint_dir"]) or {}
        self.events.add("am_restarted", role="master", attempt=self.attempt,
                        checkpoint={k: state.get(k) for k in ("epoch", "steps")} if state else None)
        return None

    def on_container_lost(self, c) -> State | None:
        self.seen_finished.add(c.id)
        role, slot = self.containers[c.id]
        if self.live.get((role, slot)) == c.id:
            del self.live[(role, slot)]
            if role == "worker":
                self.lost_since_begin.add(slot)
        self.publish_alive()
        hung = c.id in self.hung
        message = (c.exit_message or "").lower()
        preempted = not hung and PREEMPTED_DIAGNOSTICS in message
        node_lost = not hung and NODE_LOST_DIAGNOSTICS in message
        self.events.add("container_lost", role=role, slot=slot, container=c.id, preempted=preempted, hung=hung,
                        node_lost=node_lost, yarn_container=c.yarn_container_id, state=str(c.state),
                        diagnostics=c.exit_message, **self.note_warned_loss(c.id))
        self.publish_avoided()
        retries = self.restarts.get((role, slot), 0)
        if self.state == State.STARTING:
            if not (preempted or hung or node_lost):  # a container that cannot start is a setup error: fail fast
                return self.fail(f"{c.id} failed while starting: {c.exit_message}")
            self.replace(role, slot, attempt=retries + 1, delay=0)
            return None
        if preempted or node_lost:  # YARN took it back, or its node is gone: not the slot's failure, not counted
            return self.replace(role, slot, attempt=retries + 1, delay=0)
        n = self.restarts[(role, slot)] = retries + 1
        limit = self.job["max_worker_restarts" if role == "worker" else "max_ps_restarts"]
        if n > limit:
            alive = self.workers_alive()
            if role == "ps" or alive < self.job["min_workers"]:
                return self.fail(f"{role}:{slot} lost {n} times ({c.exit_message})")
            self.events.add("slot_abandoned", role=role, slot=slot, workers_alive=alive)
            self.abandoned.add(slot)
            return None
        return self.replace(role, slot, n, delay=0 if n == 1 else min(2 ** (n - 1), REPLACE_BACKOFF_MAX_S))

    def on_replacement_due(self, role: str, slot: int) -> State | None:
        return self.start_replacement(role, slot, self.state)

    def on_addresses_changed(self, moved: dict, arrived: list, addrs: dict) -> None:
        cluster = {k: list(v) for k, v in self.cluster.items()}
        for (role, slot), (i, addr) in moved.items():
            self.events.add(f"{role}_moved", role=role, slot=slot, old=cluster[role][i], new=addr)
            cluster[role][i] = addr
            self.ports[(role, slot)] = int(addr.rsplit(":", 1)[1])  # the slot's next replacement tries it first
        if arrived:
            cluster["worker"] += [addrs[f"addr/worker/{s}"].decode() for s in arrived]
            self.in_spec = self.in_spec + arrived
            self.events.add("workers_added", role="worker", slots=arrived, workers=len(cluster["worker"]))
        self.publish_cluster(cluster)

    def on_cluster_up(self) -> State:
        devices = {s: json.loads(self.app.kv[f"up/worker/{s}"].decode()).get("cuda_visible_devices")
                   for s in self.in_spec}
        self.events.add("cluster_up", cluster=self.cluster, slots=self.in_spec, workers=len(self.cluster["worker"]),
                        cuda_visible_devices=devices)
        return State.WAITING

    def on_servers_up(self) -> State:
        self.begin_coordinator()
        return State.TRAINING

    def on_servers_late(self, missing: list) -> State:
        return self.fail(f"{', '.join(missing)} did not come up within {self.job['startup_timeout']} s")

    def on_spec_changed(self) -> State:
        """Every server of the new spec is up: the coordinator checkpoints after its current wave
        and exits RESCALE_EXIT; it is restarted with the new spec and restores that checkpoint.

        Not when every worker it began with was lost meanwhile (all preempted at once, one or more
        replacements at a new address): TensorFlow recovers lost workers all together, waiting at
        the moved one's old address, which never answers, so the closures in flight never finish
        and the coordinator can neither drain nor checkpoint (seen in CI: silent until the hang
        watchdog killed it 120 s later). It is restarted now, from the latest checkpoint: what it
        did since is what those workers' loss took anyway."""
        from tfhadoop.trainer.coordinator import RESCALE

        given = self.given["worker"] if self.given else []
        moved = any(self.cluster["worker"][i] != address for i, address in enumerate(given))
        if moved and self.given_slots and set(self.given_slots) <= self.lost_since_begin:
            self.events.add("rescaled", role="chief", workers=len(self.cluster["worker"]), drained=False,
                            why="every worker the coordinator began with was lost; one came back elsewhere")
            self.stop_coordinator()
            self.spawn_coordinator(planned=True)
            return State.WAITING
        open(os.path.join(self.work, RESCALE), "w").close()
        self.rescale_pending = True
        self.events.add("rescale_requested", role="chief", workers=len(self.cluster["worker"]))
        return State.RESCALING

    def on_progress(self) -> None:
        """When the coordinator's first wave is done: how long a start or restart took."""
        self.first_wave_seen = True
        self.events.add("first_wave", role="chief", attempt=self.coordinator_attempts)

    def on_coordinator_exited(self, rc: int) -> State | None:
        from tfhadoop.trainer.coordinator import RESCALE_EXIT

        if rc == RESCALE_EXIT and self.state == State.RESCALING:
            self.events.add("rescaled", role="chief", workers=len(self.cluster["worker"]))
            self.spawn_coordinator(planned=True)
            return State.WAITING
        if rc == 0:
            self.events.add("succeeded", role="chief")
            self.outcome = ("SUCCEEDED", "training finished")
            return State.SUCCEEDED
        error = self.coordinator_error(rc)
        self.events.add("coordinator_failed", role="chief", exit_code=rc, error_type=error["type"],
                        diagnostics=error["message"][:2000])
        self.coordinator_failures += 1
        self.failed_at = self.clock()
        repeated = self.last_error is not None and (error["type"], error["message"]) == \
            (self.last_error["type"], self.last_error["message"])
        if error["type"] not in CLUSTER_ERRORS or repeated:
            return self.fail(f"{error['type']}: {error['message']}")
        self.last_error = error
        return self.restart_coordinator(error["message"])

    def on_coordinator_stale(self, phase: str, reason: str, silent_s: float, in_phase_s: float,
                             limit_s: float) -> State:
        """A stopped or stuck coordinator: killed (its exit is ours, not polled), then restarted from
        the latest checkpoint like one that failed with a cluster error."""
        self.events.add("coordinator_hung", role="chief", attempt=self.coordinator_attempts, phase=phase,
                        reason=reason, silent_s=round(silent_s, 1), in_phase_s=round(in_phase_s, 1),
                        limit_s=limit_s)
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
        acting = bool(self.job["preemption_warnings"]) and key is not None and self.live.get(key) == container
        reaction = []
        if acting and role == "worker" and container:
            self.warned[container] = self.clock()
            self.publish_avoided()
            reaction.append("avoid")
        if acting and self.state in (State.TRAINING, State.WAITING):
            reason = "ps" if role == "ps" else "worker"
            self.request_checkpoint(reason, PREEMPTION_CHECKPOINT_WITHIN_S)
            reaction.append("checkpoint_now" if role == "ps" else f"checkpoint_if_due_within_{PREEMPTION_CHECKPOINT_WITHIN_S:g}s")
        self.events.add("preemption_warned", role=role, slot=slot, container=container, yarn_container=yarn_container,
                        contract=contract, warned_at=warned_at, reaction=reaction,
                        task=self.spec_index(*key) if key else None)

    def publish_avoided(self) -> None:
        """The task indexes of the live warned workers, for the coordinator (written whole, and only
        when they changed): it hands them no new closure. Not when every live worker is warned:
        then nothing would train until YARN's kill (or its sparing, after
        PREEMPTION_WITHDRAWN_S), which costs more than the closures in flight redone elsewhere."""
        tasks = sorted(i for cid in self.warned if cid in self.containers
                       for role, slot in [self.containers[cid]]
                       if role == "worker" and self.live.get((role, slot)) == cid
                       for i in [self.spec_index(role, slot)] if i is not None)
        if len(tasks) >= self.workers_alive():
            tasks = []
        if tasks == self.avoiding:
            return
        path = os.path.join(self.work, protocol.AVOID_WORKERS_FILE)
        with open(path + ".tmp", "w") as f:
            json.dump(tasks, f)
        os.replace(path + ".tmp", path)
        self.avoiding = tasks

    def request_checkpoint(self, reason: str, within_s: float) -> None:
        """Ask the coordinator for a checkpoint now (``reason`` "ps") or if one is due within
        ``within_s`` s; it removes the file when it has decided (a newer request replaces an older)."""
        self.checkpoint_requests += 1
        path = os.path.join(self.work, protocol.CHECKPOINT_SOON_FILE)
        with open(path + ".tmp", "w") as f:
            json.dump({"reason": reason, "within_s": within_s, "id": self.checkpoint_requests}, f)
        os.replace(path + ".tmp", path)

    def restart_coordinator(self, message: str) -> State:
        """After a coordinator failure: a new one after backoff (2, 4, .. 30 s), resuming from the
        checkpoint; FAILED after ``max_coordinator_restarts``."""
        if self.coordinator_failures > self.job["max_coordinator_restarts"]:
            return self.fail(f"coordinator failed {self.coordinator_failures} times, last: {message}")
        self.begin_after = self.clock() + min(2 ** self.coordinator_failures, 30)
        self.spawn_coordinator()
        return State.WAITING

    # -- observations -> events ---------------------------------------------------------------
    def step(self) -> tuple[str, str] | None:
        """One round of the main loop: observe containers, heartbeats, addresses and the
        coordinator, dispatch what changed; the outcome once the job ended."""
        self.observe_containers()
        self.watch_preemption_warnings(Event.PREEMPTION_WARNED)
        self.publish_avoided()
        self.note_hdfs_retries()
        self.events.flush()
        if self.state in RUNNING:
            self.sampler.sample(self.workers_alive())
            addrs = self.app.kv.get_prefix(protocol.KV_ADDR)
            changes = self.address_changes(addrs)
            if changes:
                self.dispatch(Event.ADDRESSES_CHANGED, **changes, addrs=addrs)
            up = self.app.kv.get_prefix(protocol.KV_UP)
            self.note_replacements_up(up)
            self.observe_coordinator(up)
        return self.outcome

    def note_hdfs_retries(self) -> None:
        """The coordinator's retried HDFS operations (``hdfs.retry``) as ``hdfs_retry`` events:
        an outage that a checkpoint waited out is named in the log."""
        raw = self.app.kv.get(protocol.KV_HDFS_RETRIES)
        retries = json.loads(raw.decode()) if raw else []
        for r in retries[self.hdfs_retries_seen:]:
            self.events.add("hdfs_retry", role="chief", **{k: r[k] for k in ("what", "attempt", "error", "delay_s")})
        self.hdfs_retries_seen = max(self.hdfs_retries_seen, len(retries))

    def observe_containers(self) -> None:
        """Lost containers, stale heartbeats and due replacements (also while starting)."""
        for c in self.app.get_containers(services=["ps", "worker"], states=["FAILED", "KILLED", "SUCCEEDED"]):
            if c.id not in self.seen_finished and c.id in self.containers and not self.done:
                self.dispatch(Event.CONTAINER_LOST, c=c)
        self.watch_heartbeats(Event.HEARTBEAT_STALE)
        for (role, slot), due in list(self.delayed.items()):
            if self.clock() >= due and not self.done:
                self.dispatch(Event.REPLACEMENT_DUE, role=role, slot=slot)

    def unheard(self, role: str, slot: int) -> bool:
        """The slot's server has not beaten since the last coordinator failure, or has been silent
        for ``SILENT_S``: after a lost node its process is gone but its "up" key stays until YARN
        declares the node lost, and a coordinator given it would only fail again."""
        last = self.beats.get(self.live.get((role, slot), ""))
        return last is not None and (last[1] <= self.failed_at or self.clock() - last[1] > SILENT_S)

    def observe_coordinator(self, up: dict) -> None:
        if self.coordinator is None:  # PS_RECOVERY: stopped for a lost PS whose replacement waits
            return
        rc = self.coordinator.poll()
        if rc is not None:
            self.dispatch(Event.COORDINATOR_EXITED, rc=rc)
            return
        missing = self.missing_servers(up)
        if self.state == State.WAITING:
            if not missing and self.clock() >= self.begin_after:
                self.dispatch(Event.SERVERS_UP)
            elif missing and self.clock() - self.spawned_at > self.job["startup_timeout"]:
                self.dispatch(Event.SERVERS_LATE, missing=missing)
            return
        stale = self.stale_coordinator()
        if stale:
            self.dispatch(Event.COORDINATOR_STALE, **stale)
            return
        if self.state == State.TRAINING and self.cluster != self.given and not missing:
            self.dispatch(Event.SPEC_CHANGED)
        if not self.first_wave_seen:
            progress = self.app.kv.get(protocol.KV_PROGRESS)
            if progress is not None and progress != self.progress_at_begin:
                self.dispatch(Event.PROGRESS)

    def address_changes(self, addrs: dict) -> dict | None:
        """What the containers published since the spec was made: a replacement at a new address
        (the coordinator cannot reach it at the old one) and workers that were not in the spec."""
        moved = {}
        for role, slot in self.live:
            i, addr = self.spec_index(role, slot), addrs.get(f"addr/{role}/{slot}")
            if i is not None and addr and addr.decode() != self.cluster[role][i]:
                moved[(role, slot)] = (i, addr.decode())
        arrived = [s for s in range(self.job["workers"]) if s not in self.in_spec and f"addr/worker/{s}" in addrs]
        return {"moved": moved, "arrived": arrived} if moved or arrived else None

    # -- containers -------------------------------------------------------------------------
    def workers_alive(self) -> int:
        return sum(1 for r, _ in self.live if r == "worker")

    def publish_alive(self) -> None:
        self.app.kv[protocol.KV_WORKERS_ALIVE] = str(self.workers_alive()).encode()

    def start(self, role: str, slot: int) -> None:
        env = {protocol.ENV_ROLE: role, protocol.ENV_SLOT: str(slot), protocol.ENV_PORT: str(self.ports[(role, slot)]),
               protocol.ENV_GPUS: str(self.job["worker_gpus"] if role == "worker" else 0)}
        c = self.app.add_container(role, env=env)
        self.containers[c.id] = (role, slot)
        self.live[(role, slot)] = c.id
        self.publish_alive()

    def replace(self, role: str, slot: int, attempt: int, delay: float = 0) -> State | None:
        """A replacement for a lost container, requested at once or, for a slot that keeps
        failing, after ``delay`` seconds of backoff. Its old keys go, so that the address it
        publishes tells whether it came back where the spec has it. A lost PS (after the start)
        stops the coordinator (its variables are gone): PS_RECOVERY until the PS starts."""
        nxt = None
        if role == "ps" and self.state in RUNNING:
            self.stop_coordinator()
            nxt = State.PS_RECOVERY
        self.app.kv.discard(f"up/{role}/{slot}")
        self.app.kv.discard(f"addr/{role}/{slot}")
        self.events.add("replacement_requested", role=role, slot=slot, attempt=attempt, delay_s=delay)
        if delay == 0:
            return self.start_replacement(role, slot, nxt or self.state) or nxt
        self.delayed[(role, slot)] = self.clock() + delay
        return nxt

    def start_replacement(self, role: str, slot: int, state: State) -> State | None:
        """Start the slot's replacement; a PS in PS_RECOVERY also spawns the next coordinator,
        which begins once every server is up (WAITING)."""
        self.delayed.pop((role, slot), None)
        self.start(role, slot)
        self.replacing.add((role, slot))
        if role == "ps" and state == State.PS_RECOVERY:
            self.spawn_coordinator()
            return State.WAITING
        return None

    def wait_addresses(self, timeout: float) -> dict:
        """Every PS address, and the workers' addresses: all of them, or after ``startup_wait`` s
        as many as have come (at least ``min_workers``); the rest join later by rescaling."""
        t0 = self.clock()
        cluster = {"ps": [], "worker": []}
        for slot in range(self.job["ps"]):
            key = f"addr/ps/{slot}"
            while key not in self.app.kv:
                self.check_startup()
                if self.clock() - t0 > timeout:
                    raise RuntimeError(f"ps:{slot} did not start within {timeout:.0f} s "
                                       f"(not enough resources in queue {self.job['queue']}?)")
                time.sleep(0.5)
            cluster["ps"].append(self.app.kv[key].decode())
        while True:
            self.check_startup()
            present = [s for s in range(self.job["workers"]) if f"addr/worker/{s}" in self.app.kv]
            waited = self.clock() - t0
            if len(present) == self.job["workers"] or (
                    waited > self.job["startup_wait"] and len(present) >= self.job["min_workers"]):
                break
            if waited > timeout:
                raise RuntimeError(f"{len(present)} of {self.job['workers']} workers started within {timeout:.0f} s, "
                                   f"fewer than --min-workers {self.job['min_workers']} "
                                   f"(not enough resources in queue {self.job['queue']}?)")
            time.sleep(0.5)
        self.in_spec = present
        cluster["worker"] = [self.app.kv[f"addr/worker/{s}"].decode() for s in present]
        cluster["chief"] = [f"{socket.getfqdn()}:{free_port()}"]
        return cluster

    def publish_cluster(self, cluster: dict) -> None:
        self.cluster = cluster
        self.app.kv[protocol.KV_CLUSTER] = json.dumps(cluster).encode()

    def spec_index(self, role: str, slot: int) -> int | None:
        """The slot's task index in the spec (workers are in arrival order); None: not in it."""
        if role == "ps":
            return slot
        return self.in_spec.index(slot) if slot in self.in_spec else None

    def missing_servers(self, up: dict) -> list[str]:
        """``up/...`` keys of the servers in the spec that are not serving (yet), or whose
        heartbeat was not heard lately (``unheard``)."""
        slots = [("ps", s) for s in range(self.job["ps"])] + [("worker", s) for s in self.in_spec]
        return [f"up/{r}/{s}" for r, s in slots if f"up/{r}/{s}" not in up or self.unheard(r, s)]

    def note_replacements_up(self, up: dict) -> None:
        """``replacement_up`` events: when a lost slot was serving again."""
        for role, slot in sorted(self.replacing):
            if f"up/{role}/{slot}" in up:
                self.replacing.discard((role, slot))
                self.events.add("replacement_up", role=role, slot=slot)

    def check_startup(self) -> None:
        """While the cluster starts: losses (a preempted or hung one is replaced), due
        replacements, preemption warnings, and the coordinator, which must not exit yet."""
        self.observe_containers()
        self.watch_preemption_warnings(Event.PREEMPTION_WARNED)
        if self.state == State.FAILED:
            raise RuntimeError(self.final()[1])
        if self.coordinator and (rc := self.coordinator.poll()) is not None:
            error = self.coordinator_error(rc)
            raise RuntimeError(f"the coordinator exited while the cluster started: {error['type']}: {error['message']}")

    def wait_up(self, keys: list[str], timeout: float) -> None:
        deadline = self.clock() + timeout
        for key in keys:
            while key not in self.app.kv:
                self.check_startup()
                if self.clock() > deadline:
                    raise RuntimeError(f"{key} did not come up within {timeout:.0f} s")
                time.sleep(0.3)

    # -- coordinator ------------------------------------------------------------------------
    def spawn_coordinator(self, planned: bool = False) -> None:
        """Start a coordinator process now; it imports TensorFlow and the model while it waits for
        ``cluster.json`` (``begin_coordinator``), so that time overlaps the servers' start.
        ``planned``: a restart the master chose (a new spec), not a new attempt after a failure.
        It dies with the master (``children.die_with_parent``): a coordinator orphaned by a lost application
        master would train on beside the next attempt's."""
        from tfhadoop.trainer.coordinator import RESCALE

        self.coordinator_attempts += 0 if planned else 1
        for name in ("error.json", "cluster.json", RESCALE, protocol.CHECKPOINT_SOON_FILE):
            if os.path.exists(os.path.join(self.work, name)):
                os.remove(os.path.join(self.work, name))
        self.rescale_pending, self.given, self.spawned_at = False, None, self.clock()
        self.app.kv.discard(protocol.KV_HDFS_RETRIES)  # each coordinator lists its own retries
        self.hdfs_retries_seen = 0
        self.coordinator = children.spawn(
            [sys.executable, "-m", "tfhadoop.trainer.coordinator", os.path.join(self.work, "job.json"),
             os.path.join(self.work, "cluster.json"), self.work])
        self.reopen_abandoned()

    def reopen_abandoned(self) -> None:
        """A new coordinator connects to every worker of its spec, an abandoned slot's included
        (its task index stays: the others' cannot move), so the slot gets a replacement again
        (``slot_reopened``, its failures counted from 0) rather than leave the coordinator
        waiting for, or failing against, a worker that is gone."""
        for slot in sorted(self.abandoned & set(self.in_spec)):
            self.abandoned.discard(slot)
            self.restarts[("worker", slot)] = 0
            self.events.add("slot_reopened", role="worker", slot=slot)
            self.replace("worker", slot, attempt=1, delay=0)

    def begin_coordinator(self) -> None:
        """Hand the waiting coordinator the current spec (written whole: it polls for the file)."""
        self.avoiding = None
        self.publish_avoided()  # task indexes of the new spec
        for name, value in (("worker_slots.json", self.in_spec), ("cluster.json", self.cluster)):
            path = os.path.join(self.work, name)  # cluster.json last: the coordinator waits for it
            with open(path + ".tmp", "w") as f:
                json.dump(value, f)
            os.replace(path + ".tmp", path)
        self.given = json.loads(json.dumps(self.cluster))
        self.given_slots, self.lost_since_begin = list(self.in_spec), set()
        self.watch_coordinator()
        self.progress_at_begin, self.first_wave_seen = self.app.kv.get(protocol.KV_PROGRESS), False
        self.events.add("coordinator_started", role="chief", attempt=self.coordinator_attempts,
                        workers=len(self.cluster["worker"]), cluster=self.cluster,
                        waited_s=round(self.clock() - self.spawned_at, 1))

    def stop_coordinator(self) -> None:
        """Kill the coordinator and forget it: its exit (-9) is ours, never a coordinator failure
        to be polled; the next one is spawned when the lost PS's replacement starts."""
        if self.coordinator and self.coordinator.poll() is None:
            self.coordinator.kill()
            self.coordinator.wait()
        self.coordinator = None

    def coordinator_error(self, rc: int) -> dict:
        """What the coordinator that exited with ``rc`` wrote to error.json, else its exit in words."""
        try:
            with open(os.path.join(self.work, "error.json")) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {"type": "unknown", "message": f"coordinator {children.exit_description(rc)}"
                                                  " (its output is in the master's container log)"}

    # -- main loop --------------------------------------------------------------------------
    def run(self) -> tuple[str, str]:
        """The coordinator process first (its imports overlap the containers' start), then the
        containers; a failure while they start fails the job; then the loop until the end."""
        if self.attempt > 1:
            self.dispatch(Event.AM_RESTARTED)
            if self.done:
                return self.final()
        self.spawn_coordinator()
        for role, slot in self.ports:
            self.start(role, slot)
        self.publish_cluster(self.wait_addresses(self.job["startup_timeout"]))
        self.wait_up([f"up/ps/{s}" for s in range(self.job["ps"])] + [f"up/worker/{s}" for s in self.in_spec],
                     self.job["startup_timeout"])
        self.dispatch(Event.CLUSTER_UP)
        while True:
            outcome = self.step()
            if outcome:
                return outcome
            time.sleep(1)


def watch_application_master(period: float = 1.0) -> None:
    """Exit at once when Skein's Java application master (an ancestor of this process) dies: YARN
    then starts the next attempt, and an orphaned master must neither write the job's result nor
    keep a coordinator training (that one dies with this process: ``children.die_with_parent``)."""
    import threading

    def java_ancestor() -> int | None:
        pid = os.getppid()
        while pid > 1:
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() == "java":
                        return pid
                with open(f"/proc/{pid}/stat") as f:
                    pid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                return None
        return None

    am = java_ancestor()
    if am is None:
        print("no Java application master among this process's ancestors: not watching it", flush=True)
        return

    def watch():
        while os.path.exists(f"/proc/{am}"):
            time.sleep(period)
        print(f"the application master (pid {am}) is gone: exiting", flush=True)
        os._exit(3)

    threading.Thread(target=watch, name="am-watch", daemon=True).start()


def application_attempt() -> int:
    """This application master's attempt number (1, 2, ...), from YARN's CONTAINER_ID
    (container_[e<epoch>_]<cluster ts>_<app>_<attempt>_<n>)."""
    parts = os.environ.get("CONTAINER_ID", "").split("_")
    try:
        return int(parts[-2])
    except (IndexError, ValueError):
        return 1


def write_result(job_dir: str, app_id: str, status: str, diagnostics: str) -> None:
    """``result.json`` in the job directory, BEFORE the master shuts down: the client reads the
    outcome there once the application (and its key-value store) is gone."""
    from tfhadoop.connectors import hdfs

    result = {"app": app_id, "status": status, "diagnostics": diagnostics, "time": time.time()}
    try:  # an HDFS outage at the very end is waited out like a checkpoint's
        hdfs.retry(lambda: hdfs.write_bytes(protocol.job_file(job_dir, protocol.RESULT_FILE),
                                            json.dumps(result).encode()), protocol.RESULT_FILE)
    except Exception as exc:  # noqa: BLE001 - YARN's diagnostics still carry the outcome
        print(f"cannot write {protocol.RESULT_FILE}: {exc}", flush=True)


def enrich_exit_statuses(events: EventLog, app_id: str) -> bool:
    """Add YARN's exit status (-102 preempted, ...) to the container_lost events; True if any."""
    try:
        from tfhadoop.hadoop import load_conf
        from tfhadoop.yarn.history import container_exits

        exits = {e.container_id: e for e in container_exits(load_conf(), app_id)}
    except Exception as exc:  # noqa: BLE001 - statuses are extra detail
        print(f"no exit statuses from the timeline service: {exc}", flush=True)
        return False
    changed = False
    for e in events.events:
        if e.get("event") == "container_lost" and e.get("yarn_container") in exits:
            e["exit_status"] = exits[e["yarn_container"]].exit_status
            changed = True
    return changed


def main() -> int:
    # The AM agent's -javaagent option is for Skein's JVM only (protocol.ENV_JAVA_TOOL_OPTIONS): no JVM
    # this process starts (libhdfs, a coordinator's) loads it; what the NodeManager added stays.
    rest = protocol.without_am_agent(os.environ.pop(protocol.ENV_JAVA_TOOL_OPTIONS, ""))
    if rest:
        os.environ[protocol.ENV_JAVA_TOOL_OPTIONS] = rest
    import skein

    work = os.getcwd()
    with open(os.path.join(work, "job.json")) as f:
        job = json.load(f)
    app = skein.ApplicationClient.from_current()
    if job.get("strategy") == "allreduce":
        from tfhadoop.trainer.allreduce_master import RingMaster as cls
    else:
        cls = Master
    master = cls(app, job, work, attempt=application_attempt())
    if master.attempt > 1:
        master.events.resume()
    watch_application_master()
    from tfhadoop.trainer.jobpage import serve

    serve(master)
    try:
        status, diagnostics = master.run()
    except Exception as exc:  # noqa: BLE001 - reported as the application's diagnostics
        status, diagnostics = "FAILED", f"{type(exc).__name__}: {exc}"
    master.stop_coordinator()
    if master.decided_before:  # attempt 1 ended the job (Skein retries a FAILED one): only say so again
        app.shutdown(status, diagnostics=diagnostics[:4000])
        return 0
    if enrich_exit_statuses(master.events, app.id):
        master.events.rewrite()
    master.events.add("finished", status=status, diagnostics=diagnostics[:4000])
    master.events.flush_waiting()
    write_result(job["checkpoint_dir"], app.id, status, diagnostics)
    app.kv[protocol.KV_RESULT] = json.dumps({"status": status, "diagnostics": diagnostics}).encode()
    app.shutdown(status, diagnostics=diagnostics[:4000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
