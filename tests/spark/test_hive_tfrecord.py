"""Hive tables STORED AS TFRecord (tfhadoop SerDe + mapred formats) through Spark's Hive support on
the embedded cluster: create, INSERT ... SELECT from Parquet, SELECT back, TensorFlow reads the files."""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

tf = pytest.importorskip("tensorflow")

STORED_AS = ("ROW FORMAT SERDE 'tfhadoop.hive.TFRecordSerDe' "
             "STORED AS INPUTFORMAT 'tfhadoop.mapred.TFRecordInputFormat' "
             "OUTPUTFORMAT 'tfhadoop.hive.TFRecordHiveOutputFormat'")


def test_hive_table_stored_as_tfrecord(spark, tmp_path):
    spark.sql("DROP TABLE IF EXISTS tfr_src")
    spark.sql("DROP TABLE IF EXISTS tfr_hive")
    spark.sql("DROP TABLE IF EXISTS tfr_hive_local")
    rows: list[tuple] = [(i, f"name{i}", i * 0.5, float(i) * 2, i % 2 == 0, [i, i + 1], [f"t{i}"]) for i in range(25)]
    rows.append((100, None, None, None, None, None, None))
    spark.createDataFrame(rows, "id bigint, name string, score float, d double, ok boolean, "
                                "ids array<bigint>, tags array<string>").write.mode("overwrite").format(
        "parquet").saveAsTable("tfr_src")
    cols = "id BIGINT, name STRING, score FLOAT, d DOUBLE, ok BOOLEAN, ids ARRAY<BIGINT>, tags ARRAY<STRING>"
    spark.sql(f"CREATE TABLE tfr_hive ({cols}) {STORED_AS}")
    spark.sql("INSERT INTO tfr_hive SELECT * FROM tfr_src")
    got = {r["id"]: r for r in spark.sql("SELECT * FROM tfr_hive").collect()}
    assert len(got) == 26
    for r in rows:
        g = got[r[0]]
        assert (g["name"], g["score"], g["d"], g["ok"], g["ids"], g["tags"]) == r[1:]
    assert spark.sql("SELECT sum(id) FROM tfr_hive WHERE ok").collect()[0][0] == sum(i for i in range(25) if i % 2 == 0)

    # the same through a table whose files TensorFlow can open (local location)
    loc = tmp_path / "hive_tfr"
    spark.sql(f"CREATE TABLE tfr_hive_local ({cols}) {STORED_AS} LOCATION 'file://{loc}'")
    spark.sql("INSERT OVERWRITE TABLE tfr_hive_local SELECT * FROM tfr_src")
    files = [str(p) for p in loc.rglob("*") if p.is_file() and not p.name.startswith((".", "_"))]
    assert files
    seen = {}
    for rec in tf.data.TFRecordDataset(files):
        ex = tf.train.Example.FromString(rec.numpy()).features.feature
        seen[ex["id"].int64_list.value[0]] = ex
    assert len(seen) == 26
    ex = seen[3]
    assert ex["name"].bytes_list.value == [b"name3"]
    assert ex["score"].float_list.value == [np.float32(1.5)]
    assert list(ex["ids"].int64_list.value) == [3, 4]
    assert ex["ok"].int64_list.value == [0]
    assert set(seen[100].keys()) == {"id"}
    # and the Spark data source reads the Hive table's files too
    assert spark.read.format("tfrecord").load(f"file://{loc}").count() == 26


def test_hive_table_gzip_output(spark, tmp_path):
    spark.sql("DROP TABLE IF EXISTS tfr_hive_gz")
    loc = tmp_path / "hive_gz"
    spark.sql(f"CREATE TABLE tfr_hive_gz (id BIGINT, name STRING) {STORED_AS} LOCATION 'file://{loc}' "
              "TBLPROPERTIES ('tfrecord.compression'='gzip')")
    with pytest.raises(Exception, match="hive.output.file.extension"):
        spark.sql("INSERT INTO tfr_hive_gz SELECT id, concat('n', id) FROM range(10)")
    spark.sql("SET hive.output.file.extension=.tfrecord.gz")
    try:
        spark.sql("INSERT INTO tfr_hive_gz SELECT id, concat('n', id) FROM range(10)")
    finally:
        spark.sql("RESET hive.output.file.extension")
    files = [str(p) for p in loc.rglob("*.tfrecord.gz")]
    assert files
    ids = sorted(tf.train.Example.FromString(r.numpy()).features.feature["id"].int64_list.value[0]
                 for r in tf.data.TFRecordDataset(files, compression_type="GZIP"))
    assert ids == list(range(10))
    assert sorted(r["id"] for r in spark.sql("SELECT id FROM tfr_hive_gz").collect()) == list(range(10))


def _write_examples(path, examples):
    with tf.io.TFRecordWriter(str(path)) as w:
        for feats in examples:
            w.write(tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString())


def test_hive_serde_reads_no_silent_wrong_values(spark, tmp_path):
    """Missing is NULL (never 0); a kind mismatch or a value that does not fit is a named error."""
    i64 = lambda *v: tf.train.Feature(int64_list=tf.train.Int64List(value=v))  # noqa: E731
    f32 = lambda *v: tf.train.Feature(float_list=tf.train.FloatList(value=v))  # noqa: E731
    loc = tmp_path / "hive_rules"
    loc.mkdir()
    _write_examples(loc / "part-0.tfrecord", [
        {"id": i64(1), "n": i64(300), "x": f32(2.5), "d": f32(0.25), "dec": f32(0.5), "ok": i64(2)},
        {"id": i64(2)}])
    spark.sql("DROP TABLE IF EXISTS tfr_rules")
    spark.sql(f"CREATE EXTERNAL TABLE tfr_rules (id BIGINT, n BIGINT, x DOUBLE, d DOUBLE, dec DECIMAL(5,2), "
              f"ok BIGINT) {STORED_AS} LOCATION 'file://{loc}'")
    got = {r["id"]: r for r in spark.sql("SELECT * FROM tfr_rules").collect()}
    assert (got[1]["n"], got[1]["x"], got[1]["d"], str(got[1]["dec"])) == (300, 2.5, 0.25, "0.50")
    assert (got[2]["n"], got[2]["x"], got[2]["d"], got[2]["dec"], got[2]["ok"]) == (None,) * 5
    cases = [("n TINYINT", "feature 'n' holds int64 300, which does not fit column n of type tinyint"),
             ("ok BOOLEAN", "feature 'ok' holds int64 2, which does not fit column ok of type boolean"),
             ("x BIGINT", "feature 'x' is a float_list but column x is bigint"),
             ("n DOUBLE", "feature 'n' is a int64_list but column n is double"),
             ("n STRING", "feature 'n' is a int64_list but column n is string"),
             ("x STRING", "feature 'x' is a float_list but column x is string"),
             ("d DECIMAL(5,1)", "feature 'd' holds 0.25, which column d of type decimal(5,1) cannot hold without rounding")]
    for k, (col, msg) in enumerate(cases):
        spark.sql(f"DROP TABLE IF EXISTS tfr_bad{k}")
        spark.sql(f"CREATE EXTERNAL TABLE tfr_bad{k} (id BIGINT, {col}) {STORED_AS} LOCATION 'file://{loc}'")
        with pytest.raises(Exception) as exc:
            spark.sql(f"SELECT * FROM tfr_bad{k}").collect()
        assert msg in str(exc.value), (col, str(exc.value)[:2000])
