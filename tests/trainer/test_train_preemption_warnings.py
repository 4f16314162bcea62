"""Issue 12, row 6 on the embedded cluster: YARN announces the preemption of a worker
(PreemptionMessage, seen by the agent in Skein's application master JVM: yarn/am-agent) before it
kills it (max_wait_before_kill: 10 s on the embedded cluster); the job master hands that worker no
new closure, so nothing of its work is in flight at the kill (``redone_steps``, the steps the
parameter servers applied beyond the ledger's, is 0). The same preemption with
``--no-preemption-warnings`` (the loss path alone, warnings logged only) is
test_train_yarn.test_preempted_worker_is_replaced_and_rejoins_without_restart: one job fewer here."""
from __future__ import annotations

import uuid

import pytest

from tests.trainer import jobs
from tests.trainer import trainer_test_models as models
from tests.trainer.preemption import preempt_a_worker, rejoined, start_preemptible_job

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

RECORDS = (12000, 12000, 12000, 12000)  # per epoch 48 000: workers busy most of the time, not checkpointing


@pytest.fixture(scope="module")
def busy_dataset(hadoop_cluster):
    url = hadoop_cluster.hdfs_url(f"/tmp/trainer-tests/ds-busy-{uuid.uuid4().hex[:8]}")
    models.write_dataset(url, train_shards=RECORDS, compression="none", index_interval=2048)
    return url


def _run(hadoop_cluster, dataset, checkpoint_secs: int):
    """The preemption of a worker of a job that checkpoints every ``checkpoint_secs`` s."""
    def train(cluster, data, background, extra):  # bigger tasks than the fault tests' (the last flag wins)
        return jobs.train(cluster, data, background=background, extra=[*extra, "--task-records", "2000"])

    extra = ["--checkpoint-secs", str(checkpoint_secs)]
    run, proc = start_preemptible_job(hadoop_cluster, dataset, train=train, extra=extra)
    preempt_a_worker(hadoop_cluster, run, proc, back=rejoined)
    return run


def _timeline(hadoop_cluster, run, metrics, events) -> str:
    """What a failed redone-steps assertion shows: the preemption report, the events from the warning
    on and the coordinator's log lines (when its closures ran relative to the warning)."""
    first = next((i for i, e in enumerate(events) if e["event"] == "preemption_warned"), 0)
    return (f"redone {metrics['redone_steps']}, preemption {metrics['preemption']}\n"
            + "\n".join(str(e) for e in events[first:first + 12]) + "\n" + jobs.diagnosis(hadoop_cluster, run)[-6000:])


def test_a_warned_worker_gets_no_new_work_before_yarn_takes_it(hadoop_cluster, busy_dataset):
    """With --checkpoint-secs 15 a checkpoint is always due within 15 s of the warning, and the
    coordinator takes it at once (a checkpoint with every worker there rather than while the kill's
    closure re-runs). That one not due is not taken early is the coordinator's decision alone,
    tested without a cluster (test_worker_avoidance.test_checkpoint_due_within_by_time_and_by_steps):
    a second job here (--checkpoint-secs 600) cost ~115 s of CI for it."""
    checkpoint_secs = 15
    run = _run(hadoop_cluster, busy_dataset, checkpoint_secs)
    metrics, events = jobs.metrics(run), jobs.events(run)
    kinds = [e["event"] for e in events]
    jobs.assert_stopped(metrics, 6)  # exactly once per epoch
    assert kinds[-1] == "finished" and kinds.count("coordinator_started") == 1, kinds  # no restart
    lost = [e for e in events if e["event"] == "container_lost"]
    assert lost and lost[0]["preempted"] and lost[0].get("exit_status") == -102, lost
    warned = [e for e in events if e["event"] == "preemption_warned"]
    # YARN's warning named the container it then took, before it took it
    named = [w for w in warned if w["container"] == lost[0]["container"]]
    assert named and named[0]["role"] == "worker" and named[0]["slot"] == lost[0]["slot"], (warned, lost)
    assert named[0]["time"] < lost[0]["time"] and named[0]["contract"] in ("strict", "negotiable")
    report = metrics["preemption"]
    redone = metrics["redone_steps"]
    assert named[0]["reaction"][0] == "avoid" and lost[0]["warned_s"] > 0, (named, lost)
    periods = [p for p in report["avoided"] if p["task"] == named[0]["task"]]
    assert periods and report["steered"], report
    # no closure was handed to it from the warning until it was gone
    assert periods[0]["dispatched"] == 0 and periods[0]["from"] <= lost[0]["time"], (periods, lost)
    assert periods[0]["to"] is None or periods[0]["to"] >= lost[0]["time"], (periods, lost)
    assert redone == 0, _timeline(hadoop_cluster, run, metrics, events)  # its closures finished before the kill
    (request,) = report["checkpoints"]
    assert request["reason"] == "worker" and request["taken"] is True, report  # due within 15 s: taken now
    print(f"checkpoint_secs={checkpoint_secs}: warned {lost[0]['time'] - named[0]['time']:.1f} s before the loss; "
          f"steps {metrics['steps']}, applied {metrics['applied_steps']}, redone {redone}; "
          f"closures turned back {report['turned_back']}; early checkpoints {report['checkpoints']}")
