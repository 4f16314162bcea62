"""The model `tfhadoop demo` trains: logistic regression of the demo table's ``label`` on its
``x`` column. Lives in the package so YARN containers can import it with no --python-path."""
from __future__ import annotations


def build():
    """A compiled tf-keras model; the trainer feeds it the manifest's features by name (columns
    it has no input for are ignored)."""
    import tf_keras

    x = tf_keras.Input((), name="x")
    h = tf_keras.layers.Reshape((1,))(x)
    out = tf_keras.layers.Dense(1, activation="sigmoid")(h)
    model = tf_keras.Model({"x": x}, out)
    model.compile(optimizer=tf_keras.optimizers.Adam(0.1), loss="binary_crossentropy", metrics=["accuracy"])
    return model
