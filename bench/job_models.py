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
