"""The models the benches' YARN jobs train, and the same for their peers in this process.

Containers import this file as the top-level module ``job_models`` (``--python-path bench``,
``--model job_models:mlp``), so it imports nothing from ``bench``. ``SPE`` (steps_per_execution)
in the environment tunes the peers' ``model.fit``; `tfhadoop train` sets its own.
"""
from __future__ import annotations

import os

FEATURES = 16  # the peers' dataset (bench_trainer_peers.write_dataset): x of 16 floats, y


def _dense(inputs: int, hidden: int, learning_rate: float):
    import tf_keras

    m = tf_keras.Sequential([tf_keras.Input((inputs,), name="x"), tf_keras.layers.Dense(hidden, activation="relu"),
                             tf_keras.layers.Dense(hidden, activation="relu"), tf_keras.layers.Dense(1)])
    m.compile(optimizer=tf_keras.optimizers.Adam(learning_rate), loss="mse",
              steps_per_execution=int(os.environ.get("SPE", "1")))
    return m


def model():
    """The narrow MLP of the trainer-vs-`model.fit` benches: 16 -> 64 -> 64 -> 1, Adam."""
    return _dense(FEATURES, 64, 1e-3)


def wide_model():
    """A model where compute, not RPC, dominates a step: 16 -> 1024 -> 1024 -> 1, ~1.07M parameters."""
    return _dense(FEATURES, 1024, 1e-4)


def mlp():
    """The allreduce bench's MLP on the test models' 4-feature data: 4 -> 64 -> 64 -> 1, Adam."""
    return _dense(4, 64, 1e-3)


ITEMS = 10_000  # the ragged bench's item ids (bench_ragged.write_dataset): 0 .. ITEMS-1


def ragged_bag():
    """Issue 30 §6's model: an embedding bag over the ragged ``ids`` (``Input(ragged=True)``, 16-d
    embeddings averaged per row, 0 for an empty row) -> 1, Adam."""
    import tensorflow as tf
    import tf_keras

    class MeanOverItems(tf_keras.layers.Layer):
        def call(self, e):
            return tf.reduce_sum(e, axis=1) / tf.maximum(tf.cast(e.row_lengths(), tf.float32)[:, None], 1.0)

    ids = tf_keras.Input((None,), name="ids", dtype=tf.int64, ragged=True)
    bag = MeanOverItems()(tf_keras.layers.Embedding(ITEMS, 16)(ids))
    m = tf_keras.Model({"ids": ids}, tf_keras.layers.Dense(1)(bag))
    m.compile(optimizer=tf_keras.optimizers.Adam(1e-2), loss="mse", steps_per_execution=int(os.environ.get("SPE", "1")))
    return m
