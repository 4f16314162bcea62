"""``--strategy allreduce`` on the embedded YARN cluster (CPU, ``yarn.io/gpu`` counts): a
MultiWorkerMirroredStrategy ring of worker containers, elastic through preemption."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import trainer_test_models as models  # noqa: E402
from test_train_yarn import _events, _hog, _lost_events, _metrics, _state_epoch, _wait, dataset  # noqa: E402,F401

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def _train(hadoop_cluster, dataset, extra=(), timeout=600, background=False):
    import subprocess
    import uuid

    run = hadoop_cluster.hdfs_url(f"/tmp/trainer-tests/ar-{uuid.uuid4().hex[:8]}")
    cmd = [sys.executable, "-m", "tfhadoop", "train", "--strategy", "allreduce",
           "--model", "trainer_test_models:linear", "--python-path", str(HERE), "--data", dataset, "--label", "y",
           "--task-records", "300", "--batch-size", "32", "--worker-memory", "1g",
           "--checkpoint-dir", f"{run}/ckpt", "--export-dir", f"{run}/model", *extra]
    if background:
        return run, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return run, subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def test_two_workers_allreduce_train_export_and_predict(hadoop_cluster, dataset, tmp_path):
    run, proc = _train(hadoop_cluster, dataset, extra=["--workers", "2", "--epochs", "2", "--worker-gpus", "1"])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    print(proc.stdout)
    assert "training SUCCEEDED" in proc.stdout
    metrics = _metrics(run)
    assert metrics["strategy"] == "allreduce" and metrics["workers"] == 2
    assert [e["examples"] for e in metrics["epochs"]] == [2400, 2400]  # exactly once per epoch
    # 2400 records in tasks of 300 = 8 tasks, 4 rounds of 2 workers, 10 steps of 32 per round.
    assert metrics["steps"] == 2 * 4 * 10
    from tfhadoop.trainer import hdfs_io

    hdfs_io.download_dir(f"{run}/model", str(tmp_path / "model"))
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tf_keras

    model = tf_keras.models.load_model(str(tmp_path / "model"))
    x, y = models.make_examples(400, seed=4)  # the eval shard
    mse = float(np.mean((model.predict(x, verbose=0)[:, 0] - y) ** 2))
    constant = float(np.mean((y - y.mean()) ** 2))
    assert mse < 0.05 * constant, (mse, constant)
    events = _events(run)
    kinds = [e["event"] for e in events]
    assert kinds[:2] == ["cluster_up", "ring_formed"] and kinds[-1] == "finished", kinds
    assert events[0]["cuda_visible_devices"] == {"0": "0", "1": "0"}  # one yarn.io/gpu each, no plugin
    assert "first_round" in kinds and "container_lost" not in kinds
