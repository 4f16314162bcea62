"""HDFS outages (row 4 of issue 12) without a cluster: ``hdfs.retry`` waits one out with
backoff and gives up after its budget; the master's event log keeps the lines HDFS refused and
appends them later; the coordinator's retries become ``hdfs_retry`` events."""
from __future__ import annotations

import json

import pytest

from tests.trainer.fakes import bring_up
from tfhadoop.connectors import hdfs


class Outage:
    """A NameNode that refuses the first ``n`` calls (safe mode)."""

    def __init__(self, n):
        self.n, self.calls = n, 0

    def __call__(self):
        self.calls += 1
        if self.calls <= self.n:
            raise OSError("Cannot delete /c/latest.new. Name node is in safe mode.")
        return "saved"


def _fake_time():
    now = [0.0]
    return now, (lambda s: now.__setitem__(0, now[0] + s)), (lambda: now[0])


def test_retry_waits_out_an_outage_with_backoff():
    now, sleep, clock = _fake_time()
    seen = []
    fn = Outage(5)
    assert hdfs.retry(fn, "checkpoint", lambda a, e, d: seen.append((a, d)), sleep=sleep, clock=clock) == "saved"
    assert fn.calls == 6 and seen == [(1, 1), (2, 2), (3, 4), (4, 8), (5, 10)] and now[0] == 25


def test_retry_gives_up_after_its_budget():
    _now, sleep, clock = _fake_time()
    fn = Outage(100)
    with pytest.raises(OSError, match="safe mode"):
        hdfs.retry(fn, "checkpoint", budget_s=30, sleep=sleep, clock=clock)
    assert fn.calls == 6  # 1 + 2 + 4 + 8 + 10 s waited; the next 10 s would pass 30


def test_event_log_keeps_refused_lines_and_appends_them_later(master, monkeypatch):
    written, refuse = [], [True]

    def append(url, data):
        if refuse[0]:
            raise OSError("Name node is in safe mode")
        written.append(data.decode())

    monkeypatch.setattr(hdfs, "append_bytes", append)
    master.events.add("one")
    master.events.add("two")
    assert written == [] and len(master.events.unwritten) == 2
    refuse[0] = False
    master.events.flush()
    assert [json.loads(line)["event"] for line in "".join(written).splitlines()] == ["one", "two"]
    assert master.events.unwritten == []


def test_coordinator_retries_become_events(master):
    bring_up(master)
    retry = {"what": "checkpoint", "attempt": 1, "error": "OSError: safe mode", "delay_s": 1, "time": 0}
    master.app.kv["hdfs_retries"] = json.dumps([retry]).encode()
    master.step()
    master.app.kv["hdfs_retries"] = json.dumps([retry, {**retry, "attempt": 2, "delay_s": 2}]).encode()
    master.step()
    master.step()
    logged = [e for e in master.events.events if e["event"] == "hdfs_retry"]
    assert [(e["what"], e["attempt"], e["delay_s"]) for e in logged] == [("checkpoint", 1, 1), ("checkpoint", 2, 2)]


def test_tensorboard_scalars_that_cannot_be_written_do_not_fail_training(capsys):
    from tfhadoop.trainer.summaries import Summaries

    s = Summaries("nosuchfs://nowhere/tb")  # every write refused, as by a NameNode in safe mode
    s.scalars("train", 1, {"loss": 0.5})
    s.sync()
    s.scalars("train", 2, {"loss": 0.4})
    s.close()
    assert "cannot write TensorBoard scalars" in capsys.readouterr().out


def test_only_errors_a_wait_on_hdfs_may_cure_are_retried():
    from tfhadoop.trainer.checkpoints import waiting_may_cure

    lost_ps = ("failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:38429: Connection refused\n"
               "Additional GRPC error information from remote target /job:ps/replica:0/task:0/device:CPU:0")
    refused_on_the_ps = ("Unavailable: hdfs://nn:8020/c/latest.new/ckpt_temp/part-00000-of-00002: Name node is in "
                         "safe mode [[{{node SaveV2}}]]\nAdditional GRPC error information from remote target /job:ps")
    assert not waiting_may_cure(RuntimeError(lost_ps))
    assert waiting_may_cure(RuntimeError(refused_on_the_ps))  # the PS's own save op met the outage
    assert waiting_may_cure(OSError("Cannot delete /c/latest.new. Name node is in safe mode."))
    now, sleep, clock = _fake_time()
    with pytest.raises(RuntimeError, match="job:ps"):
        hdfs.retry(lambda: (_ for _ in ()).throw(RuntimeError(lost_ps)), "checkpoint", sleep=sleep, clock=clock,
                   retryable=waiting_may_cure)
    assert now[0] == 0  # raised at once: no wait


def test_the_last_events_wait_out_an_outage_at_the_end(master, monkeypatch, capsys):
    written, refusals = [], [3]

    def append(url, data):
        if refusals[0]:
            refusals[0] -= 1
            raise OSError("Name node is in safe mode")
        written.append(data.decode())

    monkeypatch.setattr(hdfs, "append_bytes", append)
    slept = []
    master.events.add("finished", status="SUCCEEDED")  # refused: kept
    master.events.flush_waiting(sleep=slept.append)
    assert [json.loads(line)["event"] for line in "".join(written).splitlines()] == ["finished"]
    assert slept == [1, 2] and master.events.unwritten == []  # refused twice more, then appended

    refusals[0] = 1000
    master.events.add("late")
    master.events.flush_waiting(budget_s=5, sleep=slept.append)
    assert master.events.unwritten and "giving up: 1 event line(s) not appended" in capsys.readouterr().out
