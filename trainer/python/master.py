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

The coordinator process is started before the servers are up (it imports TensorFlow and the model
meanwhile) and begins when the master writes ``cluster.json``: once every server in the spec is up.

Every failure and recovery is an event (time, role, slot, container, exit status, diagnostics),
in ``<checkpoint_dir>/events.jsonl`` (all) and the key-value store under ``events`` (the newest).
"""
from __future__ import annotations

import collections
import dataclasses
import json
import os
import socket
import subprocess
import sys
import time

from tfhadoop.ports import free_port
from tfhadoop.trainer import protocol
from tfhadoop.trainer.job import JobSpec
from tfhadoop.trainer.jobpage import Sampler

REPLACE_BACKOFF_MAX_S = 30  # a slot whose containers keep failing waits 2, 4, ... up to this many s
CLUSTER_ERRORS = ("UnavailableError", "AbortedError", "CancelledError", "DeadlineExceededError")


class EventLog:
    """Every failure and recovery: appended line by line to ``<job_dir>/events.jsonl`` on HDFS, the
    full log, which outlives the application; the newest ones (``protocol.EVENTS_TAIL``) in the
    key-value store (``events``) for live display: rewriting the whole list there on each event
    would pass gRPC's 4 MB message limit in a long job. Each event carries the application id (a
    resumed job appends to the same log) and ``seq``, its number in this application's events,
    by which a client shows each event once, whether from the tail or from the file."""

    def __init__(self, app, job_dir: str, app_id: str | None = None):
        self.app, self.url, self.events = app, protocol.job_file(job_dir, protocol.EVENTS_FILE), []
        self.app_id = app_id
        self.recent: collections.deque[str] = collections.deque(maxlen=protocol.EVENTS_TAIL)  # as JSON

    def add(self, kind: str, **fields) -> dict:
        event = {"time": time.time(), "event": kind, **fields, "seq": len(self.events)}
        if self.app_id:
            event["app"] = self.app_id
        self.events.append(event)
        self.recent.append(json.dumps(event))
        print("event:", self.recent[-1], flush=True)
        self.app.kv[protocol.KV_EVENTS] = self.tail()
        try:
            from tfhadoop.trainer import hdfs_io

            hdfs_io.append_bytes(self.url, (self.recent[-1] + "\n").encode())
        except Exception as exc:  # noqa: BLE001 - the key-value store's tail and the AM log have it
            print(f"cannot append to {self.url}: {exc}", flush=True)
        return event

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
        from tfhadoop.trainer import hdfs_io

        self.recent.clear()
        self.recent.extend(json.dumps(e) for e in self.events[-protocol.EVENTS_TAIL:])
        try:
            old = hdfs_io.read_bytes(self.url).decode().splitlines() if hdfs_io.exists(self.url) else []
            kept = [line for line in old if line.strip() and json.loads(line).get("app") != self.app_id]
            hdfs_io.write_bytes(self.url, "".join(line + "\n" for line in kept + [json.dumps(e) for e in self.events])
                                .encode())
        except Exception as exc:  # noqa: BLE001 - the appended log stays as it was
            print(f"cannot rewrite {self.url}: {exc}", flush=True)


class Master:
    def __init__(self, app, job: dict, work: str):
        self.app, self.job, self.work = app, job_settings(job), work
        job = self.job
        self.events = EventLog(app, job["checkpoint_dir"], getattr(app, "id", None))
        self.sampler = Sampler(app, job["checkpoint_dir"], getattr(app, "id", None))
        self.ports = {("ps", i): free_port() for i in range(job["ps"])}
        self.ports.update({("worker", i): free_port() for i in range(job["workers"])})
        self.containers: dict[str, tuple[str, int]] = {}  # skein container id -> (role, slot)
        self.live: dict[tuple[str, int], str] = {}  # (role, slot) -> skein container id
        self.restarts: dict[tuple[str, int], int] = {}
        self.seen_finished: set[str] = set()
        self.replacing: set[tuple[str, int]] = set()  # replacements whose server is not up yet
        self.delayed: dict[tuple[str, int], float] = {}  # replacements waiting out a backoff -> due time
        self.clock = time.monotonic
        self.coordinator: subprocess.Popen | None = None  # None: stopped for a lost PS, none yet
        self.coordinator_attempts = 0  # coordinator processes started, for the events' ``attempt``
        self.coordinator_failures = 0  # only these count against max_coordinator_restarts
        self.last_error: dict | None = None
        self.in_spec: list[int] = []  # worker slots in the cluster spec, in task-index order
        self.cluster: dict = {}  # the spec the containers see ("cluster" in the key-value store)
        self.given: dict | None = None  # the spec the current coordinator began with; None: not begun
        self.begin_after = 0.0  # backoff: the current coordinator begins no earlier (monotonic)
        self.spawned_at = 0.0  # when the current coordinator process was started (monotonic)
        self.progress_at_begin: bytes | None = None  # "progress" when it was given the spec
        self.first_wave_seen = True
        self.rescale_pending = False

    # -- containers -------------------------------------------------------------------------
    def start(self, role: str, slot: int) -> None:
        env = {protocol.ENV_ROLE: role, protocol.ENV_SLOT: str(slot), protocol.ENV_PORT: str(self.ports[(role, slot)]),
               protocol.ENV_GPUS: str(self.job["worker_gpus"] if role == "worker" else 0)}
        c = self.app.add_container(role, env=env)
        self.containers[c.id] = (role, slot)
        self.live[(role, slot)] = c.id
        self.app.kv[protocol.KV_WORKERS_ALIVE] = str(sum(1 for r, _ in self.live if r == "worker")).encode()

    def wait_addresses(self, timeout: float) -> dict:
        """Every PS address, and the workers' addresses: all of them, or after ``startup_wait`` s
        as many as have come (at least ``min_workers``); the rest join later by rescaling."""
        t0 = time.monotonic()
        cluster = {"ps": [], "worker": []}
        for slot in range(self.job["ps"]):
            key = f"addr/ps/{slot}"
            while key not in self.app.kv:
                self.check_startup_failures()
                if time.monotonic() - t0 > timeout:
                    raise RuntimeError(f"ps:{slot} did not start within {timeout:.0f} s "
                                       f"(not enough resources in queue {self.job['queue']}?)")
                time.sleep(0.5)
            cluster["ps"].append(self.app.kv[key].decode())
        while True:
            self.check_startup_failures()
            present = [s for s in range(self.job["workers"]) if f"addr/worker/{s}" in self.app.kv]
            waited = time.monotonic() - t0
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

    def adopt_addresses(self, addrs: dict) -> None:
        """Put into the spec what the containers published since: a replacement at a new address
        (the coordinator cannot reach it at the old one) and workers that were not in the spec.
        The coordinator gets the new spec by a coordinated restart (``maybe_request_rescale``)."""
        moved = {}
        for role, slot in self.live:
            i, addr = self.spec_index(role, slot), addrs.get(f"addr/{role}/{slot}")
            if i is not None and addr and addr.decode() != self.cluster[role][i]:
                moved[(role, slot)] = (i, addr.decode())
        arrived = [s for s in range(self.job["workers"]) if s not in self.in_spec and f"addr/worker/{s}" in addrs]
        if not moved and not arrived:
            return
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

    def missing_servers(self, up: dict) -> list[str]:
        """``up/...`` keys of the servers in the spec that are not serving (yet)."""
        keys = [f"up/ps/{s}" for s in range(self.job["ps"])] + [f"up/worker/{s}" for s in self.in_spec]
        return [k for k in keys if k not in up]

    def note_replacements_up(self, up: dict) -> None:
        """``replacement_up`` events: when a lost slot was serving again."""
        for role, slot in sorted(self.replacing):
            if f"up/{role}/{slot}" in up:
                self.replacing.discard((role, slot))
                self.events.add("replacement_up", role=role, slot=slot)

    def check_startup_failures(self) -> None:
        for c in self.app.get_containers(services=["ps", "worker"], states=["FAILED", "KILLED"]):
            if c.id not in self.seen_finished:
                raise RuntimeError(f"{c.id} failed while starting: {c.exit_message}")
        if self.coordinator and self.coordinator.poll() is not None:
            error = self.coordinator_error()
            raise RuntimeError(f"the coordinator exited while the cluster started: {error['type']}: {error['message']}")

    def wait_up(self, keys: list[str], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for key in keys:
            while key not in self.app.kv:
                self.check_startup_failures()
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{key} did not come up within {timeout:.0f} s")
                time.sleep(0.3)

    # -- coordinator ------------------------------------------------------------------------
    def spawn_coordinator(self, planned: bool = False) -> None:
        """Start a coordinator process now; it imports TensorFlow and the model while it waits for
        ``cluster.json`` (``begin_coordinator``), so that time overlaps the servers' start.
        ``planned``: a restart the master chose (a new spec), not a new attempt after a failure."""
        from tfhadoop.trainer.coordinator import RESCALE

        self.coordinator_attempts += 0 if planned else 1
        for name in ("error.json", "cluster.json", RESCALE):
            if os.path.exists(os.path.join(self.work, name)):
                os.remove(os.path.join(self.work, name))
        self.rescale_pending, self.given, self.spawned_at = False, None, time.monotonic()
        self.coordinator = subprocess.Popen(
            [sys.executable, "-m", "tfhadoop.trainer.coordinator", os.path.join(self.work, "job.json"),
             os.path.join(self.work, "cluster.json"), self.work])

    def begin_coordinator(self) -> None:
        """Hand the waiting coordinator the current spec (written whole: it polls for the file)."""
        for name, value in (("worker_slots.json", self.in_spec), ("cluster.json", self.cluster)):
            path = os.path.join(self.work, name)  # cluster.json last: the coordinator waits for it
            with open(path + ".tmp", "w") as f:
                json.dump(value, f)
            os.replace(path + ".tmp", path)
        self.given = json.loads(json.dumps(self.cluster))
        self.progress_at_begin, self.first_wave_seen = self.app.kv.get(protocol.KV_PROGRESS), False
        self.events.add("coordinator_started", role="chief", attempt=self.coordinator_attempts,
                        workers=len(self.cluster["worker"]), cluster=self.cluster,
                        waited_s=round(time.monotonic() - self.spawned_at, 1))

    def maybe_begin(self, up: dict) -> None:
        """Begin once every server in the spec is up (a coordinator cannot connect to fewer)."""
        missing = self.missing_servers(up)
        if not missing and time.monotonic() >= self.begin_after:
            self.begin_coordinator()
        elif missing and time.monotonic() - self.spawned_at > self.job["startup_timeout"]:
            raise RuntimeError(f"{', '.join(missing)} did not come up within {self.job['startup_timeout']} s")

    def maybe_request_rescale(self, up: dict) -> None:
        """The running coordinator's spec is out of date (workers added or moved) and every server
        of the new one is up: ask it to checkpoint after its current wave and exit RESCALE_EXIT;
        it is restarted with the new spec and restores that checkpoint, so nothing is redone."""
        if self.rescale_pending or self.cluster == self.given or self.missing_servers(up):
            return
        from tfhadoop.trainer.coordinator import RESCALE

        open(os.path.join(self.work, RESCALE), "w").close()
        self.rescale_pending = True
        self.events.add("rescale_requested", role="chief", workers=len(self.cluster["worker"]))

    def note_first_wave(self) -> None:
        """An event when the coordinator's first wave is done (its first progress): how long a
        start or restart took until training ran again."""
        if self.first_wave_seen:
            return
        progress = self.app.kv.get(protocol.KV_PROGRESS)
        if progress is not None and progress != self.progress_at_begin:
            self.first_wave_seen = True
            self.events.add("first_wave", role="chief", attempt=self.coordinator_attempts)

    def stop_coordinator(self) -> None:
        """Kill the coordinator and forget it: its exit (-9) is ours, never a coordinator failure
        for ``step`` to poll; the next one is spawned when the lost PS's replacement starts."""
        if self.coordinator and self.coordinator.poll() is None:
            self.coordinator.kill()
            self.coordinator.wait()
        self.coordinator = None

    def coordinator_error(self) -> dict:
        try:
            with open(os.path.join(self.work, "error.json")) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {"type": "unknown", "message": f"coordinator exited with {self.coordinator.returncode}"}

    def coordinator_exited(self, rc: int) -> tuple[str, str] | None:
        """Success, a planned restart for a new spec, a restart with backoff after a cluster
        error, or the end (an error that is a bug or repeats, or too many restarts)."""
        from tfhadoop.trainer.coordinator import RESCALE_EXIT

        if rc == RESCALE_EXIT and self.rescale_pending:
            self.events.add("rescaled", role="chief", workers=len(self.cluster["worker"]))
            self.spawn_coordinator(planned=True)
            return None
        if rc == 0:
            self.events.add("succeeded", role="chief")
            return "SUCCEEDED", "training finished"
        error = self.coordinator_error()
        self.events.add("coordinator_failed", role="chief", exit_code=rc, error_type=error["type"],
                        diagnostics=error["message"][:2000])
        self.coordinator_failures += 1
        repeated = self.last_error is not None and (error["type"], error["message"]) == \
            (self.last_error["type"], self.last_error["message"])
        if error["type"] not in CLUSTER_ERRORS or repeated:
            return "FAILED", f"{error['type']}: {error['message']}"
        if self.coordinator_failures > self.job["max_coordinator_restarts"]:
            return "FAILED", f"coordinator failed {self.coordinator_failures} times, last: {error['message']}"
        self.last_error = error
        self.begin_after = time.monotonic() + min(2 ** self.coordinator_failures, 30)
        self.spawn_coordinator()
        return None

    # -- main loop --------------------------------------------------------------------------
    def run(self) -> tuple[str, str]:
        """The coordinator process first (its imports overlap the containers' start), then the
        containers; a failure while they start fails the job; then the loop until the end."""
        self.spawn_coordinator()
        for role, slot in self.ports:
            self.start(role, slot)
        cluster = self.wait_addresses(self.job["startup_timeout"])
        self.publish_cluster(cluster)
        self.wait_up([f"up/ps/{s}" for s in range(self.job["ps"])] + [f"up/worker/{s}" for s in self.in_spec],
                     self.job["startup_timeout"])
        devices = {s: json.loads(self.app.kv[f"up/worker/{s}"].decode()).get("cuda_visible_devices")
                   for s in self.in_spec}
        self.events.add("cluster_up", cluster=cluster, slots=self.in_spec, workers=len(cluster["worker"]),
                        cuda_visible_devices=devices)
        while True:
            outcome = self.step()
            if outcome:
                return outcome
            time.sleep(1)

    def step(self) -> tuple[str, str] | None:
        """One round of the main loop: containers, addresses, then the coordinator."""
        outcome = self.watch_containers()
        if outcome:
            return outcome
        self.start_due_replacements()
        self.sampler.sample(sum(1 for r, _ in self.live if r == "worker"))
        self.adopt_addresses(self.app.kv.get_prefix("addr/"))
        up = self.app.kv.get_prefix("up/")
        self.note_replacements_up(up)
        if self.coordinator is None:  # stopped for a lost PS whose replacement waits out a backoff
            return None
        rc = self.coordinator.poll()
        if rc is not None:
            return self.coordinator_exited(rc)
        if self.given is None:
            self.maybe_begin(up)
        else:
            self.maybe_request_rescale(up)
            self.note_first_wave()
        return None

    def watch_containers(self) -> tuple[str, str] | None:
        finished = self.app.get_containers(services=["ps", "worker"], states=["FAILED", "KILLED", "SUCCEEDED"])
        for c in finished:
            if c.id in self.seen_finished or c.id not in self.containers:
                continue
            self.seen_finished.add(c.id)
            role, slot = self.containers[c.id]
            if self.live.get((role, slot)) == c.id:
                del self.live[(role, slot)]
            self.app.kv[protocol.KV_WORKERS_ALIVE] = str(sum(1 for r, _ in self.live if r == "worker")).encode()
            preempted = "preempted" in (c.exit_message or "").lower()
            self.events.add("container_lost", role=role, slot=slot, container=c.id, preempted=preempted,
                            yarn_container=c.yarn_container_id, state=str(c.state), diagnostics=c.exit_message)
            if preempted:  # YARN took it back: not a failure, so not counted against the slot's retries
                self.replace(role, slot, attempt=self.restarts.get((role, slot), 0) + 1, delay=0)
                continue
            n = self.restarts[(role, slot)] = self.restarts.get((role, slot), 0) + 1
            limit = self.job["max_worker_restarts" if role == "worker" else "max_ps_restarts"]
            if n > limit:
                alive = sum(1 for r, _ in self.live if r == "worker")
                if role == "ps" or alive < self.job["min_workers"]:
                    return "FAILED", f"{role}:{slot} lost {n} times ({c.exit_message})"
                self.events.add("slot_abandoned", role=role, slot=slot, workers_alive=alive)
                continue
            self.replace(role, slot, n, delay=0 if n == 1 else min(2 ** (n - 1), REPLACE_BACKOFF_MAX_S))
        return None

    def replace(self, role: str, slot: int, attempt: int, delay: float = 0) -> None:
        """A replacement for a lost container, requested at once or, for a slot that keeps
        failing, after ``delay`` seconds of backoff. Its old keys go, so that the address it
        publishes tells whether it came back where the spec has it. A lost PS stops the
        coordinator (its variables are gone); the next one begins when the PS is up."""
        if role == "ps":
            self.stop_coordinator()
        self.app.kv.discard(f"up/{role}/{slot}")
        self.app.kv.discard(f"addr/{role}/{slot}")
        self.events.add("replacement_requested", role=role, slot=slot, attempt=attempt, delay_s=delay)
        self.delayed[(role, slot)] = self.clock() + delay
        self.start_due_replacements()

    def start_due_replacements(self) -> None:
        for (role, slot), due in list(self.delayed.items()):
            if self.clock() < due:
                continue
            del self.delayed[(role, slot)]
            self.start(role, slot)
            self.replacing.add((role, slot))
            if role == "ps" and self.coordinator is None:  # stopped in replace(): begins when every PS is up
                self.spawn_coordinator()


def job_settings(job: dict) -> dict:
    """``job.json`` over the JobSpec's defaults, the one place they live: a key it lacks (a spec
    written by an older client, a test) gets the same value as a spec built by ``JobSpec``."""
    defaults = {f.name: f.default for f in dataclasses.fields(JobSpec) if f.default is not dataclasses.MISSING}
    return {**defaults, **job}


def write_result(job_dir: str, app_id: str, status: str, diagnostics: str) -> None:
    """``result.json`` in the job directory, BEFORE the master shuts down: the client reads the
    outcome there once the application (and its key-value store) is gone."""
    from tfhadoop.trainer import hdfs_io

    result = {"app": app_id, "status": status, "diagnostics": diagnostics, "time": time.time()}
    try:
        hdfs_io.write_bytes(protocol.job_file(job_dir, protocol.RESULT_FILE), json.dumps(result).encode())
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
    import skein

    work = os.getcwd()
    with open(os.path.join(work, "job.json")) as f:
        job = json.load(f)
    app = skein.ApplicationClient.from_current()
    master = Master(app, job, work)
    from tfhadoop.trainer.jobpage import serve

    serve(master)
    try:
        status, diagnostics = master.run()
    except Exception as exc:  # noqa: BLE001 - reported as the application's diagnostics
        status, diagnostics = "FAILED", f"{type(exc).__name__}: {exc}"
    master.stop_coordinator()
    if enrich_exit_statuses(master.events, app.id):
        master.events.rewrite()
    master.events.add("finished", status=status, diagnostics=diagnostics[:4000])
    write_result(job["checkpoint_dir"], app.id, status, diagnostics)
    app.kv[protocol.KV_RESULT] = json.dumps({"status": status, "diagnostics": diagnostics}).encode()
    app.shutdown(status, diagnostics=diagnostics[:4000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
