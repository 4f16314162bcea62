"""Issue 30 §1 on the embedded YARN cluster: a model whose ``Input(ragged=True)`` takes a
variable-length column (item-id histories of 0..12 ids, empty ones included) trains in both
strategies, exactly once per epoch, and learns what only the histories hold; its SavedModel
scores ragged rows."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import numpy as np
import pytest

from tests.trainer import jobs
from tests.trainer import trainer_test_models as models

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


@pytest.fixture(scope="module")
def history_dataset(hadoop_cluster):
    url = hadoop_cluster.hdfs_url(f"/tmp/trainer-tests/hist-{uuid.uuid4().hex[:8]}")
    models.write_dataset(url, compression="none", index_interval=2048, history=True)
    return url


def _eval_rows():
    x, y = models.make_examples(400, seed=4)  # the eval shard
    hists = models.make_histories(400, seed=4)
    return x, hists, y + np.array([models.history_effect(h) for h in hists], np.float32)


@pytest.mark.parametrize("strategy", ["ps", "allreduce"])
def test_a_ragged_history_trains_and_scores(hadoop_cluster, history_dataset, strategy, tmp_path):
    from tfhadoop.connectors import hdfs

    run = hadoop_cluster.hdfs_url(f"/tmp/trainer-tests/ragged-{uuid.uuid4().hex[:8]}")
    # allreduce takes a step per pair of batches (one per worker): twice the epochs for the PS mode's steps
    epochs = 3 if strategy == "ps" else 6
    cmd = [sys.executable, "-m", "tfhadoop", "train", "--strategy", strategy,
           "--model", "trainer_test_models:history_bag", "--python-path", str(jobs.MODELS),
           "--data", history_dataset, "--label", "y", "--workers", "2", "--epochs", str(epochs),
           "--task-records", "300", "--batch-size", "32", "--worker-memory", "1g",
           "--checkpoint-dir", f"{run}/ckpt", "--export-dir", f"{run}/model",
           *(["--ps", "1", "--ps-memory", "1g"] if strategy == "ps" else [])]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    metrics = json.loads(hdfs.read_bytes(f"{run}/ckpt/metrics.json"))
    assert [e["examples"] for e in metrics["epochs"]] == [2400] * epochs  # exactly once per epoch

    hdfs.download_dir(f"{run}/model", str(tmp_path / "model"))
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tensorflow as tf
    import tf_keras

    model = tf_keras.models.load_model(str(tmp_path / "model"))
    assert model is not None
    x, hists, y = _eval_rows()
    pred = model.predict({"x": x, "hist": tf.ragged.constant(hists, dtype=tf.int64)}, verbose=0)[:, 0]
    mse = float(np.mean((pred - y) ** 2))
    ignoring_history = float(np.mean((x @ models.WEIGHTS - y) ** 2))  # the best a model blind to `hist` does
    print(f"{strategy}: eval mse {mse:.4f}; blind to the history {ignoring_history:.4f}; "
          f"train loss by epoch {[round(e['mean_loss'], 4) for e in metrics['epochs']]}")
    # No model blind to `hist` gets under `ignoring_history`; seen: 3 % of it (PS), 19 % (allreduce:
    # half the steps, a batch of 32 per worker)
    assert mse < 0.5 * ignoring_history, (mse, ignoring_history)


def test_a_gru_trains_on_arrays_of_structs_exported_as_sequence_examples(spark, hadoop_cluster, tmp_path):
    """Issue 30 §2: a table with an ``array<struct<x1, x2>>`` column (1..6 steps per row) exported
    with ``--record-type SequenceExample`` gives a feature list per field (``events.x1``,
    ``events.x2``: dense steps of one value) and the label as a context feature; a GRU over the two
    trains on YARN exactly once per epoch and learns what only the steps hold."""
    from tfhadoop.connectors import hdfs
    from tfhadoop.errors import CommandError
    from tfhadoop.spark.export import ExportOptions, run_export
    from tfhadoop.spark.export_sequences import struct_lists_as_feature_lists

    nested = spark.createDataFrame([(1, [((1, 2),)])], "id int, ev array<struct<p:struct<a:int,b:int>>>")
    with pytest.raises(CommandError, match="column 'ev': field 'p' is struct<a:int,b:int>; a feature list step holds"):
        struct_lists_as_feature_lists(nested)
    steps, y = models.make_sequences(3000, seed=7)
    rows = [(i, [(float(a), float(b)) for a, b in s], float(yi)) for i, (s, yi) in enumerate(zip(steps, y))]
    view = f"events_{uuid.uuid4().hex[:6]}"
    spark.createDataFrame(rows, "id bigint, events array<struct<x1:double,x2:double>>, y double") \
        .createOrReplaceTempView(view)
    root = hadoop_cluster.hdfs_url(f"/tmp/trainer-tests/seq-{uuid.uuid4().hex[:8]}")
    manifest = run_export(spark, ExportOptions(output=f"{root}/data", query=f"select * from {view}", shards=4,
                                               splits={"train": 0.8, "eval": 0.2}, split_key="id",
                                               record_type="SequenceExample", label="y"))
    spec = manifest["parse_spec"]
    assert spec["sequence_features"] == {
        f"events.{f}": {"type": "FixedLenSequenceFeature", "shape": [1], "dtype": "float32", "allow_missing": True}
        for f in ("x1", "x2")}, spec
    assert set(spec["features"]) == {"id", "y"}
    epochs, train = 3, manifest["splits"]["train"]["records"]
    proc = subprocess.run([sys.executable, "-m", "tfhadoop", "train", "--model", "trainer_test_models:gru_over_events",
                           "--python-path", str(jobs.MODELS), "--data", f"{root}/data", "--label", "y",
                           "--workers", "2", "--ps", "1", "--epochs", str(epochs), "--task-records", "300",
                           "--batch-size", "32", "--worker-memory", "1g", "--ps-memory", "1g",
                           "--checkpoint-dir", f"{root}/ckpt", "--export-dir", f"{root}/model"],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    metrics = json.loads(hdfs.read_bytes(f"{root}/ckpt/metrics.json"))
    assert [e["examples"] for e in metrics["epochs"]] == [train] * epochs
    constant = float(np.var(y))
    print(f"GRU over exported arrays of structs: eval {metrics.get('eval')}, a constant predictor {constant:.4f}")
    assert metrics["eval"]["loss"] < 0.25 * constant, (metrics["eval"], constant)
