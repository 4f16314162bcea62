"""Pipelines on the embedded cluster with real Spark, Hive metastore, YARN and TensorFlow: Hive
table -> ``Trainer.fit`` -> ``Model.transform`` -> Hive table, the export reuse, the column
checks, and the ``tfhadoop predict`` twin (in-process and under spark-submit)."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from tests.trainer import trainer_test_models as models
from tfhadoop.errors import CommandError, ValidationError

HERE = Path(__file__).resolve().parent

pytestmark = [pytest.mark.cluster]

ROWS = 1200


def _local_model(url: str, folder: Path):
    """The SavedModel at ``url`` loaded by tf-keras in this process: the reference scores."""
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tf_keras

    from tfhadoop.connectors import hdfs

    hdfs.download_dir(url, str(folder))
    model = tf_keras.models.load_model(str(folder))
    assert model is not None, f"no SavedModel at {url}"
    return model


@pytest.fixture(scope="module")
def features(spark):
    """A Hive table of the linear test problem: id, x (array<float> of 4), y."""
    x, y = models.make_examples(ROWS, seed=11)
    rows = [(i, [float(v) for v in x[i]], float(y[i])) for i in range(ROWS)]
    table = f"fit_src_{uuid.uuid4().hex[:6]}"
    spark.createDataFrame(rows, "id bigint, x array<float>, y float").write.format("parquet").saveAsTable(table)
    return table


@pytest.fixture(scope="module")
def fitted(spark, hadoop_cluster, features):
    """One short training on YARN through ``Trainer.fit`` of the table, shared by the tests."""
    from tfhadoop.trainer import Trainer

    run = hadoop_cluster.hdfs_url(f"/tmp/pipeline-tests/run-{uuid.uuid4().hex[:8]}")
    spec = dict(model="pipeline_test_models:linear", python_path=[str(HERE)], label="y", workers=1, ps=1,
                epochs=2, batch_size=32, task_records=300, worker_memory="1g", ps_memory="1g",
                checkpoint_dir=f"{run}/ckpt", export_dir=f"{run}/model")
    out = io.StringIO()
    model = Trainer(**spec).fit(spark.table(features), out=out, split="train=0.9,eval=0.1", split_key="id", shards=2)
    return model, spec, out.getvalue()


@pytest.mark.slow
def test_fit_then_transform_hive_to_hive(spark, hadoop_cluster, features, fitted, tmp_path):
    from tfhadoop.connectors import hdfs

    model, _, out = fitted
    assert model.app_id.startswith("application_"), out
    assert model.reused_export is False and "exported 1200 records" in out, out
    assert "training SUCCEEDED" in out, out
    assert model.metrics["eval"]["loss"] < 0.5, model.metrics
    assert hdfs.exists(model.event_log) and hdfs.exists(f"{model.path}/saved_model.pb")
    scored_table = f"scores_{uuid.uuid4().hex[:6]}"
    source = spark.table(features).repartition(6)  # more batches than Python workers: the loads are per process
    scores = model.transform(source)
    assert scores.columns == ["id", "x", "y", "prediction"]
    scores.write.saveAsTable(scored_table)
    assert 1 <= model.model_loads <= 2, model.model_loads  # local[2]: at most one load per Python worker
    back = spark.table(scored_table).orderBy("id").collect()
    assert [r.id for r in back] == list(range(ROWS))  # every input row, exactly one score
    x = np.array([r.x for r in back], dtype=np.float32)
    want = _local_model(model.path, tmp_path / "m").predict(x, verbose=0)[:, 0]
    got = np.array([r.prediction for r in back], dtype=np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    y = np.array([r.y for r in back])
    assert np.mean((got - y) ** 2) < 0.1 * np.var(y)  # and the model learnt the problem


@pytest.mark.slow
def test_fit_of_an_unchanged_table_reuses_its_export(spark, hadoop_cluster, features, fitted):
    """The same table and options: the export is reused (seen in fit's output, before the job
    check refuses the existing export dir); a changed table is exported again."""
    from tfhadoop.connectors import hdfs
    from tfhadoop.spark.reuse import export_or_reuse
    from tfhadoop.trainer import Trainer

    model, spec, _ = fitted
    before = hdfs.read_bytes(f"{model.dataset}/_tfhadoop.json")
    out = io.StringIO()
    with pytest.raises(ValidationError, match="exists already"):  # nothing trains twice: the export dir is taken
        Trainer(**spec).fit(features, out=out, split="train=0.9,eval=0.1", split_key="id", shards=2)
    assert f"reusing the export in {model.dataset}" in out.getvalue(), out.getvalue()
    assert hdfs.read_bytes(f"{model.dataset}/_tfhadoop.json") == before  # not rewritten
    # Other options: another export. A changed table: the same options export again.
    url, _, reused = export_or_reuse(spark, features, "y", {"shards": 1}, None, hadoop_cluster.default_fs,
                                     "tester", notice=lambda _: None)
    assert not reused and url != model.dataset
    spark.sql(f"INSERT INTO {features} SELECT {ROWS}, array(1.0f, 2.0f, 3.0f, 4.0f), 1.0f")
    spark.catalog.refreshTable(features)
    notes = []
    url2, manifest, reused = export_or_reuse(spark, features, "y", {"shards": 1}, url, hadoop_cluster.default_fs,
                                             "tester", notice=notes.append)
    assert not reused and url2 == url and manifest["records"] == ROWS + 1, notes
    assert any("exporting again" in n for n in notes), notes


def test_dataframe_fingerprint_is_stable_and_refuses_unpinned_sources(spark, features):
    from pyspark.sql import functions as F

    from tfhadoop.spark.reuse import fingerprint

    def fp(df):
        return fingerprint(df, {"shards": 1})

    a = fp(spark.table(features).filter("id > 5").select("id", "x"))
    assert a is not None and a == fp(spark.table(features).filter("id > 5").select("id", "x"))
    assert a != fp(spark.table(features).filter("id > 6").select("id", "x"))
    assert fp(spark.createDataFrame([(1,)], "a int")) is None  # in-memory rows: no reuse
    assert fp(spark.table(features).withColumn("r", F.rand())) is None  # nondeterministic
    assert fp(spark.table(features).withColumn("u", F.udf(lambda v: v, "bigint")("id"))) is None  # a Python UDF


@pytest.mark.slow
def test_missing_or_mistyped_column_is_an_error_before_any_task(spark, features, fitted):
    model, _, _ = fitted
    tracker = spark.sparkContext.statusTracker()
    jobs = set(tracker.getJobIdsForGroup(None))
    with pytest.raises(CommandError, match=r"the model needs column 'x' \(float32 \[4\]\), which the DataFrame "
                                           r"does not have \(columns: id bigint, y float\)"):
        model.transform(spark.table(features).select("id", "y"))
    with pytest.raises(CommandError, match=r"column 'x' is string but the model input 'x' is float32 \[4\]"):
        model.transform(spark.table(features).selectExpr("id", "cast(x as string) as x"))
    with pytest.raises(CommandError, match="output column 'prediction' exists"):
        model.transform(spark.table(features).selectExpr("x", "y as prediction"))
    assert set(tracker.getJobIdsForGroup(None)) == jobs  # no Spark job ran


@pytest.mark.parametrize(("arrow_udf", "parquet"), [(True, False), (True, True), (False, False)],
                         ids=["arrow_udf", "arrow_udf-parquet", "mapInArrow"])
def test_vector_input_and_vector_output_columns(spark, hadoop_cluster, tmp_path, monkeypatch, arrow_udf, parquet):
    """A two-output model fed from an ML vector column: the [None, 3] output is an array column,
    the [None, 1] one a number; both equal the model's own predict. Through the Arrow UDF (the
    vector column comes out unchanged, the UDF runs once per row) and through the ``mapInArrow``
    fallback of a PySpark without Arrow UDFs. Read back from Parquet (a columnar scan), the
    vector column failed Spark 4.1's columnar Arrow evaluator (UNSUPPORTED_DATATYPE UDT) until
    ``scorer.row_based``; a filter on the scores' input columns still reaches the scan."""
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tf_keras
    from pyspark.ml.feature import VectorAssembler

    from tfhadoop.connectors import hdfs
    from tfhadoop.trainer import Model

    v = tf_keras.Input((3,), name="v")
    a = tf_keras.Input((), name="a")
    h = tf_keras.layers.Dense(3, name="emb")(v)
    s = tf_keras.layers.Dense(1, name="score")(tf_keras.layers.Concatenate()([h, tf_keras.layers.Reshape((1,))(a)]))
    keras_model = tf_keras.Model({"v": v, "a": a}, {"emb": h, "score": s})
    keras_model.save(str(tmp_path / "saved"), save_format="tf")
    url = hadoop_cluster.hdfs_url(f"/tmp/pipeline-tests/vec-{uuid.uuid4().hex[:8]}")
    hdfs.upload_dir(str(tmp_path / "saved"), url)
    rows = [(i, float(i % 5), float(i % 3), float(i % 7), i * 0.1) for i in range(300)]
    df = spark.createDataFrame(rows, "id int, f1 double, f2 double, f3 double, a double")
    df = VectorAssembler(inputCols=["f1", "f2", "f3"], outputCol="v").transform(df).select("id", "v", "a")
    if parquet:
        df.write.parquet("file://" + str(tmp_path / "vectors"))
        df = spark.read.parquet("file://" + str(tmp_path / "vectors"))
    from tfhadoop.spark import scorer

    monkeypatch.setattr(scorer, "has_arrow_udf", lambda: arrow_udf)
    scores = Model(url).transform(df)
    assert dict(scores.dtypes)["emb"] == "array<float>" and dict(scores.dtypes)["score"] == "float"
    assert dict(scores.dtypes)["v"] == ("vector" if arrow_udf else "array<double>")
    if arrow_udf:  # one evaluation of the model per row, though two columns come out of its struct
        plan = scores._jdf.queryExecution().executedPlan().toString()
        assert plan.count("ArrowEvalPython") == 1 and plan.count("score(") == 1, plan
    if parquet:
        pushed = scores.where("id = 7")._jdf.queryExecution().executedPlan().toString()
        assert "EqualTo(id,7)" in pushed, pushed
        assert [r.id for r in scores.where("id = 7").collect()] == [7]
        assert [r.id for r in scores.collect()] == [r.id for r in df.collect()]  # rows in their order
    got = scores.orderBy("id").collect()
    vin = np.array([[r[1], r[2], r[3]] for r in rows], dtype=np.float32)
    ain = np.array([r[4] for r in rows], dtype=np.float32)
    want = keras_model.predict({"v": vin, "a": ain}, verbose=0)  # pyright: ignore[reportArgumentType] - tf_keras is unannotated: the checker takes verbose's type from its default "auto"; 0 is its documented silent mode
    np.testing.assert_allclose(np.array([r.emb for r in got]), want["emb"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.array([r.score for r in got]), want["score"][:, 0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("arrow_udf", [True, False], ids=["arrow_udf", "mapInArrow"])
def test_a_ragged_input_scores_array_rows_of_any_length(spark, hadoop_cluster, tmp_path, monkeypatch, arrow_udf):
    """Issue 30 §5: a model with ``Input(ragged=True)`` (the embedding bag the trainer's ragged test
    trains) scores an array column whose rows hold 0..12 ids, each row's list as it is; the scores
    equal the model's own predict on the same lists."""
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tensorflow as tf

    from tfhadoop.connectors import hdfs
    from tfhadoop.spark import scorer
    from tfhadoop.trainer import Model

    keras_model = models.history_bag()
    emb = next(layer for layer in keras_model.layers if layer.__class__.__name__ == "Embedding")
    emb.set_weights([np.linspace(-1, 1, models.ITEMS, dtype=np.float32)[:, None]])
    keras_model.save(str(tmp_path / "saved"), save_format="tf")
    url = hadoop_cluster.hdfs_url(f"/tmp/pipeline-tests/ragged-{uuid.uuid4().hex[:8]}")
    hdfs.upload_dir(str(tmp_path / "saved"), url)
    x, _ = models.make_examples(300, seed=5)
    hists = models.make_histories(300, seed=5)
    assert any(not h for h in hists) and len({len(h) for h in hists}) > 5  # empty and varied rows
    rows = [(i, [float(v) for v in x[i]], hists[i]) for i in range(300)]
    df = spark.createDataFrame(rows, "id int, x array<float>, hist array<bigint>")
    monkeypatch.setattr(scorer, "has_arrow_udf", lambda: arrow_udf)
    got = Model(url).transform(df).orderBy("id").collect()
    want = keras_model.predict({"x": x, "hist": tf.ragged.constant(hists, dtype=tf.int64)}, verbose=0)  # pyright: ignore[reportArgumentType] - tf_keras's verbose (see above)
    np.testing.assert_allclose(np.array([r.prediction for r in got]), want[:, 0], rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_predict_cli_table_to_table(spark, features, fitted, capsys):
    """`tfhadoop predict` in this process (the embedded Derby metastore admits one JVM): a new
    table, then refused when it exists, replaced with --mode overwrite; a missing column."""
    from tfhadoop.cli import main

    model, _, _ = fitted
    out_table = f"cli_scores_{uuid.uuid4().hex[:6]}"
    args = ["predict", "--model", model.path, "--table", features, "--output-table", out_table]
    assert main(args) == 0, capsys.readouterr()
    assert "wrote table " + out_table in capsys.readouterr().out
    n = spark.table(features).count()
    assert spark.table(out_table).count() == n
    assert spark.table(out_table).filter("prediction is null").count() == 0
    assert main(args) == 1
    err = capsys.readouterr().err
    assert f"--output-table {out_table} exists already; pass --mode overwrite" in err and "Traceback" not in err
    assert main(args + ["--mode", "overwrite"]) == 0
    assert spark.table(out_table).count() == n
    bad = f"cli_bad_{uuid.uuid4().hex[:6]}"
    spark.table(features).select("id", "y").write.saveAsTable(bad)
    assert main(["predict", "--model", model.path, "--table", bad, "--output-table", bad + "_out"]) == 1
    err = capsys.readouterr().err
    assert f"the model needs column 'x' (float32 [4]), which --table {bad} does not have" in err, err
    assert not spark.catalog.tableExists(bad + "_out")


@pytest.mark.slow
def test_predict_under_spark_submit_files_to_files(spark, hadoop_cluster, features, fitted, tmp_path):
    """predict.py as a spark-submit job file: parquet files in, parquet files out."""
    import pyspark

    from tfhadoop.spark.session import tfhadoop_jar

    model, _, _ = fitted
    src = hadoop_cluster.hdfs_url(f"/tmp/pipeline-tests/in-{uuid.uuid4().hex[:6]}")
    dst = hadoop_cluster.hdfs_url(f"/tmp/pipeline-tests/out-{uuid.uuid4().hex[:6]}")
    spark.table(features).filter(f"id < {ROWS}").write.parquet(src)
    job = Path(__file__).resolve().parents[2] / "spark" / "python" / "tfhadoop" / "spark" / "predict.py"
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable,
               PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
    cmd = [str(submit), "--master", "local[2]", "--jars", tfhadoop_jar(), str(job), "--model", model.path,
           "--input", src, "--output", dst]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    scored = spark.read.parquet(dst).orderBy("id").collect()
    assert [r.id for r in scored] == list(range(ROWS))
    direct = {r.id: r.prediction for r in model.transform(spark.read.parquet(src)).collect()}
    assert all(abs(r.prediction - direct[r.id]) < 1e-5 for r in scored)
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    said = again.stdout + again.stderr  # spark-submit merges the Python driver's stderr into its stdout
    assert again.returncode == 1 and "exists already; pass --mode overwrite" in said, said[-2000:]
