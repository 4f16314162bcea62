"""Issue 18's end-to-end promise: a DataFrame whose features come out of Spark ML's VectorAssembler is
exported with `tfhadoop export` and trained with `tfhadoop train` on the embedded YARN cluster,
with no reshaping step: the model's input is the vector, a [size] float32 feature."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid

import numpy as np
import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

WEIGHTS = [1.5, -2.0, 0.5, 3.0]
ROWS = 2000

MODELS = '''
"""Models for the VectorAssembler train test, shipped to the containers with --python-path."""


def vector_linear():
    import tf_keras

    model = tf_keras.Sequential([tf_keras.Input((4,), name="features"), tf_keras.layers.Dense(1)])
    model.compile(optimizer=tf_keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    return model


def scalar_input():
    """Takes the vector as one float: the submit-time check must refuse it."""
    import tf_keras

    model = tf_keras.Sequential([tf_keras.Input((3,), name="features"), tf_keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model
'''


def _tfhadoop(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "tfhadoop", *args], capture_output=True, text=True, timeout=timeout)


def test_vector_assembler_output_exports_and_trains(spark, hadoop_cluster, tmp_path):
    from pyspark.ml.feature import VectorAssembler

    from tfhadoop.connectors import hdfs

    tag = uuid.uuid4().hex[:6]
    base = spark.range(ROWS, numPartitions=2).selectExpr(
        "id", *[f"randn({k + 1}) as x{k}" for k in range(4)])
    y = " + ".join(f"{w} * x{k}" for k, w in enumerate(WEIGHTS))
    df = VectorAssembler(inputCols=[f"x{k}" for k in range(4)], outputCol="features").transform(
        base.selectExpr("*", f"{y} as y")).select("id", "features", "y")
    src = hadoop_cluster.hdfs_url(f"/tmp/vector-train/src-{tag}")
    df.write.format("parquet").save(src)
    rows = df.collect()
    data = hadoop_cluster.hdfs_url(f"/datasets/vector-train-{tag}")

    exp = _tfhadoop("export", "--input", src, "--output", data, "--shards", "4", "--split", "train=0.8,eval=0.2",
                    "--label", "y")
    assert exp.returncode == 0, (exp.stdout + exp.stderr)[-4000:]
    manifest = json.loads(hdfs.read_bytes(f"{data}/_tfhadoop.json"))
    assert manifest["parse_spec"]["features"]["features"] == {"type": "FixedLenFeature", "shape": [4],
                                                              "dtype": "float32"}

    (tmp_path / "vector_models.py").write_text(textwrap.dedent(MODELS))
    run = hadoop_cluster.hdfs_url(f"/tmp/vector-train/run-{tag}")
    common = ["--python-path", str(tmp_path), "--data", data, "--label", "y", "--ps", "1", "--workers", "1",
              "--task-records", "400", "--batch-size", "32", "--worker-memory", "1g", "--ps-memory", "1g",
              "--checkpoint-dir", f"{run}/ckpt", "--export-dir", f"{run}/model"]
    # The trainer's submit-time check sees the vector as a [4] float input: a model that takes 3 values fails.
    bad = _tfhadoop("train", "--model", "vector_models:scalar_input", *common, timeout=300)
    assert bad.returncode != 0
    assert "has shape [3] but feature 'features' is float32 [4]" in bad.stdout + bad.stderr, (bad.stdout + bad.stderr)[-3000:]

    proc = _tfhadoop("train", "--model", "vector_models:vector_linear", "--epochs", "3", *common)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "training SUCCEEDED" in proc.stdout
    metrics = json.loads(hdfs.read_bytes(f"{run}/ckpt/metrics.json"))
    assert sum(e["examples"] for e in metrics["epochs"]) == 3 * manifest["splits"]["train"]["records"]
    ys = np.array([r.y for r in rows], dtype=np.float32)
    constant = float(np.mean((ys - ys.mean()) ** 2))
    assert metrics["eval"]["loss"] < 0.05 * constant, (metrics["eval"], constant)

    # The exported model takes the vector as it is: a [None, 4] float32 input, and predicts y from it.
    hdfs.download_dir(f"{run}/model", str(tmp_path / "model"))
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tf_keras

    model = tf_keras.models.load_model(str(tmp_path / "model"))
    assert model is not None
    assert [tuple(i.shape) for i in model.inputs] == [(None, 4)] and model.inputs[0].dtype.name == "float32"
    x = np.array([r.features.toArray() for r in rows[:200]], dtype=np.float32)
    mse = float(np.mean((model.predict(x, verbose=0)[:, 0] - ys[:200]) ** 2))
    assert mse < 0.05 * constant, (mse, constant)
