"""Issue 30's done-when pipeline on the embedded cluster: a Hive table of variable-length and
sparse features (a user's item history of 0..200 ids, a bag of tags, a sparse ML vector) ->
``Trainer.fit`` (each column fed as the model's ``Input`` declares it), in the PS mode and then
allreduce on the same dataset -> ``Model.transform``, whose scores equal the SavedModel's own on
the same rows."""
from __future__ import annotations

import io
import os
import uuid
from pathlib import Path

import numpy as np
import pytest

from tests.trainer import pipeline_test_models as models
from tests.trainer.test_pipeline import _local_model

HERE = Path(__file__).resolve().parent

pytestmark = [pytest.mark.cluster]

ROWS = 400


def _rows(n: int, seed: int) -> list[tuple]:
    """(user_id, item_history, tags, vec, label): histories of 0..200 ids (row 0 empty, row 1 the
    longest), 0..3 tags (some outside the vocabulary), sparse vectors of 0..3 values (every 10th
    row a dense one: a VectorAssembler column mixes both)."""
    from pyspark.ml.linalg import DenseVector, SparseVector

    rng = np.random.default_rng(seed)
    effect = np.linspace(-1, 1, models.ITEMS)
    rows = []
    for i in range(n):
        length = 0 if i == 0 else 200 if i == 1 else int(rng.integers(0, 201))
        hist = rng.integers(0, models.ITEMS, size=length).tolist()
        tags = [str(t) for t in rng.choice([*models.TAGS, "other"], size=int(rng.integers(0, 4)))]
        if i % 10 == 9:
            dense = rng.normal(size=models.VECTOR_SIZE)
            vec, total = DenseVector(dense), float(dense.sum())
        else:
            at = rng.choice(models.VECTOR_SIZE, size=int(rng.integers(0, 4)), replace=False)
            values = {int(k): float(rng.normal()) for k in at}
            vec, total = SparseVector(models.VECTOR_SIZE, values), sum(values.values())
        label = float(effect[hist].mean() if hist else 0.0) + 0.5 * tags.count("news") + 0.3 * total
        rows.append((i, hist, tags, vec, label))
    return rows


def test_variable_length_and_sparse_columns_train_and_score_as_the_saved_model_does(spark, hadoop_cluster, tmp_path):
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql.types import ArrayType, DoubleType, LongType, StringType, StructField, StructType

    from tfhadoop.connectors.dataset import load
    from tfhadoop.trainer import Trainer

    rows = _rows(ROWS, seed=30)
    schema = StructType([StructField("user_id", LongType()), StructField("item_history", ArrayType(LongType())),
                         StructField("tags", ArrayType(StringType())), StructField("vec", VectorUDT()),
                         StructField("label", DoubleType())])
    table = f"user_features_{uuid.uuid4().hex[:6]}"
    spark.createDataFrame(rows, schema).write.format("parquet").saveAsTable(table)
    run = hadoop_cluster.hdfs_url(f"/tmp/pipeline-tests/features-{uuid.uuid4().hex[:8]}")
    out = io.StringIO()
    model = Trainer(model="pipeline_test_models:user_features", python_path=[str(HERE)], label="label", workers=1,
                    ps=1, epochs=2, batch_size=32, task_records=200, worker_memory="1g", ps_memory="1g",
                    checkpoint_dir=f"{run}/ckpt", export_dir=f"{run}/model").fit(
        table, out=out, split="train=0.9,eval=0.1", split_key="user_id", shards=2)
    assert "training SUCCEEDED" in out.getvalue(), out.getvalue()
    assert np.isfinite(model.metrics["eval"]["loss"]), model.metrics
    assert model.dataset is not None
    spec = load(model.dataset).parse_spec["features"]
    assert spec["vec"] == {"type": "SparseFeature", "index_key": "vec.indices", "value_key": "vec.values",
                           "dtype": "float32", "size": models.VECTOR_SIZE}, spec
    assert spec["item_history"]["max_length"] == 200 and spec["tags"]["type"] == "VarLenFeature", spec

    _assert_scores_are_the_saved_model_s(spark, model, table, rows, tmp_path / "saved")

    # The other strategy (§1: both): allreduce, 2 workers, on the same dataset; each epoch exactly once
    ring_out = io.StringIO()
    ring = Trainer(model="pipeline_test_models:user_features", python_path=[str(HERE)], label="label",
                   strategy="allreduce", workers=2, epochs=2, batch_size=32, task_records=100, worker_memory="1g",
                   checkpoint_dir=f"{run}/ring-ckpt", export_dir=f"{run}/ring-model").fit(model.dataset, out=ring_out)
    assert "training SUCCEEDED" in ring_out.getvalue(), ring_out.getvalue()
    train_rows = load(model.dataset).records("train")
    assert [e["examples"] for e in ring.metrics["epochs"]] == [train_rows] * 2, ring.metrics["epochs"]
    _assert_scores_are_the_saved_model_s(spark, ring, table, rows, tmp_path / "ring-saved")


def _assert_scores_are_the_saved_model_s(spark, model, table: str, rows: list[tuple], local) -> None:
    """``transform``'s scores of the table equal the SavedModel's own on the same rows, in order."""
    import tensorflow as tf

    got = model.transform(spark.table(table)).orderBy("user_id").collect()
    assert [r.user_id for r in got] == list(range(ROWS))
    saved = _local_model(model.path, local)
    vectors = np.array([r[3].toArray() for r in rows], np.float32)
    want = saved({"item_history": tf.ragged.constant([r[1] for r in rows], dtype=tf.int64, ragged_rank=1),
                  "tags": tf.ragged.constant([r[2] for r in rows], dtype=tf.string, ragged_rank=1),
                  "vec": tf.sparse.from_dense(vectors)}, training=False).numpy()
    np.testing.assert_allclose(np.array([r.prediction for r in got], np.float32), want[:, 0], rtol=1e-5, atol=1e-5)
