"""The trainer on the embedded YARN cluster, driven through `tfhadoop train` as a user runs it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import trainer_test_models as models  # noqa: E402

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


@pytest.fixture(scope="module")
def dataset(hadoop_cluster):
    url = hadoop_cluster.hdfs_url(f"/tmp/trainer-tests/ds-{uuid.uuid4().hex[:8]}")
    models.write_dataset(url)
    return url


def _train(hadoop_cluster, dataset, model="trainer_test_models:linear", extra=(), timeout=600, background=False):
    run = hadoop_cluster.hdfs_url(f"/tmp/trainer-tests/run-{uuid.uuid4().hex[:8]}")
    cmd = [sys.executable, "-m", "tfhadoop", "train", "--model", model, "--python-path", str(HERE),
           "--data", dataset, "--label", "y", "--ps", "1", "--task-records", "300", "--batch-size", "32",
           "--worker-memory", "1g", "--ps-memory", "1g", "--checkpoint-dir", f"{run}/ckpt",
           "--export-dir", f"{run}/model", *extra]
    if background:
        return run, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return run, proc


def _events(run):
    from tfhadoop.trainer import hdfs_io

    return [json.loads(line) for line in hdfs_io.read_bytes(f"{run}/ckpt/events.jsonl").decode().splitlines()]


def _metrics(run):
    from tfhadoop.trainer import hdfs_io

    return json.loads(hdfs_io.read_bytes(f"{run}/ckpt/metrics.json"))


def test_two_workers_one_ps_train_export_and_predict(hadoop_cluster, dataset, tmp_path):
    run, proc = _train(hadoop_cluster, dataset, extra=["--workers", "2", "--epochs", "2"])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "application application_" in proc.stdout and "tracking URL" in proc.stdout
    assert "training SUCCEEDED" in proc.stdout
    metrics = _metrics(run)
    assert [e["examples"] for e in metrics["epochs"]] == [2400, 2400]
    from tfhadoop.trainer import hdfs_io

    hdfs_io.download_dir(f"{run}/model", str(tmp_path / "model"))
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tf_keras

    model = tf_keras.models.load_model(str(tmp_path / "model"))
    x, y = models.make_examples(400, seed=4)  # the eval shard
    mse = float(np.mean((model.predict(x, verbose=0)[:, 0] - y) ** 2))
    constant = float(np.mean((y - y.mean()) ** 2))
    assert mse < 0.05 * constant, (mse, constant)
    assert metrics["eval"]["loss"] < 0.05 * constant
    events = [e["event"] for e in _events(run)]
    assert events[:2] == ["cluster_up", "coordinator_started"] and events[-1] == "finished"


def test_model_function_that_raises_fails_fast(hadoop_cluster, dataset):
    t0 = time.monotonic()
    run, proc = _train(hadoop_cluster, dataset, model="trainer_test_models:broken", extra=["--workers", "1"])
    assert proc.returncode == 1
    assert "training FAILED" in proc.stderr and "model bug: this model function always raises" in proc.stderr
    events = _events(run)
    assert sum(e["event"] == "coordinator_started" for e in events) == 1  # no restart loop
    assert events[-1]["status"] == "FAILED"
    assert time.monotonic() - t0 < 300
