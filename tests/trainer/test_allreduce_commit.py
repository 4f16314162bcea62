"""In-memory commits of ``--strategy allreduce`` (trainer/python/tfhadoop/trainer/commit.py): which state a new
generation restores, that a commit and its task ledger travel together, and the sharing of a
survivor's commit with the other members through a real MultiWorkerMirroredStrategy ring of two
local processes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tfhadoop.ports import free_ports
from tfhadoop.trainer.allreduce import plan_rounds
from tfhadoop.trainer.commit import FROM_CHECKPOINT, FROM_COMMIT, LocalCommits, choose, decode, due, encode
from tfhadoop.trainer.job import JobSpec
from tfhadoop.trainer.tasks import EpochLedger, Task

HERE = Path(__file__).resolve().parent


def test_the_newest_commit_wins_only_when_newer_than_the_checkpoint():
    assert choose([-1, -1], 40) == (FROM_CHECKPOINT, None)  # no commits (a fresh ring, or off)
    assert choose([60, -1, 60], 40) == (FROM_COMMIT, 0)  # the lowest rank holding the newest
    assert choose([-1, 50, 60], 40) == (FROM_COMMIT, 2)  # a survivor killed before its last commit
    assert choose([40, 40], 40) == (FROM_CHECKPOINT, None)  # a tie: the checkpoint needs no transfer
    assert choose([30], 40) == (FROM_CHECKPOINT, None)  # a ring stopped for growth checkpointed later
    assert choose([], 0) == (FROM_CHECKPOINT, None)


def test_commit_due_every_n_steps_and_off_with_zero():
    assert not due(19, 0, 20) and due(20, 0, 20) and due(30, 10, 20) and not due(29, 10, 20)
    assert not due(1000, 0, 0)
    assert JobSpec(model="m:f", data="/d", checkpoint_dir="/c", export_dir="/e").commit_every_steps == 20


def test_local_commit_round_trip_and_atomic_replacement(tmp_path):
    c = LocalCommits(str(tmp_path))
    assert c.steps() == -1 and c.state() is None
    c.write([np.arange(4.0), np.float64(3)], {"steps": 10, "ledger": None})
    c.write([np.arange(4.0) * 2, np.float64(4)], {"steps": 20, "ledger": {"done": {"1": 3}}})
    state = c.state()
    assert c.steps() == 20 and state is not None and state["ledger"] == {"done": {"1": 3}}
    values = c.values()
    assert values[0].tolist() == [0, 2, 4, 6] and float(values[1]) == 4
    assert sorted(os.listdir(tmp_path)) == ["commit"]  # nothing half-written left beside it
    state = {"steps": 7, "ledger": {"epoch": 0, "done": {"12": 300}}, "history": [], "loss_sum": 0.125}
    assert decode(encode(state)) == state


def _tasks(n, count=30):
    return [Task(i, f"hdfs://nn/s{i}", 0, count) for i in range(n)]


def test_a_commit_restores_the_ledger_of_its_weights_so_every_task_trains_once():
    """Simulated rounds of a ring of 2 with a commit every 2 rounds; the ring dies mid-round (the
    round's updates are lost with the processes), the next generation restores the commit: the
    ledger and the 'weights' (here: the list of tasks trained into them) agree, and each task of
    the epoch is trained exactly once in the weights that finish."""
    tasks = _tasks(9)
    commits: dict = {}
    weights: list = []  # the tasks whose updates the model holds
    ledger = EpochLedger(0, 9 * 30)
    steps = 0
    for n, rnd in enumerate(plan_rounds(ledger.remaining(tasks), 2)):
        if n == 3:  # dies inside round 3: neither the weights nor the ledger keep its tasks
            break
        weights += [t.id for t in rnd if t]
        for t in rnd:
            ledger.record(t, t.count)
        steps += 1
        if due(steps, commits.get("steps", 0), 2):
            commits = {"steps": steps, "weights": list(weights), "ledger": ledger.to_json()}
    assert commits["steps"] == 2
    # the next generation (a ring of 1) restores the commit: weights and ledger of step 2 together
    weights, ledger = list(commits["weights"]), EpochLedger.from_json(commits["ledger"])
    assert sorted(weights) == sorted(ledger.done)
    for rnd in plan_rounds(ledger.remaining(tasks), 1):
        weights += [t.id for t in rnd if t]
        for t in rnd:
            ledger.record(t, t.count)  # refuses a second completion
    assert sorted(weights) == list(range(9)) and ledger.complete()


def _ring(tmp_path, args_per_rank):
    ports = free_ports(len(args_per_rank))
    cluster = {"worker": [f"localhost:{p}" for p in ports]}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    procs = []
    for rank, args in enumerate(args_per_rank):
        work = tmp_path / f"w{rank}"
        work.mkdir()
        tf_config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": rank}})
        procs.append(subprocess.Popen([sys.executable, str(HERE / "commit_share_child.py"), str(rank), str(work),
                                       *map(str, args)], env={**env, "TF_CONFIG": tf_config},
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err[-3000:]
        outs.append(json.loads(out.strip().splitlines()[-1]))
    return outs


@pytest.mark.slow
def test_a_survivors_commit_reaches_a_replacement_through_one_all_reduce(tmp_path):
    """Rank 1 (a survivor) holds a commit at step 30, rank 0 (a replacement) nothing, the HDFS
    checkpoint is at step 20: both end with the committed values (Adam's slots and iteration
    count included) and the committed ledger, exactly."""
    a, b = _ring(tmp_path, [[20], [20, 30]])
    for out in (a, b):
        assert out["state"] == {"epoch": 1, "steps": 30, "history": [{"epoch": 0}],
                                "ledger": {"epoch": 1, "expected": 10, "done": {"3": 5}}}, out
        assert len(out["values"]) == 7 and any("iteration" in n for n in out["names"]), out["names"]
        for i, v in enumerate(out["values"]):
            assert np.all(np.asarray(v) == i + 1), (out["names"][i], v)
