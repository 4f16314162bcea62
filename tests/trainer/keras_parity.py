"""The trainer's training step against tf-keras ``model.fit`` on the same batches and initial
weights, run as its own process by test_keras_step.py (a ParameterServerStrategy connects the
process's eager context to a cluster for good, so it stays out of the pytest process).

In-process cluster (1 PS + 1 worker ``tf.distribute.Server``), ParameterServerStrategy and
ClusterCoordinator as in coordinator.py; each case's records, written to a shard file, are
trained by the trainer's own task function (``step.build_task_fn``: its reader, parser and
``keras_step.train_step_fn``) in a scheduled closure. Prints
one line ``RESULT <json>``: per case the epoch loss the trainer reports (sum of the closure's
loss sums / examples), ``model.fit``'s epoch loss, the largest weight difference after the
epoch, and the regularization term at the initial weights.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile

os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf
import tf_keras

from tfhadoop.trainer.server import in_process_ps_cluster
from tfhadoop.trainer.step import build_task_fn
from tfhadoop.trainer.tasks import Task

N, BATCH = 40, 16  # batches of 16, 16 and 8: the epoch loss weighs batches by their size
SPEC = {"features": {"x": {"type": "FixedLenFeature", "shape": [4], "dtype": "float32"},
                     "a": {"type": "FixedLenFeature", "shape": [], "dtype": "float32"},
                     "b": {"type": "FixedLenFeature", "shape": [], "dtype": "float32"},
                     "c": {"type": "FixedLenFeature", "shape": [], "dtype": "int64"},
                     "w": {"type": "FixedLenFeature", "shape": [], "dtype": "float32"}}}


def columns():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(N, 4)).astype(np.float32)
    return {"x": x, "a": (x @ [1.0, -2.0, 0.5, 3.0]).astype(np.float32), "b": rng.normal(size=N).astype(np.float32),
            "c": (x[:, 0] > 0).astype(np.int64), "w": rng.uniform(0.1, 3.0, size=N).astype(np.float32)}


def records(cols) -> list[bytes]:
    out = []
    for i in range(N):
        feature = {"x": tf.train.Feature(float_list=tf.train.FloatList(value=cols["x"][i])),
                   "c": tf.train.Feature(int64_list=tf.train.Int64List(value=[cols["c"][i]]))}
        for k in ("a", "b", "w"):
            feature[k] = tf.train.Feature(float_list=tf.train.FloatList(value=[cols[k][i]]))
        out.append(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return out


def dense_input():
    return tf_keras.Input((4,), name="x")


def l2_kernel():
    i = dense_input()
    m = tf_keras.Model(i, tf_keras.layers.Dense(1, kernel_regularizer=tf_keras.regularizers.L2(0.5))(i))
    m.compile(optimizer=tf_keras.optimizers.SGD(0.05), loss="mse")
    return m


def activity():
    i = dense_input()
    h = tf_keras.layers.Dense(3, activity_regularizer=tf_keras.regularizers.L1(0.05))(i)
    m = tf_keras.Model(i, tf_keras.layers.Dense(1)(h))
    m.compile(optimizer=tf_keras.optimizers.Adam(0.01), loss="mse")
    return m


def two_outputs(losses, weights):
    def build():
        i = dense_input()
        h = tf_keras.layers.Dense(3, activation="tanh")(i)
        m = tf_keras.Model(i, [tf_keras.layers.Dense(1, name="a")(h), tf_keras.layers.Dense(1, name="b")(h)])
        m.compile(optimizer=tf_keras.optimizers.SGD(0.05), loss=losses, loss_weights=weights, metrics=["mae"])
        return m
    return build


def weighted():
    i = dense_input()
    m = tf_keras.Model(i, tf_keras.layers.Dense(1)(i))
    m.compile(optimizer=tf_keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    return m


def logistic_weighted_l2():
    i = dense_input()
    out = tf_keras.layers.Dense(1, activation="sigmoid", kernel_regularizer=tf_keras.regularizers.L2(0.1))(i)
    m = tf_keras.Model(i, out)
    m.compile(optimizer=tf_keras.optimizers.Adam(0.05), loss="binary_crossentropy", metrics=["accuracy"])
    return m


def everything():
    """Two outputs, dict losses and loss_weights, a kernel and an activity regularizer, an
    ``add_loss`` term, sample weights."""
    i = dense_input()
    h = tf_keras.layers.Dense(3, kernel_regularizer=tf_keras.regularizers.L2(0.2),
                              activity_regularizer=tf_keras.regularizers.L2(0.01))(i)
    a, b = tf_keras.layers.Dense(1, name="a")(h), tf_keras.layers.Dense(1, name="b")(h)
    m = tf_keras.Model(i, {"a": a, "b": b})
    m.add_loss(0.01 * tf.reduce_mean(tf.abs(h)))
    m.compile(optimizer=tf_keras.optimizers.SGD(0.05), loss={"a": "mse", "b": tf_keras.losses.Huber()},
              loss_weights={"a": 0.7, "b": 2.0})
    return m


CASES = {  # name: (model function, label, sample weight column)
    "l2_kernel": (l2_kernel, "a", None),
    "activity_regularizer": (activity, "a", None),
    "two_outputs_dict_losses": (two_outputs({"a": "mse", "b": "mae"}, {"a": 1.0, "b": 0.3}), "a,b", None),
    "two_outputs_list_losses": (two_outputs(["mse", "mae"], [0.4, 2.0]), ["b", "a"], None),
    "sample_weights": (weighted, "a", "w"),
    "logistic_int_label_weights_l2": (logistic_weighted_l2, "c", "w"),
    "everything": (everything, "a,b", "w"),
}


def main() -> None:
    names = sys.argv[1:] or list(CASES)
    strategy, coordinator, servers = in_process_ps_cluster()
    cols = columns()
    shard = os.path.join(tempfile.mkdtemp(prefix="keras-parity-"), "part-00000.tfrecord")
    with tf.io.TFRecordWriter(shard) as w:
        for r in records(cols):
            w.write(r)
    results = {}
    for name in names:
        build, label, weight = CASES[name]
        tf_keras.utils.set_random_seed(1)
        plain = build()
        initial = plain.get_weights()
        plain(cols["x"][:BATCH])
        reg = float(tf.add_n(plain.losses)) if plain.losses else 0.0
        with strategy.scope():  # as coordinator.run builds the model
            model = build()
            model.optimizer.build(model.trainable_variables)
        model.set_weights(initial)
        task = build_task_fn(strategy, model, SPEC, label, BATCH, None, weight)  # the trainer's closure
        result = task.schedule(coordinator, [Task(0, shard, 0, N, offset=0, skip=0)])
        coordinator.join()
        n, total = (float(np.sum(v)) for v in result.fetch())
        labels = label.split(",") if isinstance(label, str) else label
        y = cols[labels[0]] if len(labels) == 1 else {k: cols[k] for k in labels}
        history = plain.fit(cols["x"], y, sample_weight=cols[weight] if weight else None, batch_size=BATCH,
                            epochs=1, shuffle=False, verbose=0)
        diff = max(float(np.max(np.abs(a - b))) for a, b in zip(model.get_weights(), plain.get_weights()))
        moved = max(float(np.max(np.abs(a - b))) for a, b in zip(initial, plain.get_weights()))
        results[name] = {"examples": int(n), "trainer_loss": float(total) / int(n),
                         "fit_loss": float(history.history["loss"][0]), "max_weight_diff": diff,
                         "weights_moved": moved, "regularization_at_start": reg}
        print(name, results[name], file=sys.stderr, flush=True)
    print("RESULT " + json.dumps(results), flush=True)
    del servers
    os._exit(0)  # the coordinator's threads hold remote handles


if __name__ == "__main__":
    main()
