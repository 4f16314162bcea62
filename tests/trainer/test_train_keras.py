"""Keras semantics through `tfhadoop train` on the embedded YARN cluster: a model with a kernel
regularizer trained with ``--sample-weight`` (test_keras_step.py checks the step itself against
``model.fit``)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from tests.trainer import trainer_test_models as models

HERE = Path(__file__).resolve().parent

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_regularizer_and_sample_weights_on_yarn(hadoop_cluster, tmp_path):
    from tfhadoop.connectors import hdfs

    root = hadoop_cluster.hdfs_url(f"/tmp/trainer-tests/keras-{uuid.uuid4().hex[:8]}")
    models.write_dataset(f"{root}/data", weights=True)
    cmd = [sys.executable, "-m", "tfhadoop", "train", "--model", "trainer_test_models:frozen_regularized",
           "--python-path", str(HERE), "--data", f"{root}/data", "--label", "y", "--sample-weight", "w",
           "--workers", "1", "--ps", "1", "--epochs", "2", "--task-records", "300", "--batch-size", "32",
           "--worker-memory", "1g", "--ps-memory", "1g", "--checkpoint-dir", f"{root}/ckpt",
           "--export-dir", f"{root}/model"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "training SUCCEEDED" in proc.stdout
    metrics = json.loads(hdfs.read_bytes(f"{root}/ckpt/metrics.json"))
    assert [e["examples"] for e in metrics["epochs"]] == [2400, 2400]

    hdfs.download_dir(f"{root}/model", str(tmp_path / "model"))
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tf_keras

    model = tf_keras.models.load_model(str(tmp_path / "model"))
    assert model is not None
    frozen = model.layers[0].get_weights()[0]
    np.testing.assert_array_equal(frozen, np.eye(4, dtype=np.float32))  # trainable=False: never updated
    reg = models.FROZEN_L2 * float(np.sum(frozen ** 2))  # 4.0
    # The reported training loss holds the regularization term: every epoch's mean is above it,
    # and the data part of the last one is small (the head learned WEIGHTS).
    losses = [e["mean_loss"] for e in metrics["epochs"]]
    assert all(loss > reg for loss in losses), losses
    assert losses[-1] < losses[0] and losses[-1] - reg < 1.0, losses
    # The final evaluation is Keras's evaluate with the same sample weights: its loss is the
    # weighted squared error over the eval split plus the regularization term.
    x, y = models.make_examples(400, seed=4)
    w = models.example_weights(400, seed=4)
    data = float(np.sum(w * (model.predict(x, verbose=0)[:, 0] - y) ** 2)) / len(y)
    assert metrics["eval"]["loss"] == pytest.approx(data + reg, rel=1e-4), (metrics["eval"], data, reg)
    print("epoch losses", losses, "eval", metrics["eval"], "regularization", reg)
