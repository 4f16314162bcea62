"""Issue 12: the key-value store holds a bounded recent tail of the events (a value rewritten per
event must stay far below gRPC's 4 MB message limit in a long job); events.jsonl in the job
directory stays the full log; a client following the job shows each event exactly once."""
from __future__ import annotations

import json

from tests.trainer.fakes import FakeApp

N = 10_000


class Report:
    def __init__(self, state):
        self.state, self.final_status, self.diagnostics = state, "SUCCEEDED" if state == "FINISHED" else "UNDEFINED", ""


class FakeClient:
    """A job that adds a batch of events between the follower's polls, one batch larger than the
    tail (the follower must fill that gap from the durable log), then finishes."""

    def __init__(self, log, batches):
        self.log, self.batches, self.max_value = log, list(batches), 0

    def application_report(self, app_id):
        if not self.batches:
            return Report("FINISHED")
        for _ in range(self.batches.pop(0)):
            self.log.add("container_lost", role="worker", slot=len(self.log.events) % 7, diagnostics="killed")
            self.max_value = max(self.max_value, len(self.log.app.kv["events"]))
        return Report("RUNNING")

    def connect(self, app_id, wait=False):
        return self.log.app


class Shown:
    def __init__(self):
        self.events = []

    def event(self, e):
        self.events.append(e)

    def note(self, line):
        pass

    def progress(self, p, alive):
        pass

    def close(self):
        pass


def test_long_job_events_tail_is_bounded_and_each_event_is_shown_once(monkeypatch):
    from tfhadoop.connectors import hdfs
    from tfhadoop.trainer import follow as follow_mod
    from tfhadoop.trainer import jobdir, protocol
    from tfhadoop.trainer.event_log import EventLog

    durable = bytearray()
    monkeypatch.setattr(hdfs, "append_bytes", lambda url, data: durable.extend(data))

    def read_bytes(url):
        if not url.endswith(protocol.EVENTS_FILE):
            raise FileNotFoundError(url)
        return bytes(durable)

    monkeypatch.setattr(hdfs, "read_bytes", read_bytes)
    closed = []
    monkeypatch.setattr(hdfs, "recover_lease", lambda url: closed.append(url) or True)
    log = EventLog(FakeApp(), "hdfs://nn/c", "application_1_0001")
    batches = [37] * 100 + [protocol.EVENTS_TAIL + 300] + [41] * 100
    batches.append(N - sum(batches))
    client = FakeClient(log, batches)
    shown = Shown()
    state = follow_mod.follow("application_1_0001", "hdfs://nn/c", poll=0, client=client, display=shown)

    assert len(log.events) == N
    tail = json.loads(log.app.kv[protocol.KV_EVENTS])
    assert len(tail) == protocol.EVENTS_TAIL and tail[-1]["seq"] == N - 1
    assert client.max_value <= protocol.EVENTS_TAIL_BYTES and client.max_value < 100_000, client.max_value
    assert [e["seq"] for e in shown.events] == list(range(N))  # each new event once, none lost
    assert len(state["events"]) == N  # the durable log is the full list
    assert closed == ["hdfs://nn/c/events.jsonl", "hdfs://nn/c/progress.jsonl"]  # the ended job's files, before reading
    full = jobdir.events("hdfs://nn/c", "application_1_0001")
    assert jobdir.merged(full[:-150], tail) == full  # status: durable + the tail's newer ones, no repeats


def test_tail_keeps_to_its_byte_budget(monkeypatch):
    from tfhadoop.connectors import hdfs
    from tfhadoop.trainer import protocol
    from tfhadoop.trainer.event_log import EventLog

    monkeypatch.setattr(hdfs, "append_bytes", lambda *a: None)
    log = EventLog(FakeApp(), "hdfs://nn/c", "application_1_0001")
    for _ in range(50):
        log.add("coordinator_failed", diagnostics="x" * 100_000)
    value = log.app.kv[protocol.KV_EVENTS]
    assert len(value) <= protocol.EVENTS_TAIL_BYTES and json.loads(value)[-1]["seq"] == 49
