"""The model of the pipeline tests, shipped to the YARN containers with the job's python_path (so
not named test_*): trainer_test_models' linear problem as a functional model with a named input,
so the table's other columns (its id) are features it ignores."""
from __future__ import annotations


def linear():
    import tf_keras

    x = tf_keras.Input((4,), name="x")
    model = tf_keras.Model({"x": x}, tf_keras.layers.Dense(1)(x))
    model.compile(optimizer=tf_keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    return model


ITEMS, VECTOR_SIZE = 1000, 30  # the variable-length table's item ids and sparse vector size
TAGS = ["news", "sport", "music", "film", "games", "food"]  # "other" tags hit the lookup's OOV bucket


def user_features():
    """Issue 30's done-when model: an embedding bag over the ragged ``item_history`` (0..200 ids), a
    StringLookup over the ragged ``tags``, a dense layer over the sparse ML vector ``vec``."""
    import tensorflow as tf
    import tf_keras

    class MeanOverRows(tf_keras.layers.Layer):
        """[batch, None, d] ragged -> [batch, d]: each row's mean, 0 for an empty row."""

        def call(self, e):
            return tf.reduce_sum(e, axis=1) / tf.maximum(tf.cast(e.row_lengths(), tf.float32)[:, None], 1.0)

    history = tf_keras.Input((None,), name="item_history", dtype=tf.int64, ragged=True)
    tags = tf_keras.Input((None,), name="tags", dtype=tf.string, ragged=True)
    vec = tf_keras.Input((VECTOR_SIZE,), name="vec", sparse=True)
    bag = MeanOverRows()(tf_keras.layers.Embedding(ITEMS, 4)(history))
    tag_ids = tf_keras.layers.StringLookup(vocabulary=TAGS)(tags)
    tag_bag = MeanOverRows()(tf_keras.layers.Embedding(len(TAGS) + 1, 4)(tag_ids))
    joined = tf_keras.layers.Concatenate()([bag, tag_bag, tf_keras.layers.Dense(4)(vec)])
    model = tf_keras.Model({"item_history": history, "tags": tags, "vec": vec}, tf_keras.layers.Dense(1)(joined))
    model.compile(optimizer=tf_keras.optimizers.Adam(0.02), loss="mse")
    return model
