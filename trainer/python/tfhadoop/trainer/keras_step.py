"""What one training step computes: the same loss and update as tf-keras ``model.fit``.

The closure's step (``step.build_task_fn``) calls :func:`train_step_fn` per batch. It is
tf-keras's ``Model.train_step`` without its metric updates: forward pass with
``training=True``, ``model.compute_loss`` (the compiled losses per output, ``loss_weights``,
sample weights, ``model.losses`` — kernel/activity regularizers and ``add_loss`` — and, under a
distribution strategy, the division by the global batch size), then
``optimizer.minimize``. A model that overrides ``compute_loss`` gets its own loss, as in ``fit``.

The step returns ``(examples, loss × examples)`` instead of updating Keras's loss metric: the
coordinator sums these over the closures that COMPLETED, so the reported epoch loss is Keras's
epoch ``loss`` (the batch-size-weighted mean of the batch losses) counted exactly once, even when
a closure was retried on another worker (docs/design/trainer.md, "Keras semantics").
"""
from __future__ import annotations

import tensorflow as tf

from tfhadoop.trainer.spec import label_columns


def split_batch(parsed: dict, label, weight: str | None = None) -> tuple:
    """Parsed columns -> ``(features, y)`` or ``(features, y, sample_weight)``, the tuple
    ``model.fit`` takes from a dataset. One label column: ``y`` is its tensor; several: a dict
    keyed by column, which Keras matches to the model's outputs by name."""
    parsed = dict(parsed)
    labels = label_columns(label)
    ys = {name: parsed.pop(name) for name in labels}
    y = ys[labels[0]] if len(labels) == 1 else ys
    if weight is None:
        return parsed, y
    return parsed, y, parsed.pop(weight)


def model_inputs(model, features: dict):
    """Feature dict for a model with named inputs; the one tensor for a single-input model fed by
    one feature column."""
    names = getattr(model, "input_names", None) or []
    if len(features) == 1 and len(names) <= 1:
        return next(iter(features.values()))
    return features


def compute_loss(model, features: dict, y, sample_weight=None, training: bool = True):
    """Forward pass and the loss ``model.fit`` minimizes: ``(y_pred, loss)``."""
    x = model_inputs(model, features)
    y_pred = model(x, training=training)
    loss = model.compute_loss(x, y, y_pred, sample_weight)
    if loss is None:
        raise ValueError("the model has no loss: compile it with loss=... (or return one from compute_loss)")
    return y_pred, loss


def train_step_fn(model, dense_gradients: bool = False):
    """``step(features, y[, sample_weight]) -> (examples int64, loss_sum float32)``, to run in a
    replica context (``strategy.run``). ``loss_sum`` is the loss Keras reports for the batch
    (its ``loss`` metric: the loss before the division by the number of replicas) times the
    batch's examples, so summing it over batches and dividing by the examples gives the epoch
    ``loss`` of ``model.fit``.

    ``dense_gradients`` (allreduce): an embedding's sparse gradient (``tf.IndexedSlices``) is made
    dense before the optimizer aggregates it across replicas. MultiWorkerMirroredStrategy gathers
    IndexedSlices with a collective that needs the same number of rows on every replica, and
    replicas whose batches touch different numbers of ids abort it ("Shape mismatch in the
    collective instance"; seen with a ragged embedding bag; tensorflow#33339, #34066). Dense, the
    sum is the same; the cost is the table's size per step, as Horovod's ``sparse_as_dense``."""
    optimizer = model.optimizer

    def step(features, y, sample_weight=None):
        with tf.GradientTape() as tape:
            _, loss = compute_loss(model, features, y, sample_weight)
        if dense_gradients:
            variables = model.trainable_variables
            if hasattr(optimizer, "compute_gradients"):  # what minimize does (loss scaling included)
                grads_and_vars = optimizer.compute_gradients(loss, variables, tape)
            else:  # a legacy optimizer
                grads_and_vars = list(zip(tape.gradient(loss, variables), variables))
            optimizer.apply_gradients([(tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g, v)
                                       for g, v in grads_and_vars])
        else:
            optimizer.minimize(loss, model.trainable_variables, tape=tape)
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        n = tf.shape(tf.nest.flatten(y)[0], out_type=tf.int64)[0]
        return n, tf.cast(loss, tf.float32) * float(replicas) * tf.cast(n, tf.float32)

    return step
