"""Issue 30 §1: each feature reaches the model as its ``Input`` declares it — ragged, sparse or
dense — through the one parser every training path uses (``step.model_parse_fn``); in-process."""
from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import tensorflow as tf

from tests.trainer import trainer_test_models as models
from tfhadoop.connectors.example import encode_example
from tfhadoop.trainer.feeding import DENSE, RAGGED, SPARSE, Feed, mismatch, model_feeds
from tfhadoop.trainer.keras_step import compute_loss
from tfhadoop.trainer.step import model_parse_fn, parse_fn

HISTORIES = [[], [3, 1, 4], [7], [49, 0, 0, 2, 11]]  # an empty one and repeated ids included


def _records(hists, x=None):
    x = np.arange(len(hists) * 4, dtype=np.float32).reshape(-1, 4) / 10 if x is None else x
    return tf.constant([encode_example({"x": [float(v) for v in xi], "hist": h, "y": [float(i)]})
                        for i, (xi, h) in enumerate(zip(x, hists))]), x


def _sparse_model(width: int):
    import tf_keras

    hist = tf_keras.Input((width,), name="hist", sparse=True)
    x = tf_keras.Input((4,), name="x")
    out = tf_keras.layers.Dense(1)(tf_keras.layers.Concatenate()([tf_keras.layers.Dense(2)(hist), x]))
    model = tf_keras.Model({"x": x, "hist": hist}, out)
    model.compile("sgd", "mse")
    return model


def test_the_model_says_how_each_input_is_fed():
    assert model_feeds(models.history_bag(), ["x", "hist"]) == {"hist": Feed(RAGGED), "x": Feed(DENSE, 4)}
    assert model_feeds(_sparse_model(16), ["x", "hist"]) == {"hist": Feed(SPARSE, 16), "x": Feed(DENSE, 4)}
    assert model_feeds(models.linear(), ["x"]) == {"x": Feed(DENSE, 4)}


def test_a_ragged_input_gets_the_lists_the_file_holds():
    """No padding, no truncation: each row is the example's list, empty ones included."""
    records, x = _records(HISTORIES)
    features, y = model_parse_fn(models.history_bag(), models.HISTORY_SPEC, "y")(records)
    assert isinstance(features["hist"], tf.RaggedTensor)
    assert features["hist"].to_list() == HISTORIES
    np.testing.assert_array_equal(features["x"].numpy(), x)
    assert y.numpy().tolist() == [0.0, 1.0, 2.0, 3.0]


def test_the_loss_on_ragged_batches_is_the_one_keras_computes():
    """``compute_loss`` (what the trainer reports and minimizes) on the parsed batch equals
    ``model.evaluate`` given the same rows as Keras' own ragged input."""
    model: Any = models.history_bag()  # tf_keras' annotations type ``verbose`` as str
    model.layers[2].set_weights([np.linspace(-1, 1, models.ITEMS, dtype=np.float32)[:, None]])  # the embedding
    records, x = _records(HISTORIES)
    features, y = model_parse_fn(model, models.HISTORY_SPEC, "y")(records)
    _, loss = compute_loss(model, features, y, training=False)
    expected = model.evaluate({"x": x, "hist": tf.ragged.constant(HISTORIES, dtype=tf.int64)},
                              np.arange(4, dtype=np.float32), batch_size=4, verbose=0)
    assert float(loss) == pytest.approx(expected, rel=1e-6)


def test_a_sparse_input_gets_its_declared_width_and_a_longer_list_is_named():
    spec = {"features": {"x": {"type": "FixedLenFeature", "shape": [4], "dtype": "float32"},
                         "hist": {"type": "VarLenFeature", "dtype": "float32"},
                         "y": {"type": "FixedLenFeature", "shape": [], "dtype": "float32"}}}
    records, _ = _records([[1.0, 2.0], [], [5.0]])
    features, _ = model_parse_fn(_sparse_model(8), spec, "y")(records)
    assert isinstance(features["hist"], tf.SparseTensor)
    assert features["hist"].dense_shape.numpy().tolist() == [3, 8]
    assert tf.sparse.to_dense(features["hist"]).numpy()[:, :2].tolist() == [[1, 2], [0, 0], [5, 0]]
    too_long, _ = _records([[1.0] * 9])
    with pytest.raises(tf.errors.InvalidArgumentError, match="feature 'hist' has a list longer than .* width 8"):
        model_parse_fn(_sparse_model(8), spec, "y")(too_long)


def test_without_a_declaration_a_variable_length_list_is_padded_dense():
    records, _ = _records(HISTORIES)
    features, _ = parse_fn(models.HISTORY_SPEC, "y")(records)
    assert features["hist"].numpy().tolist() == [[0] * 5, [3, 1, 4, 0, 0], [7, 0, 0, 0, 0], [49, 0, 0, 2, 11]]


def test_a_fixed_length_feature_fed_to_a_ragged_input_has_full_rows():
    records, x = _records(HISTORIES)
    features, _ = parse_fn(models.HISTORY_SPEC, "y", feeds={"x": Feed(RAGGED)})(records)
    assert isinstance(features["x"], tf.RaggedTensor)
    assert features["x"].row_lengths().numpy().tolist() == [4] * 4
    np.testing.assert_array_equal(features["x"].to_tensor().numpy(), x)


def test_a_dense_input_of_a_known_width_gets_lists_padded_to_it_and_a_longer_one_is_named():
    import tf_keras

    hist = tf_keras.Input((6,), name="hist", dtype=tf.int64)
    x = tf_keras.Input((4,), name="x")
    model = tf_keras.Model({"x": x, "hist": hist}, tf_keras.layers.Dense(1)(x))
    records, _ = _records(HISTORIES)
    features, _ = model_parse_fn(model, models.HISTORY_SPEC, "y")(records)
    assert features["hist"].numpy().tolist() == [[0] * 6, [3, 1, 4, 0, 0, 0], [7] + [0] * 5, [49, 0, 0, 2, 11, 0]]
    too_long, _ = _records([list(range(7))])
    with pytest.raises(tf.errors.InvalidArgumentError, match="feature 'hist' has a list longer than the model's input width 6"):
        model_parse_fn(model, models.HISTORY_SPEC, "y")(too_long)


def test_inputs_that_cannot_take_their_feature_are_named():
    import tf_keras

    var_len = {"type": "VarLenFeature", "dtype": "int64"}
    nested = tf_keras.Input((None, 3), name="hist", ragged=True)
    assert mismatch("hist", nested, var_len) == (
        "is ragged with 2 dimensions per example but feature 'hist' has 1 (a list per example is "
        "Input((None,), ragged=True))")
    fixed = {"type": "FixedLenFeature", "shape": [4], "dtype": "float32"}
    assert mismatch("x", tf_keras.Input((None,), name="x", ragged=True), fixed) is None
    strings = {"type": "VarLenFeature", "dtype": "string"}
    assert "is sparse but feature 'tags' holds strings" in (mismatch("tags", tf_keras.Input((9,), sparse=True), strings) or "")
    assert mismatch("hist", tf_keras.Input((None,), ragged=True, dtype=tf.int64), var_len) is None


def test_dense_gradients_for_allreduce_apply_the_same_update():
    """The allreduce step sends an embedding's sparse gradient dense (MWMS cannot gather
    IndexedSlices of different row counts); the update it applies is the one ``minimize`` applies."""
    from tfhadoop.trainer.keras_step import train_step_fn

    records, _ = _records(HISTORIES)
    weights = []
    for dense in (False, True):
        tf.keras.utils.set_random_seed(3)
        model = models.history_bag()
        features, y = model_parse_fn(model, models.HISTORY_SPEC, "y")(records)
        train_step_fn(model, dense_gradients=dense)(features, y)
        weights.append(model.get_weights())
    moved = [w for w in weights[0] if np.abs(w).sum() > 0]
    assert moved  # the step trained
    for sparse_w, dense_w in zip(*weights):
        np.testing.assert_allclose(sparse_w, dense_w, rtol=1e-6, atol=1e-7)


SEQUENCE_SPEC = {"features": {"y": {"type": "FixedLenFeature", "shape": [], "dtype": "float32"}},
                 "sequence_features": {"steps": {"type": "FixedLenSequenceFeature", "shape": [2], "dtype": "float32",
                                                 "allow_missing": True},
                                       "tokens": {"type": "RaggedFeature", "dtype": "int64"}}}
STEPS = [[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [[7.0, 8.0]], [[0.5, 0.25], [9.0, 1.0]]]
TOKENS = [[[1, 2], [3]], [[4]], [[], [5, 6, 7]]]


def _sequence_records():
    from tfhadoop.connectors.example import encode_sequence_example

    return tf.constant([encode_sequence_example({"y": [float(i)]}, {"steps": s, "tokens": t})
                        for i, (s, t) in enumerate(zip(STEPS, TOKENS))])


def _gru():
    import tf_keras

    steps = tf_keras.Input((None, 2), name="steps", ragged=True)
    model = tf_keras.Model({"steps": steps}, tf_keras.layers.Dense(1)(tf_keras.layers.GRU(3)(steps)))
    model.compile("adam", "mse")
    return model


def test_a_sequence_example_gives_context_and_feature_lists_with_each_examples_steps():
    """Issue 30 §1: a SequenceExample dataset trains (it was refused); each feature list is ragged
    in its steps, holding exactly the steps each example has."""
    features, y = model_parse_fn(_gru(), SEQUENCE_SPEC, "y")(_sequence_records())
    assert isinstance(features["steps"], tf.RaggedTensor)
    assert features["steps"].to_list() == STEPS
    assert y.numpy().tolist() == [0.0, 1.0, 2.0]
    dense, _ = parse_fn(SEQUENCE_SPEC, "y", feeds={"tokens": Feed(RAGGED)})(_sequence_records())
    assert dense["tokens"].to_list() == TOKENS  # a feature list of variable-length steps
    assert dense["steps"].numpy().tolist()[1] == [[7.0, 8.0], [0.0, 0.0], [0.0, 0.0]]  # no ragged input: padded


def test_a_gru_over_ragged_steps_has_the_loss_keras_computes():
    model: Any = _gru()
    features, y = model_parse_fn(model, SEQUENCE_SPEC, "y")(_sequence_records())
    _, loss = compute_loss(model, features, y, training=False)
    expected = model.evaluate({"steps": tf.ragged.constant(STEPS, ragged_rank=1)}, np.arange(3, dtype=np.float32),
                              batch_size=3, verbose=0)
    assert float(loss) == pytest.approx(expected, rel=1e-6)


def test_a_feature_list_for_a_per_example_input_is_named():
    import tf_keras

    entry = SEQUENCE_SPEC["sequence_features"]["steps"]
    assert mismatch("steps", tf_keras.Input((2,), name="steps"), entry) == (
        "has 1 dimensions per example but feature 'steps' is a feature list of 2 (steps first): "
        "declare it Input((None, ...), ragged=True)")
    assert mismatch("steps", tf_keras.Input((None, 2), name="steps", ragged=True), entry) is None


VECTOR_SPEC = {"features": {  # what the export writes for a sparse ML vector column of size 8
    "vec": {"type": "SparseFeature", "index_key": "vec.indices", "value_key": "vec.values", "dtype": "float32",
            "size": 8},
    "x": {"type": "FixedLenFeature", "shape": [4], "dtype": "float32"},
    "y": {"type": "FixedLenFeature", "shape": [], "dtype": "float32"}}}


def _vector_records(vectors: list[dict[int, float]]):
    return tf.constant([encode_example({"vec.indices": sorted(v), "vec.values": [v[k] for k in sorted(v)],
                                        "x": [0.0] * 4, "y": [float(i)]}) for i, v in enumerate(vectors)])


def test_a_sparse_vector_reaches_a_sparse_input_with_its_size_as_the_dense_shape():
    """Issue 30 §1: the export's indices + values pair parses to the vector itself, explicit zeros
    kept, an empty vector an empty row; a dense input of the size gets it densified."""
    import tf_keras

    vectors = [{1: 2.0, 7: -1.5}, {}, {0: 0.0, 3: 4.0}]
    want = np.zeros((3, 8), np.float32)
    want[0, 1], want[0, 7], want[2, 3] = 2.0, -1.5, 4.0
    renamed = {"features": {("hist" if k == "vec" else k): {**v} for k, v in VECTOR_SPEC["features"].items()}}
    hist, _ = model_parse_fn(_sparse_model(8), renamed, "y")(_vector_records(vectors))  # its sparse input: hist
    assert isinstance(hist["hist"], tf.SparseTensor)
    assert hist["hist"].dense_shape.numpy().tolist() == [3, 8]
    assert hist["hist"].indices.numpy().tolist() == [[0, 1], [0, 7], [2, 0], [2, 3]]
    np.testing.assert_array_equal(tf.sparse.to_dense(hist["hist"]).numpy(), want)
    vec_in = tf_keras.Input((8,), name="vec")
    x = tf_keras.Input((4,), name="x")
    dense_model = tf_keras.Model({"vec": vec_in, "x": x}, tf_keras.layers.Dense(1)(vec_in))
    dense, _ = model_parse_fn(dense_model, VECTOR_SPEC, "y")(_vector_records(vectors))
    np.testing.assert_array_equal(dense["vec"].numpy(), want)


def test_inputs_narrower_than_their_feature_are_named():
    """Issue 30 §3: a model that needs a padded length the data exceeds (the export records each
    list's longest as ``max_length``), or a sparse vector wider than the input, fails at submit."""
    import tf_keras

    var_len = {"type": "VarLenFeature", "dtype": "int64", "max_length": 200}
    assert mismatch("hist", tf_keras.Input((50,), name="hist", dtype=tf.int64), var_len) == (
        "is dense of width 50 but feature 'hist' holds lists of up to 200 values (a list is padded to the width, "
        "never cut): declare it Input((200,)) or Input((None,), ragged=True)")
    assert mismatch("hist", tf_keras.Input((200,), name="hist", dtype=tf.int64), var_len) is None
    assert mismatch("hist", tf_keras.Input((None,), name="hist", dtype=tf.int64), var_len) is None
    assert mismatch("hist", tf_keras.Input((None,), ragged=True, dtype=tf.int64), var_len) is None
    vector = VECTOR_SPEC["features"]["vec"]
    assert mismatch("vec", tf_keras.Input((6,), sparse=True), vector) == (
        "is sparse of width 6 but feature 'vec' is a sparse vector of size 8: declare it Input((8,), sparse=True)")
    assert mismatch("vec", tf_keras.Input((8,), sparse=True), vector) is None


def test_a_dense_input_gets_lists_padded_with_the_declared_value():
    """Issue 30 §1: ``--pad hist=-1`` (the parse spec's ``pad``) pads with -1, to the input's
    width or, for an input of open width, to the batch's longest; a ragged input is not padded."""
    import tf_keras

    spec = {"features": {**models.HISTORY_SPEC["features"],
                         "hist": {"type": "VarLenFeature", "dtype": "int64", "pad": -1}}}
    hist = tf_keras.Input((6,), name="hist", dtype=tf.int64)
    x = tf_keras.Input((4,), name="x")
    model = tf_keras.Model({"x": x, "hist": hist}, tf_keras.layers.Dense(1)(x))
    records, _ = _records(HISTORIES)
    features, _ = model_parse_fn(model, spec, "y")(records)
    assert features["hist"].numpy().tolist() == [[-1] * 6, [3, 1, 4, -1, -1, -1], [7] + [-1] * 5,
                                                 [49, 0, 0, 2, 11, -1]]
    features, _ = parse_fn(spec, "y")(records)  # no model: dense, the batch's longest
    assert features["hist"].numpy().tolist() == [[-1] * 5, [3, 1, 4, -1, -1], [7, -1, -1, -1, -1], [49, 0, 0, 2, 11]]
    features, _ = model_parse_fn(models.history_bag(), spec, "y")(records)
    assert features["hist"].to_list() == HISTORIES
