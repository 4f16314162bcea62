"""Models and a dataset writer for the trainer tests. Imported by the test processes and, through
the job's python_path, by the YARN containers (so not named test_*)."""
from __future__ import annotations

import os
import tempfile

import numpy as np

WEIGHTS = np.array([1.5, -2.0, 0.5, 3.0], dtype=np.float32)
SPEC = {"features": {"x": {"type": "FixedLenFeature", "shape": [4], "dtype": "float32"},
                     "y": {"type": "FixedLenFeature", "shape": [], "dtype": "float32"}}}

WEIGHTED_SPEC = {"features": {**SPEC["features"], "w": {"type": "FixedLenFeature", "shape": [], "dtype": "float32"}}}
HISTORY_SPEC = {"features": {**SPEC["features"], "hist": {"type": "VarLenFeature", "dtype": "int64"}}}
ITEMS, MAX_HISTORY = 50, 12  # item ids 0..49; a history holds 0..12 of them (empty ones included)
ITEM_EFFECT = np.linspace(-1.0, 1.0, ITEMS).astype(np.float32)  # what an item adds to y, averaged over the history
FROZEN_L2 = 1.0  # the frozen layer's kernel is the 4x4 identity: its L2 term is FROZEN_L2 * 4, constant


def linear():
    """y = w.x + b, SGD: learns WEIGHTS in a couple of epochs."""
    import tf_keras

    model = tf_keras.Sequential([tf_keras.Input((4,), name="x"), tf_keras.layers.Dense(1)])
    model.compile(optimizer=tf_keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    return model


def broken():
    raise ValueError("model bug: this model function always raises")


def make_examples(n: int, seed: int):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    y = x @ WEIGHTS + 0.05 * rng.normal(size=n).astype(np.float32)
    return x, y


def make_histories(n: int, seed: int) -> list[list[int]]:
    """The ``hist`` column of :func:`write_dataset` with ``history=True``: a variable-length list of
    item ids per example, 0..MAX_HISTORY long."""
    rng = np.random.default_rng(2000 + seed)
    return [rng.integers(0, ITEMS, size=rng.integers(0, MAX_HISTORY + 1)).tolist() for _ in range(n)]


def make_sequences(n: int, seed: int):
    """Sequences for the SequenceExample tests: 1..6 steps of 2 values
    per example, and ``y`` the mean of the steps' first values (what a GRU over the steps learns)."""
    rng = np.random.default_rng(3000 + seed)
    steps = [rng.normal(size=(rng.integers(1, 7), 2)).astype(np.float32) for _ in range(n)]
    return steps, np.array([s[:, 0].mean() for s in steps], np.float32)


def history_effect(hist: list[int]) -> float:
    return float(ITEM_EFFECT[hist].mean()) if hist else 0.0


def example_weights(n: int, seed: int):
    """The ``w`` column of :func:`write_dataset` with ``weights=True``: one weight per example."""
    return np.random.default_rng(1000 + seed).uniform(0.2, 2.0, size=n).astype(np.float32)


def write_dataset(url: str, train_shards=(600, 600, 600, 600), eval_records=400, compression="gzip",
                  split: bool = True, weights: bool = False, index_interval: int = 1 << 20,
                  history: bool = False, parse_spec: dict | None = None) -> dict:
    """A dataset as the export job writes it (shards, _SUCCESS, _tfhadoop.json), uploaded to
    ``url`` on HDFS (or written to the local folder ``url``). ``split=False``: as exported
    without ``--split`` (no split names, no eval shard). ``weights``: a float column ``w``
    (:func:`example_weights`) to train with ``--sample-weight w``. ``history``: a variable-length
    int64 column ``hist`` (:func:`make_histories`) whose items' mean effect adds to ``y``, for
    ragged models (:func:`history_bag`). ``parse_spec``: the manifest's instead of the one the
    columns imply (what a newer export records beside them). Returns the manifest."""
    from tfhadoop.connectors import dataset, hdfs
    from tfhadoop.connectors.example import encode_example
    from tfhadoop.connectors.tfrecord_writer import write_records

    local = tempfile.mkdtemp(prefix="trainer-dataset-")
    ext = {"gzip": ".tfrecord.gz", "zlib": ".tfrecord.zz", "none": ".tfrecord"}[compression]
    comp = None if compression == "none" else compression
    n_files = len(train_shards) + (1 if eval_records and split else 0)
    files = []
    shards = [(n, "train" if split else None) for n in train_shards] + \
        ([(eval_records, "eval")] if eval_records and split else [])
    for i, (n, split_name) in enumerate(shards):
        name = f"part-{i:05d}-of-{n_files:05d}{ext}"
        x, y = make_examples(n, seed=i)
        w = example_weights(n, seed=i)
        hists = make_histories(n, seed=i) if history else [None] * n
        records = (encode_example({"x": [float(v) for v in xi], **({"w": [float(wi)]} if weights else {}),
                                   **({"hist": [int(h) for h in hi], "y": [float(yi) + history_effect(hi)]}
                                      if hi is not None else {"y": [float(yi)]})})
                   for xi, yi, wi, hi in zip(x, y, w, hists))
        write_records(os.path.join(local, name), records, compression=comp, index_interval=index_interval)
        files.append({"path": name, "records": n, "bytes": os.path.getsize(os.path.join(local, name)),
                      "split": split_name})
    splits = {}
    for f in files:
        s = splits.setdefault(f["split"] or "all", {"records": 0, "files": []})
        s["records"] += f["records"]
        s["files"].append(f["path"])
    spec = parse_spec or (HISTORY_SPEC if history else WEIGHTED_SPEC if weights else SPEC)
    manifest = dataset.manifest_doc("Example", compression, files, splits=splits,
                                    schema={}, parse_spec=spec, source={"test": True}, created="test")
    with open(os.path.join(local, dataset.MANIFEST), "w") as f:
        f.write(dataset.dumps(manifest))
    open(os.path.join(local, "_SUCCESS"), "w").close()
    if url.startswith("hdfs://"):
        hdfs.upload_dir(local, url)
    else:
        import shutil

        shutil.copytree(local, url)
    return manifest


def unnamed_sequential():
    """A Sequential without ``Input(name=...)``: its inputs are unknown until it is called."""
    import tf_keras

    model = tf_keras.Sequential([tf_keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def wrong_shape():
    """Input ``x`` of shape (3,): the dataset's ``x`` has 4 values."""
    import tf_keras

    model = tf_keras.Sequential([tf_keras.Input((3,), name="x"), tf_keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def wrong_name():
    """Two inputs, one of them not a feature of the dataset."""
    import tf_keras

    x, z = tf_keras.Input((4,), name="x"), tf_keras.Input((1,), name="z")
    out = tf_keras.layers.Dense(1)(tf_keras.layers.Concatenate()([x, z]))
    model = tf_keras.Model({"x": x, "z": z}, out)
    model.compile(optimizer="sgd", loss="mse")
    return model


def frozen_regularized():
    """A frozen identity layer with an L2 kernel regularizer (a constant term FROZEN_L2 * 4 in
    every batch's loss) under a trainable linear head: the loss the trainer reports must hold
    that term, and it stays out of the way of learning WEIGHTS."""
    import tf_keras

    frozen = tf_keras.layers.Dense(4, use_bias=False, kernel_initializer="identity", trainable=False,
                                   kernel_regularizer=tf_keras.regularizers.L2(FROZEN_L2))
    model = tf_keras.Sequential([tf_keras.Input((4,), name="x"), frozen, tf_keras.layers.Dense(1)])
    model.compile(optimizer=tf_keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    return model


def two_outputs_y_w():
    """Two outputs named ``y`` and ``w`` (columns of the weighted dataset)."""
    import tf_keras

    x = tf_keras.Input((4,), name="x")
    model = tf_keras.Model(x, [tf_keras.layers.Dense(1, name="y")(x), tf_keras.layers.Dense(1, name="w")(x)])
    model.compile(optimizer="sgd", loss={"y": "mse", "w": "mae"}, loss_weights={"y": 1.0, "w": 0.5})
    return model


def history_bag():
    """An embedding bag over the ragged ``hist`` (``Input(ragged=True)``: no padding reaches it) plus
    a linear part over ``x``: learns WEIGHTS and ITEM_EFFECT (an empty history adds nothing)."""
    import tensorflow as tf
    import tf_keras

    class MeanOverItems(tf_keras.layers.Layer):
        """[batch, None, d] ragged -> [batch, d]: the mean over each row's items, 0 for an empty row."""

        def call(self, e):
            return tf.reduce_sum(e, axis=1) / tf.maximum(tf.cast(e.row_lengths(), tf.float32)[:, None], 1.0)

    x = tf_keras.Input((4,), name="x")
    hist = tf_keras.Input((None,), name="hist", dtype=tf.int64, ragged=True)
    effect = tf_keras.layers.Embedding(ITEMS, 1, embeddings_initializer="zeros")(hist)  # [batch, None, 1]
    out = tf_keras.layers.Add()([tf_keras.layers.Dense(1)(x), MeanOverItems()(effect)])
    model = tf_keras.Model({"x": x, "hist": hist}, out)
    model.compile(optimizer=tf_keras.optimizers.Adam(0.05), loss="mse")
    return model


def ragged_nested_history():
    """``hist`` as a ragged input of lists of 3-vectors: the dataset holds one flat list per example."""
    import tensorflow as tf
    import tf_keras

    x = tf_keras.Input((4,), name="x")
    hist = tf_keras.Input((None, 3), name="hist", dtype=tf.int64, ragged=True)
    bag = tf_keras.layers.Lambda(lambda h: tf.cast(tf.reduce_sum(h, axis=[1, 2]), tf.float32)[:, None])(hist)
    model = tf_keras.Model({"x": x, "hist": hist}, tf_keras.layers.Add()([tf_keras.layers.Dense(1)(x), bag]))
    model.compile(optimizer="sgd", loss="mse")
    return model


def history_padded_to_5():
    """``hist`` as a dense input of 5 ids: the dataset's histories hold up to MAX_HISTORY (12)."""
    import tensorflow as tf
    import tf_keras

    x = tf_keras.Input((4,), name="x")
    hist = tf_keras.Input((5,), name="hist", dtype=tf.int64)
    bag = tf_keras.layers.GlobalAveragePooling1D()(tf_keras.layers.Embedding(ITEMS, 1)(hist))
    model = tf_keras.Model({"x": x, "hist": hist}, tf_keras.layers.Add()([tf_keras.layers.Dense(1)(x), bag]))
    model.compile(optimizer="sgd", loss="mse")
    return model


def gru_over_events():
    """A GRU over the feature lists ``events.x1`` and ``events.x2`` (one value a step) that the
    export makes of an ``array<struct<x1, x2>>`` column: the steps of :func:`make_sequences`."""
    import tf_keras

    x1 = tf_keras.Input((None, 1), name="events.x1", ragged=True)
    x2 = tf_keras.Input((None, 1), name="events.x2", ragged=True)
    steps = tf_keras.layers.Concatenate(axis=-1)([x1, x2])
    model = tf_keras.Model({"events.x1": x1, "events.x2": x2}, tf_keras.layers.Dense(1)(tf_keras.layers.GRU(8)(steps)))
    model.compile(optimizer=tf_keras.optimizers.Adam(0.02), loss="mse")
    return model
