"""The containers of a job's slots, as both masters keep them: which container serves each
(role, slot), starting one, classifying a loss (preempted, node lost, killed, failed, hung),
counting a slot's failures and the backoff before its next replacement.

One copy for the PS master and the ring master, so that a fix to how a loss is judged cannot
miss either strategy.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

from tfhadoop.trainer import protocol
from tfhadoop.trainer.event_log import EventLog

REPLACE_BACKOFF_MAX_S = 30  # a slot whose containers keep failing waits 2, 4, ... up to this many s
# YARN's diagnostics (Skein has no exit status) of a container YARN took back (-102) and of one on a
# NodeManager declared LOST (-100): neither is the container's failure.
PREEMPTED_DIAGNOSTICS = "preempted"
NODE_LOST_DIAGNOSTICS = "released on a *lost* node"
ENDED_STATES = ["FAILED", "KILLED", "SUCCEEDED"]


@dataclasses.dataclass(frozen=True)
class Loss:
    """A container that ended, judged: preempted and node-lost losses are not the slot's failure
    (replaced at once, not counted); a hung one (killed by the heartbeat watchdog) is."""

    role: str
    slot: int
    container: str
    preempted: bool
    node_lost: bool
    hung: bool
    diagnostics: str
    error: str = ""  # what the role process said ended it (protocol.kv_role_error), if it could

    @property
    def counted(self) -> bool:
        return not (self.preempted or self.node_lost)

    @property
    def why(self) -> str:
        """The reason a user is shown: the process's own error where it left one, else YARN's."""
        return f"{self.error} ({self.diagnostics})" if self.error else self.diagnostics


def classify(role: str, slot: int, container, hung: bool, error: str = "") -> Loss:
    """``container`` (Skein's, ended) as a :class:`Loss`; a container this master killed for a hang
    is hung whatever YARN's diagnostics say. ``error``: what its process said before it ended."""
    message = (container.exit_message or "").lower()
    return Loss(role, slot, container.id, preempted=not hung and PREEMPTED_DIAGNOSTICS in message,
                node_lost=not hung and NODE_LOST_DIAGNOSTICS in message, hung=hung,
                diagnostics=container.exit_message or "", error=error)


def role_error(kv, role: str, slot: int, container: str) -> str:
    """The error the slot's role process left in the key-value store (``protocol.kv_role_error``),
    if that process ran in ``container``: an older container's error is not this one's."""
    raw = kv.get(protocol.kv_role_error(role, slot))
    if not raw:
        return ""
    try:
        left = json.loads(raw)
    except ValueError:
        return ""
    return str(left.get("error", "")) if left.get("container") == container else ""


def backoff_s(failures: int) -> float:
    """The wait before a slot's next replacement after its ``failures``-th failure: 0, 2, 4, .. 30 s."""
    return 0 if failures <= 1 else min(2 ** (failures - 1), REPLACE_BACKOFF_MAX_S)


class Slots:
    """Each slot's container, its failures, the replacements waiting out a backoff and those whose
    server is not up yet. ``gpus(role)``: the GPUs a container of ``role`` gets; ``clock``: the
    master's clock, read at each call."""

    def __init__(self, app, events: EventLog, ports: dict[tuple[str, int], int], gpus: Callable[[str], int],
                 clock: Callable[[], float]):
        self.app, self.events, self.ports, self.gpus, self.clock = app, events, ports, gpus, clock
        self.containers: dict[str, tuple[str, int]] = {}  # skein container id -> (role, slot)
        self.live: dict[tuple[str, int], str] = {}  # (role, slot) -> skein container id
        self.restarts: dict[tuple[str, int], int] = {}  # counted failures of each slot
        self.seen_finished: set[str] = set()
        self.delayed: dict[tuple[str, int], float] = {}  # replacements waiting out a backoff -> due time
        self.replacing: set[tuple[str, int]] = set()  # replacements whose server is not up yet
        self.hung: set[str] = set()  # containers killed because their heartbeat stopped
        self.published_alive: int | None = None
        self.running: set[str] | None = None  # worker containers YARN runs, asked once a round

    def begin_round(self) -> None:
        """A new round of the master's observations: ask YARN again which containers run."""
        self.running = None

    def workers_held(self) -> int:
        """Worker slots with a container, running or only requested: what the job can count on
        (decisions such as --min-workers)."""
        return sum(1 for r, _ in self.live if r == "worker")

    def workers_alive(self) -> int:
        """Workers whose container YARN runs: what users are shown (a replacement that waits for
        resources is not alive)."""
        if self.running is None:
            self.running = {c.id for c in self.app.get_containers(services=["worker"], states=["RUNNING"])}
        return sum(1 for (role, _), cid in self.live.items() if role == "worker" and cid in self.running)

    def publish_alive(self) -> None:
        """``workers_alive`` in the key-value store (the progress line, ``status``), when it changed."""
        alive = self.workers_alive()
        if alive != self.published_alive:
            self.app.kv[protocol.KV_WORKERS_ALIVE] = str(alive).encode()
            self.published_alive = alive

    def start(self, role: str, slot: int) -> None:
        """Request the slot's container, with its slot and port (the role binds that port)."""
        env = {protocol.ENV_ROLE: role, protocol.ENV_SLOT: str(slot), protocol.ENV_PORT: str(self.ports[(role, slot)]),
               protocol.ENV_GPUS: str(self.gpus(role))}
        c = self.app.add_container(role, env=env)
        self.containers[c.id] = (role, slot)
        self.live[(role, slot)] = c.id
        self.publish_alive()

    def ended(self, services: list[str]) -> list:
        """Our containers that ended since the last look (each reported once, by ``lost`` or ``finished``)."""
        return [c for c in self.app.get_containers(services=services, states=ENDED_STATES)
                if c.id not in self.seen_finished and c.id in self.containers]

    def finished(self, c) -> None:
        """A container that ended of itself with success (a ring member after training): no loss."""
        self.seen_finished.add(c.id)
        self.live.pop(self.containers[c.id], None)
        self.publish_alive()

    def lost(self, c, **extra) -> Loss:
        """Forget the lost container ``c``, judge its loss and log it (``container_lost``, with ``extra``)."""
        self.seen_finished.add(c.id)
        role, slot = self.containers[c.id]
        if self.live.get((role, slot)) == c.id:
            del self.live[(role, slot)]
        self.publish_alive()
        loss = classify(role, slot, c, hung=c.id in self.hung, error=role_error(self.app.kv, role, slot, c.id))
        self.events.add(protocol.EventKind.CONTAINER_LOST, role=role, slot=slot, container=c.id,
                        preempted=loss.preempted, hung=loss.hung, node_lost=loss.node_lost,
                        yarn_container=c.yarn_container_id, state=str(c.state), diagnostics=c.exit_message,
                        **({"error": loss.error} if loss.error else {}), **extra)
        return loss

    def count_failure(self, role: str, slot: int) -> int:
        """One more failure of the slot; how many it has had."""
        n = self.restarts[(role, slot)] = self.restarts.get((role, slot), 0) + 1
        return n

    def next_attempt(self, role: str, slot: int) -> int:
        return self.restarts.get((role, slot), 0) + 1

    def replace(self, role: str, slot: int, attempt: int, delay: float) -> bool:
        """A replacement for the slot, at once (True: started) or after ``delay`` s. Its old keys go,
        so that the address it publishes tells whether it came back where the spec has it."""
        self.app.kv.discard(protocol.kv_up(role, slot))
        self.app.kv.discard(protocol.kv_addr(role, slot))
        self.events.add(protocol.EventKind.REPLACEMENT_REQUESTED, role=role, slot=slot, attempt=attempt,
                        delay_s=delay)
        if delay:
            self.delayed[(role, slot)] = self.clock() + delay
            return False
        self.start_replacement(role, slot)
        return True

    def start_replacement(self, role: str, slot: int) -> None:
        self.delayed.pop((role, slot), None)
        self.start(role, slot)
        self.replacing.add((role, slot))

    def due(self) -> list[tuple[str, int]]:
        """Replacements whose backoff is over."""
        now = self.clock()
        return [key for key, at in list(self.delayed.items()) if now >= at]

    def note_up(self, up: dict) -> None:
        """``replacement_up`` events: when a lost slot serves again."""
        for role, slot in sorted(self.replacing):
            if protocol.kv_up(role, slot) in up:
                self.replacing.discard((role, slot))
                self.events.add(protocol.EventKind.REPLACEMENT_UP, role=role, slot=slot)

    def kill(self, cid: str) -> None:
        try:
            self.app.kill_container(cid)
        except Exception as exc:  # noqa: BLE001 - it ended meanwhile: its loss is seen all the same
            print(f"cannot kill {cid}: {exc}", flush=True)
