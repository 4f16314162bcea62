"""Issue 30 §5: a SavedModel with a ragged input scores array columns of any row length (empty lists
included) through the scoring code the executors run, against the model's own predict; a null
row is an error naming the column. Without Spark (its schema types only); the real pipeline:
tests/trainer/test_pipeline.py."""
from __future__ import annotations

import io
import os
import tarfile
from types import SimpleNamespace
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

from tests.trainer import trainer_test_models as models
from tfhadoop.errors import CommandError
from tfhadoop.spark import scoring_batches, scoring_plan, serving

HISTORIES = [[1, 2, 3], [], [49], [0, 0, 7, 7, 7, 7]]
X = np.arange(16, dtype=np.float32).reshape(4, 4) / 8


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    import tensorflow as tf

    model: Any = models.history_bag()  # tf_keras' annotations type ``verbose`` as str
    emb = next(layer for layer in model.layers if layer.__class__.__name__ == "Embedding")
    emb.set_weights([np.linspace(-1, 1, models.ITEMS, dtype=np.float32)[:, None]])
    folder = str(tmp_path_factory.mktemp("ragged") / "model")
    model.save(folder, save_format="tf")
    want = model.predict({"x": X, "hist": tf.ragged.constant(HISTORIES, dtype=tf.int64)}, verbose=0)[:, 0]
    return folder, want


def _schema(scalar_hist: bool = False):
    from pyspark.sql.types import ArrayType, FloatType, IntegerType, LongType, StructField, StructType

    return StructType([StructField("id", IntegerType()), StructField("x", ArrayType(FloatType())),
                       StructField("hist", LongType() if scalar_hist else ArrayType(LongType()))])


def _payload(folder: str):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(folder, arcname=".")
    return SimpleNamespace(value=buf.getvalue())


def test_the_serving_inputs_keep_the_ragged_input_s_name(saved):
    import tensorflow as tf

    served = serving.load(saved[0])
    assert sorted(served.inputs) == ["hist", "x"] and isinstance(served.inputs["hist"], tf.RaggedTensorSpec)


def test_array_rows_of_any_length_score_as_the_model_predicts(saved):
    folder, want = saved
    served = serving.load(folder)
    feeds, vectors = scoring_plan.plan_feeds(_schema(), served.inputs, "the DataFrame")
    assert vectors == {} and {f.name: f.kind for f in feeds} == {"hist": "ragged", "x": "dense"}
    outputs = scoring_plan.plan_outputs(served.outputs, "prediction", ["id", "x", "hist"])
    columns = {"x": pa.array([list(map(float, r)) for r in X], pa.list_(pa.float32())),
               "hist": pa.array(HISTORIES, pa.list_(pa.int64()))}
    loads = SimpleNamespace(add=lambda n: None)
    (scores,) = scoring_batches.score_arrays([columns[f.column] for f in feeds], "ragged-test", _payload(folder), loads,
                                     feeds, outputs)
    np.testing.assert_allclose(scores.to_numpy(), want, rtol=1e-6, atol=1e-6)


def test_a_null_row_is_an_error_naming_the_column(saved):
    folder, _ = saved
    feeds, _ = scoring_plan.plan_feeds(_schema(), serving.load(folder).inputs, "the DataFrame")
    hist = next(f for f in feeds if f.name == "hist")
    with pytest.raises(ValueError, match="column 'hist' has 1 null values"):
        scoring_batches._column_array(pa.array([[1], None], pa.list_(pa.int64())), hist)


def test_a_scalar_column_for_a_ragged_input_is_refused_before_any_task(saved):
    folder, _ = saved
    with pytest.raises(CommandError, match="column 'hist' is bigint but the model input 'hist' is a ragged list"):
        scoring_plan.plan_feeds(_schema(scalar_hist=True), serving.load(folder).inputs, "the DataFrame")
