"""Issue 30 §5: a SavedModel with a sparse input scores an ML vector column from each row's own
indices and values (``export_vectors.pair``: never densified), next to ragged id and string lists,
through the scoring code the executors run, against the model's own call. Without Spark (its
schema types only); the real pipeline: tests/trainer/test_pipeline_features.py."""
from __future__ import annotations

import os
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

from tests.spark.test_ragged_scoring import _payload
from tests.trainer import pipeline_test_models as models
from tfhadoop.spark import scoring_batches, scoring_plan, serving

HISTORY = [[1, 2, 3], [], [999] * 200, [0, 7]]
TAGS = [["news"], [], ["sport", "other", "news"], ["food"]]
VECTORS = [{1: 2.0, 29: -1.5}, {}, {0: 0.5}, {i: float(i) for i in range(30)}]  # the last one a dense row
PAIRS = pa.array([{"indices": sorted(v), "values": [v[k] for k in sorted(v)]} for v in VECTORS],
                 pa.struct([("indices", pa.list_(pa.int64())), ("values", pa.list_(pa.float32()))]))


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    import tensorflow as tf

    model = models.user_features()
    folder = str(tmp_path_factory.mktemp("sparse") / "model")
    model.save(folder, save_format="tf")
    dense = np.zeros((len(VECTORS), models.VECTOR_SIZE), np.float32)
    for row, v in enumerate(VECTORS):
        for k, value in v.items():
            dense[row, k] = value
    want = model({"item_history": tf.ragged.constant(HISTORY, dtype=tf.int64, ragged_rank=1),
                  "tags": tf.ragged.constant(TAGS, dtype=tf.string, ragged_rank=1),
                  "vec": tf.sparse.from_dense(dense)}, training=False).numpy()[:, 0]
    return folder, want


def _schema():
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType

    return StructType([StructField("user_id", LongType()), StructField("item_history", ArrayType(LongType())),
                       StructField("tags", ArrayType(StringType())), StructField("vec", VectorUDT())])


def test_a_sparse_vector_column_scores_from_its_indices_and_values(saved):
    folder, want = saved
    served = serving.load(folder)
    feeds, vectors = scoring_plan.plan_feeds(_schema(), served.inputs, "the DataFrame")
    assert vectors == {"vec": "sparse"}
    assert {f.name: (f.kind, f.width) for f in feeds} == {
        "item_history": ("ragged", None), "tags": ("ragged", None), "vec": ("sparse", models.VECTOR_SIZE)}
    outputs = scoring_plan.plan_outputs(served.outputs, "prediction", ["user_id", "item_history", "tags", "vec"])
    columns = {"item_history": pa.array(HISTORY, pa.list_(pa.int64())), "tags": pa.array(TAGS, pa.list_(pa.string())),
               "vec": PAIRS}
    loads = SimpleNamespace(add=lambda n: None)
    (scores,) = scoring_batches.score_arrays([columns[f.column] for f in feeds], "sparse-test", _payload(folder), loads,
                                     feeds, outputs)
    np.testing.assert_allclose(scores.to_numpy(), want, rtol=1e-6, atol=1e-6)


def test_a_null_vector_and_a_vector_wider_than_the_input_are_named(saved):
    feeds, _ = scoring_plan.plan_feeds(_schema(), serving.load(saved[0]).inputs, "the DataFrame")
    vec = next(f for f in feeds if f.name == "vec")
    with pytest.raises(ValueError, match="column 'vec' has 1 null values"):
        scoring_batches._column_array(pa.array([None, {"indices": [1], "values": [2.0]}], PAIRS.type), vec)
    import tensorflow as tf

    wide = pa.array([{"indices": [30], "values": [1.0]}], PAIRS.type)
    with pytest.raises(ValueError, match="column 'vec' holds a vector with index 30 but the model input takes 30"):
        scoring_batches._tensor(tf, scoring_batches._column_array(wide, vec), vec)
