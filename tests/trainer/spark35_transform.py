"""``Model.transform`` on a real PySpark 3.5 (no Arrow UDFs: the ``mapInArrow`` fallback), local
Spark, a SavedModel on local disk; run by test_spark35_fallback.py with PySpark 3.5 first on
``sys.path``. Exits non-zero unless every row is scored exactly once with ``model.predict``'s score."""
from __future__ import annotations

import os
import sys
import tempfile

import numpy as np

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def main() -> int:
    import pyspark
    import tf_keras
    from pyspark.sql import SparkSession

    from tfhadoop.spark import scorer
    from tfhadoop.trainer import Model

    assert pyspark.__version__.startswith("3.5."), pyspark.__version__
    assert not scorer.has_arrow_udf()
    folder = tempfile.mkdtemp(prefix="spark35-model-")
    x = tf_keras.Input((4,), name="x")
    out = tf_keras.layers.Dense(1, name="score")(tf_keras.layers.Dense(8, activation="relu")(x))
    keras_model = tf_keras.Model({"x": x}, out)
    keras_model.save(folder, save_format="tf")
    spark = (SparkSession.builder.master("local[1]").appName("spark35-transform")
             .config("spark.ui.enabled", "false").getOrCreate())
    rng = np.random.default_rng(5)
    xs = rng.normal(size=(500, 4)).astype(np.float32)
    df = spark.createDataFrame([(i, [float(v) for v in xs[i]]) for i in range(500)], "id bigint, x array<float>")
    got = Model("file://" + folder).transform(df.repartition(3)).collect()
    spark.stop()
    ids = sorted(r.id for r in got)
    assert ids == list(range(500)), f"rows scored {len(got)}, distinct ids {len(set(ids))}"
    score = np.array([r.prediction for r in sorted(got, key=lambda r: r.id)])
    np.testing.assert_allclose(score, keras_model.predict({"x": xs}, verbose=0)[:, 0], rtol=1e-5, atol=1e-5)  # pyright: ignore[reportArgumentType] - tf_keras is unannotated: the checker takes verbose's type from its default "auto"; 0 is its documented silent mode
    print(f"pyspark {pyspark.__version__}: {len(got)} rows scored once each, equal to model.predict")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
