"""What the masters watch besides the containers' ends: the roles' heartbeats (a hung container),
YARN's preemption warnings, and the coordinator's report (a hung or stuck coordinator).

Each watchdog only observes and says what it saw; the master turns that into its own events and
decides. ``clock`` is the master's clock, read at each call; ``job`` the job's settings, read at
each call too.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable

from tfhadoop.trainer import protocol
from tfhadoop.trainer.event_log import EventLog
from tfhadoop.trainer.slots import Slots
from tfhadoop.trainer.spec import JobSettings

# A warned container still running this long after its warning was spared (YARN found the resources
# elsewhere, or the other application ended): it gets work again (``preemption_withdrawn``).
PREEMPTION_WITHDRAWN_S = 60.0


class HeartbeatWatchdog:
    """When each live container's heartbeat (``hb/<role>/<slot>``) last changed, by the master's
    clock (the roles' clocks are never compared), and which have been silent for ``hang_timeout`` s."""

    def __init__(self, app, slots: Slots, job: JobSettings, clock: Callable[[], float]):
        self.app, self.slots, self.job, self.clock = app, slots, job, clock
        self.beats: dict[str, tuple[bytes, float]] = {}  # container -> (last heartbeat, when it changed)

    def stale(self) -> list[dict]:
        """Read the heartbeats; the live containers silent for ``hang_timeout`` s (0: off), as the
        data of the master's HEARTBEAT_STALE. A container counts from its first beat: before that,
        ``startup_timeout`` covers it."""
        self.note(self.app.kv.get_prefix(protocol.KV_HEARTBEAT))
        if not self.job.hang_timeout:
            return []
        out = []
        for (role, slot), cid in sorted(self.slots.live.items()):
            silent = self.silent_for(role, slot)
            if cid not in self.slots.hung and silent > self.job.hang_timeout:
                out.append({"role": role, "slot": slot, "container": cid, "silent_s": silent})
        return out

    def note(self, beats: dict) -> None:
        now = self.clock()
        for (role, slot), cid in self.slots.live.items():
            value = beats.get(protocol.kv_heartbeat(role, slot))
            if value is None or value.split(b" ", 1)[0].decode() != cid:
                continue
            last = self.beats.get(cid)
            if last is None or last[0] != value:
                self.beats[cid] = (value, now)

    def silent_for(self, role: str, slot: int) -> float:
        """Seconds since the slot's live container last beat; 0 before its first beat or when none is live."""
        last = self.beats.get(self.slots.live.get((role, slot), ""))
        return self.clock() - last[1] if last else 0.0

    def last_beat(self, role: str, slot: int) -> float | None:
        """When the slot's live container last beat (master's clock); None: not yet."""
        last = self.beats.get(self.slots.live.get((role, slot), ""))
        return None if last is None else last[1]

    def kill(self, role: str, slot: int, container: str, silent_s: float, events: EventLog) -> None:
        """``hang_detected``, then kill the container: its loss follows and replaces it (counted)."""
        self.slots.hung.add(container)
        events.add(protocol.EventKind.HANG_DETECTED, role=role, slot=slot, container=container,
                   silent_s=round(silent_s, 1), hang_timeout=self.job.hang_timeout)
        self.slots.kill(container)


class PreemptionWarnings:
    """YARN's preemption warnings: the lines the agent in Skein's application master JVM
    (yarn/am-agent) appends to ``PREEMPTION_WARNINGS_FILE`` in the work dir, each a container YARN
    named in a PreemptionMessage. ``warned`` holds the warned containers (-> when) until they are
    lost or spared."""

    def __init__(self, app, slots: Slots, events: EventLog, work: str, clock: Callable[[], float]):
        self.app, self.slots, self.events, self.work, self.clock = app, slots, events, work, clock
        self.warned: dict[str, float] = {}
        # worker slots whose warned container went and whose replacement does not serve yet
        self.departed: set[tuple[str, int]] = set()
        self.read_bytes = 0  # of PREEMPTION_WARNINGS_FILE

    def read(self) -> list[dict]:
        """The complete lines appended since the last call (a line still being written waits)."""
        path = os.path.join(self.work, protocol.PREEMPTION_WARNINGS_FILE)
        try:
            with open(path, "rb") as f:
                f.seek(self.read_bytes)
                data = f.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1
        self.read_bytes += end
        out = []
        for line in data[:end].splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                print(f"ignoring a malformed line of {path}: {line[:200]!r}", flush=True)
        return out

    def new(self) -> list[dict]:
        """Each new warning as the data of the master's PREEMPTION_WARNED: the role and slot of the
        container (``("master", None)``: the application master's own; ``(None, None)``: not ours)."""
        warnings = self.read()
        if not warnings:
            return []
        by_yarn_id = {c.yarn_container_id: c.id for c in self.app.get_containers(services=["ps", "worker"])
                      if getattr(c, "yarn_container_id", None)}
        out = []
        for w in warnings:
            yarn_id = w.get("container")
            cid = by_yarn_id.get(yarn_id) if yarn_id else None
            other = ("master", None) if yarn_id == os.environ.get(protocol.ENV_CONTAINER_ID) else (None, None)
            role, slot = self.slots.containers.get(cid, other) if cid else other
            out.append({"role": role, "slot": slot, "container": cid, "yarn_container": w.get("container"),
                        "contract": w.get("contract"), "warned_at": (w.get("time") or 0) / 1000})
        return out

    def forget_spared(self) -> None:
        """Forget the warnings of containers still running ``PREEMPTION_WITHDRAWN_S`` after them."""
        for cid, at in list(self.warned.items()):
            if self.clock() - at > PREEMPTION_WITHDRAWN_S and cid in self.slots.live.values():
                del self.warned[cid]
                role, slot = self.slots.containers[cid]
                self.events.add(protocol.EventKind.PREEMPTION_WITHDRAWN, role=role, slot=slot, container=cid,
                                after_s=round(self.clock() - at, 1))

    def note_loss(self, cid: str) -> dict:
        """For the container_lost event: how long after its warning a warned container went."""
        at = self.warned.pop(cid, None)
        if at is None:
            return {}
        role, slot = self.slots.containers[cid]
        if role == "worker":
            self.departed.add((role, slot))
        return {"warned_s": round(self.clock() - at, 1)}

    def departed_workers(self) -> list[tuple[str, int]]:
        """Warned workers that YARN reported lost, whose old process may still run: the
        ResourceManager reports a preempted container completed before its NodeManager has killed
        the process, so a closure handed to that task at once could start on the old process and
        be cut off mid-way (steps applied, then redone). The master keeps such a task avoided
        until its old address stops answering (``forget_departed``) or its replacement serves."""
        for key in sorted(self.departed):
            if key in self.slots.live and key not in self.slots.replacing and key not in self.slots.delayed:
                self.departed.discard(key)  # its replacement serves
        return sorted(self.departed)

    def forget_departed(self, key: tuple[str, int]) -> None:
        self.departed.discard(key)

    def live_warned_slots(self) -> set[int]:
        return {self.slots.containers[cid][1] for cid in self.warned if cid in self.slots.live.values()}


class CoordinatorWatchdog:
    """The coordinator's report (``protocol.KV_COORDINATOR``, written by phases.py): when it last had
    a new ``beat`` and a new ``(phase, mark)``, by the master's clock; ``watch`` starts judging the
    coordinator just given the spec (an older report is not its own)."""

    def __init__(self, app, slots: Slots, heartbeats: HeartbeatWatchdog, job: JobSettings, clock: Callable[[], float]):
        self.app, self.slots, self.heartbeats, self.job, self.clock = app, slots, heartbeats, job, clock
        self.seen: dict | None = None

    def watch(self) -> None:
        now = self.clock()
        self.seen = {"beat": None, "beat_at": now, "mark": None, "mark_at": now, "phase": None}

    def servers_quiet(self) -> bool:
        """A server's heartbeat has missed two beats, or a lost one is not back: the coordinator's
        own heartbeat is then not judged. Seen on the embedded cluster: while a worker was stopped,
        the coordinator's heartbeat thread stopped too (a TensorFlow call waiting on that worker
        holds the GIL), and the worker's hang would also have restarted the coordinator."""
        quiet = 2 * protocol.HEARTBEAT_S + 1
        return bool(self.slots.replacing or self.slots.delayed) or \
            any(self.heartbeats.silent_for(r, s) > quiet for r, s in self.slots.live)

    def workers_serving(self) -> int:
        """Live workers whose server is up (a replacement's ``up`` key is new: ``replace`` drops the old)."""
        up = self.app.kv.get_prefix(protocol.KV_UP)
        return sum(1 for role, slot in self.slots.live if role == "worker" and protocol.kv_up(role, slot) in up)

    def training_stalled_s(self, since: float) -> float:
        """Seconds the coordinator has been in phase training without a completed closure, counted
        from ``since`` at the earliest (as of the last ``stale``); 0 in any other phase."""
        if self.seen is None or self.seen["phase"] != protocol.PHASE_TRAINING:
            return 0.0
        return self.clock() - max(self.seen["mark_at"], since)

    def stale(self, pid: int | None) -> dict | None:
        """The data of a COORDINATOR_STALE event for the coordinator ``pid``, or None: its heartbeat
        silent for ``hang_timeout`` s (counted from its first beat, as a container's), or its phase
        unchanged, without progress, longer than ``phase_timeouts[phase]``. "training" does not
        count while no worker serves (all lost, replacements not up): it then waits for them."""
        if self.seen is None:
            return None
        seen, now = self.seen, self.clock()
        raw = self.app.kv.get(protocol.KV_COORDINATOR)
        report = json.loads(raw.decode()) if raw else {}
        if report.get("pid") == pid:
            if report.get("beat") != seen["beat"]:
                seen.update(beat=report.get("beat"), beat_at=now)
            if (report.get("phase"), report.get("mark")) != (seen["phase"], seen["mark"]):
                seen.update(phase=report.get("phase"), mark=report.get("mark"), mark_at=now)
        if seen["phase"] == protocol.PHASE_TRAINING and not self.workers_serving():
            seen["mark_at"] = now
        if self.servers_quiet():
            seen["beat_at"] = now
        silent, in_phase = now - seen["beat_at"], now - seen["mark_at"]
        limit = self.job.phase_limits.get(seen["phase"])
        data = {"phase": seen["phase"], "silent_s": silent, "in_phase_s": in_phase}
        if seen["beat"] is not None and self.job.hang_timeout and silent > self.job.hang_timeout:
            return {**data, "reason": "silent", "limit_s": self.job.hang_timeout}
        if limit and in_phase > limit:
            return {**data, "reason": "stuck", "limit_s": limit}
        return None
