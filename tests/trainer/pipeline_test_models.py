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
