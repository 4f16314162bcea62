"""Fakes of Skein and of the coordinator process, so the masters' state machines run in a unit test
without YARN, and the helpers that drive a master through them (one copy for every test module)."""
from __future__ import annotations

import itertools


class FakeKV(dict):
    """Skein's key-value store: a dict with its prefix read and discard."""

    def get(self, key, default=None):
        return dict.get(self, key, default)

    def get_prefix(self, prefix):
        return {k: v for k, v in self.items() if k.startswith(prefix)}

    def discard(self, key):
        return self.pop(key, None) is not None


class FakeContainer:
    def __init__(self, cid):
        self.id, self.state, self.yarn_container_id, self.exit_message = cid, "RUNNING", "y-" + cid, "killed"
        self.service_name = cid.rsplit("_", 1)[0]


class FakeApp:
    """A Skein application client: containers the test loses or kills, roles it says are serving."""

    def __init__(self):
        self.kv, self.containers, self.counts = FakeKV(), [], {}
        self.id: str | None = None  # the master reads the job's result.json only under a real id
        self.killed: list[str] = []

    def add_container(self, service, env=None):
        n = self.counts[service] = self.counts.get(service, 0) + 1
        self.containers.append(FakeContainer(f"{service}_{n - 1}"))
        return self.containers[-1]

    def get_containers(self, services=None, states=None):
        return [c for c in self.containers if not states or c.state in states]

    def lose(self, cid):
        next(c for c in self.containers if c.id == cid).state = "KILLED"

    def kill_container(self, cid):
        self.killed.append(cid)
        self.lose(cid)

    def serve(self, role, slot, address, up=True):
        self.kv[f"addr/{role}/{slot}"] = address.encode()
        if up:
            self.kv[f"up/{role}/{slot}"] = b'{"cuda_visible_devices": ""}'


class FakeCoordinator:
    """``subprocess.Popen`` of the coordinator: running until the test sets ``returncode``."""

    pids = itertools.count(1000)

    def __init__(self, args, **kwargs):
        self.returncode, self.pid = None, next(FakeCoordinator.pids)

    def poll(self):
        return self.returncode

    def kill(self):
        self.returncode = -9

    def wait(self):
        return self.returncode


PS_JOB = {"checkpoint_dir": "hdfs://nn/c", "ps": 1, "workers": 2, "min_workers": 1, "startup_wait": 0, "queue": "q"}
RING_JOB = {"checkpoint_dir": "hdfs://nn/c", "strategy": "allreduce", "ps": 0, "workers": 2, "min_workers": 1,
            "startup_wait": 0, "queue": "q"}


def settings(job: dict, **changes):
    """The checked settings (``JobSettings``, as a master reads them from job.json) of ``job``
    with ``changes``, on a model and dataset no test loads."""
    from tfhadoop.trainer.spec import JobSpec

    return JobSpec.from_dict({"model": "m:f", "data": "hdfs://nn/d", "export_dir": "hdfs://nn/e", **job, **changes})


def with_settings(master, **changes):
    """A new master like ``master`` (same app, work dir and attempt) whose settings differ by
    ``changes``: settings are frozen, and the master's watchdogs hold the ones it was made with."""
    import dataclasses

    return type(master)(master.app, dataclasses.replace(master.job, **changes), master.work, attempt=master.attempt)


def instant_sleep(monkeypatch) -> None:
    """``time.sleep`` returns at once in the test's own thread, and sleeps as before in every other.
    Patching it for all threads made every thread an earlier test left in this process (a Skein
    client's, a heartbeat's) spin for as long as the test ran: a 0.6 s test took 83 s in the suite."""
    import threading
    import time

    real_sleep, test_thread = time.sleep, threading.get_ident()
    monkeypatch.setattr(time, "sleep", lambda s: None if threading.get_ident() == test_thread else real_sleep(s))


def fake_master(work, monkeypatch, app=None, attempt=1, **job):
    """A ``PsMaster`` on a ``FakeApp`` (``PS_JOB`` with ``job``'s changes), its coordinator a
    ``FakeCoordinator``, its sleeps instant and its HDFS writes dropped."""
    import subprocess

    from tfhadoop.connectors import hdfs
    from tfhadoop.trainer import ps_master as m

    monkeypatch.setattr(subprocess, "Popen", FakeCoordinator)
    instant_sleep(monkeypatch)
    monkeypatch.setattr(hdfs, "write_bytes", lambda *a, **k: None)
    monkeypatch.setattr(hdfs, "append_bytes", lambda *a, **k: None)
    return m.PsMaster(app or FakeApp(), settings(PS_JOB, **job), str(work), attempt=attempt)


def bring_up(master, workers=(0, 1)):
    """What PsMaster.run does, with the containers serving at once: launch, then the rounds that
    publish the spec (STARTING) and hand it to the coordinator (WAITING -> TRAINING)."""
    master.launch()
    master.app.serve("ps", 0, "h:1")
    for s in workers:
        master.app.serve("worker", s, f"h:{10 + s}")
    assert master.step() is None
    assert master.step() is None


def event_kinds(master):
    """The kinds of the events ``master`` logged, in order."""
    return [e["event"] for e in master.events.events]


class ManualClock:
    """A clock the test moves: ``clock.now`` is the time a master reads."""

    def __init__(self, now: float = 0.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def beat(master, role, slot, n):
    """The role's heartbeat thread bumping its key (as trainer/python/tfhadoop/trainer/role.py does)."""
    master.app.kv[f"hb/{role}/{slot}"] = f"{master.live[(role, slot)]} {n}".encode()


def manual_clock(master):
    """Give ``master`` a clock the test moves: ``now[0]`` is the time it reads."""
    now = [0.0]
    master.clock = lambda: now[0]
    return now


def exit_with(master, rc, error=None):
    """The coordinator exits with ``rc`` (having written ``error`` to its error file); one master step."""
    import json
    import os

    from tfhadoop.trainer import protocol

    if error:
        with open(os.path.join(master.work, protocol.ERROR_FILE), "w") as f:
            json.dump(error, f)
    master.coordinator.returncode = rc
    return master.step()
