"""The tfrecord Spark data source on the embedded cluster's session: round trips with TensorFlow
(both directions, every type and codec), save modes, partitions, splits, corruption, commit
protocol."""
from __future__ import annotations

import datetime
import decimal
import glob
import os

import numpy as np
import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

tf = pytest.importorskip("tensorflow")

from pyspark.sql import Row  # noqa: E402
from pyspark.sql import types as T  # noqa: E402

from tfhadoop.spark.tfrecord import read_tfrecord, write_tfrecord  # noqa: E402


def local(path) -> str:
    return "file://" + str(path)


def part_files(path):
    return sorted(p for p in glob.glob(os.path.join(str(path), "**", "part-*"), recursive=True))


def tf_examples(files, compression=""):
    ds = tf.data.TFRecordDataset(files, compression_type=compression)
    return [tf.train.Example.FromString(r.numpy()) for r in ds]


def feature_values(f):
    kind = f.WhichOneof("kind")
    return None if kind is None else (kind, list(getattr(f, kind).value))


SCHEMA = T.StructType([
    T.StructField("id", T.LongType()),
    T.StructField("i", T.IntegerType()),
    T.StructField("sh", T.ShortType()),
    T.StructField("by", T.ByteType()),
    T.StructField("flag", T.BooleanType()),
    T.StructField("f", T.FloatType()),
    T.StructField("d", T.DoubleType()),
    T.StructField("dec", T.DecimalType(10, 3)),
    T.StructField("s", T.StringType()),
    T.StructField("bin", T.BinaryType()),
    T.StructField("day", T.DateType()),
    T.StructField("longs", T.ArrayType(T.LongType())),
    T.StructField("floats", T.ArrayType(T.FloatType())),
    T.StructField("strs", T.ArrayType(T.StringType())),
])


def typed_rows(n=20):
    rows = []
    for k in range(n):
        rows.append((k, -k, k % 7, k % 3, k % 2 == 0, k * 0.25, k * 1.5, decimal.Decimal(k) / 8,
                     f"é{k}", bytes([k, 0, 255]), datetime.date(2020, 1, 1) + datetime.timedelta(days=k),
                     list(range(k % 4)), [k * 0.5, -1.0], [f"a{k}", ""] if k % 5 else None))
    rows.append((99, None, None, None, None, None, None, None, None, None, None, None, None, None))
    return rows


@pytest.mark.parametrize("compression,tf_compression,ext", [
    ("none", "", ".tfrecord"), ("gzip", "GZIP", ".tfrecord.gz"), ("zlib", "ZLIB", ".tfrecord.deflate")])
def test_tensorflow_reads_every_type_we_write(spark, tmp_path, compression, tf_compression, ext):
    rows = typed_rows()
    df = spark.createDataFrame(rows, SCHEMA).repartition(3)
    out = tmp_path / "typed"
    write_tfrecord(df, local(out), compression=compression)
    files = part_files(out)
    assert files and all(f.endswith(ext) for f in files), files
    got = {ex.features.feature["id"].int64_list.value[0]: ex for ex in tf_examples(files, tf_compression)}
    assert len(got) == len(rows)
    for r in rows:
        ex = got[r[0]].features.feature
        if r[1] is None:
            assert set(ex.keys()) == {"id"}, "nulls must omit the feature"
            continue
        assert feature_values(ex["i"]) == ("int64_list", [r[1]])
        assert feature_values(ex["sh"]) == ("int64_list", [r[2]])
        assert feature_values(ex["by"]) == ("int64_list", [r[3]])
        assert feature_values(ex["flag"]) == ("int64_list", [1 if r[4] else 0])
        assert feature_values(ex["f"]) == ("float_list", [np.float32(r[5])])
        assert feature_values(ex["d"]) == ("float_list", [np.float32(r[6])])
        assert ex["dec"].float_list.value[0] == pytest.approx(float(r[7]), rel=1e-6)
        assert feature_values(ex["s"]) == ("bytes_list", [r[8].encode()])
        assert feature_values(ex["bin"]) == ("bytes_list", [r[9]])
        assert feature_values(ex["day"]) == ("int64_list", [(r[10] - datetime.date(1970, 1, 1)).days])
        assert feature_values(ex["longs"]) == ("int64_list", r[11])
        assert feature_values(ex["floats"]) == ("float_list", [np.float32(x) for x in r[12]])
        if r[13] is None:
            assert "strs" not in ex
        else:
            assert feature_values(ex["strs"]) == ("bytes_list", [x.encode() for x in r[13]])
    # and tf.io.parse_example agrees for a fixed-length spec
    spec = {"id": tf.io.FixedLenFeature([], tf.int64), "s": tf.io.FixedLenFeature([], tf.string, default_value=b"")}
    ds = tf.data.TFRecordDataset(files, compression_type=tf_compression).batch(64).map(
        lambda x: tf.io.parse_example(x, spec))
    parsed = {int(i): s.decode() for b in ds for i, s in zip(b["id"].numpy(), b["s"].numpy())}
    assert parsed == {r[0]: (r[8] or "") for r in rows}
    # we read back what we wrote, value for value (user schema keeps the Spark types)
    back = {r["id"]: r for r in read_tfrecord(spark, local(out), schema=SCHEMA).collect()}
    for r in rows:
        b = back[r[0]]
        assert (b["i"], b["sh"], b["by"], b["flag"], b["s"], b["day"]) == (r[1], r[2], r[3], r[4], r[8], r[10])
        assert b["bin"] == (bytearray(r[9]) if r[9] is not None else None)
        assert b["longs"] == (r[11] if r[1] is not None else None)
        assert b["dec"] == r[7] and b["d"] == r[6]  # k/8 and k*1.5 are exact in float32


def write_tf_examples(path, examples, compression=""):
    opts = tf.io.TFRecordOptions(compression_type=compression)
    with tf.io.TFRecordWriter(str(path), opts) as w:
        for ex in examples:
            w.write(ex if isinstance(ex, bytes) else ex.SerializeToString())


def example(**features):
    feats = {}
    for name, v in features.items():
        if v is None:
            feats[name] = tf.train.Feature()
        elif isinstance(v, tuple) and v[0] == "f":
            feats[name] = tf.train.Feature(float_list=tf.train.FloatList(value=v[1]))
        elif isinstance(v, tuple) and v[0] == "b":
            feats[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=v[1]))
        else:
            feats[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=v))
    return tf.train.Example(features=tf.train.Features(feature=feats))


@pytest.mark.parametrize("compression,name", [("", "a.tfrecord"), ("GZIP", "a.tfrecord.gz"), ("ZLIB", "a.tfrecord.zlib")])
def test_we_read_what_tensorflow_writes(spark, tmp_path, compression, name):
    d = tmp_path / "tfw"
    d.mkdir()
    big = os.urandom(5 * 1024 * 1024)
    exs = [
        example(id=[1], x=("f", [0.5]), tags=("b", [b"a", b"b"]), blob=("b", [big])),
        example(id=[2], x=("f", [1.5]), tags=("b", []), blob=("b", [b""])),
        example(id=[3], tags=("b", [b"c"]), nothing=None),  # x missing, feature with no kind
        example(id=[4], x=("f", [2.5]), tags=("b", [b"d", b"e", b"f"]), blob=("b", [b"z"])),
    ]
    write_tf_examples(d / name, exs, compression)
    df = read_tfrecord(spark, local(d))
    types = {f.name: f.dataType for f in df.schema.fields}
    assert types["id"] == T.LongType() and types["x"] == T.FloatType()
    assert types["tags"] == T.ArrayType(T.StringType()) and types["blob"] == T.StringType()
    assert types["nothing"] == T.StringType()
    rows = {r["id"]: r for r in df.collect()}
    assert rows[1]["tags"] == ["a", "b"] and rows[2]["tags"] == [] and rows[4]["tags"] == ["d", "e", "f"]
    assert rows[3]["x"] is None and rows[3]["nothing"] is None and rows[3]["blob"] is None
    assert rows[1]["x"] == 0.5
    blob = read_tfrecord(spark, local(d), schema="id long, blob binary").where("id = 1").collect()[0]["blob"]
    assert bytes(blob) == big
    # pruned read of one column
    assert sorted(r["id"] for r in df.select("id").collect()) == [1, 2, 3, 4]
    # raw bytes mode, including empty records
    raw_path = d / ("raw-" + name)
    write_tf_examples(raw_path, [b"", b"hello", big], compression)
    raw = read_tfrecord(spark, local(raw_path), record_type="ByteArray").collect()
    assert sorted(bytes(r["byteArray"]) for r in raw) == sorted([b"", b"hello", big])


def test_sequence_example_both_ways(spark, tmp_path):
    schema = T.StructType([
        T.StructField("id", T.LongType()),
        T.StructField("tokens", T.ArrayType(T.ArrayType(T.StringType()))),
        T.StructField("weights", T.ArrayType(T.ArrayType(T.FloatType()))),
    ])
    rows = [(1, [["a", "b"], [], ["c"]], [[0.5], [1.0, 2.0]]), (2, [], None)]
    out = tmp_path / "seq"
    write_tfrecord(spark.createDataFrame(rows, schema), local(out), record_type="SequenceExample")
    got = {}
    for r in tf.data.TFRecordDataset(part_files(out)):
        se = tf.train.SequenceExample.FromString(r.numpy())
        fl = se.feature_lists.feature_list
        got[se.context.feature["id"].int64_list.value[0]] = (
            [list(f.bytes_list.value) for f in fl["tokens"].feature],
            [list(f.float_list.value) for f in fl["weights"].feature] if "weights" in fl else None)
    assert got[1] == ([[b"a", b"b"], [], [b"c"]], [[0.5], [1.0, 2.0]])
    assert got[2] == ([], None)
    back = {r["id"]: r for r in read_tfrecord(spark, local(out), record_type="SequenceExample").collect()}
    assert back[1]["tokens"] == [["a", "b"], [], ["c"]]
    assert back[1]["weights"] == [[0.5], [1.0, 2.0]]
    # TF-written SequenceExample read back
    se = tf.train.SequenceExample()
    se.context.feature["id"].int64_list.value.append(7)
    for vals in ([1, 2], [3]):
        se.feature_lists.feature_list["ids"].feature.add().int64_list.value.extend(vals)
    d = tmp_path / "tfseq"
    d.mkdir()
    write_tf_examples(d / "s.tfrecord", [se.SerializeToString()])
    r = read_tfrecord(spark, local(d), record_type="SequenceExample").collect()[0]
    assert r["id"] == 7 and r["ids"] == [[1, 2], [3]]
    with pytest.raises(Exception, match="SequenceExample"):
        write_tfrecord(spark.createDataFrame(rows, schema), local(tmp_path / "bad"))


def test_save_modes_and_partitions(spark, hadoop_cluster):
    base = hadoop_cluster.hdfs_url("/tmp/tfrecord-modes")
    df = spark.createDataFrame([Row(id=i, grp=i % 3, v=float(i)) for i in range(30)])
    write_tfrecord(df, base, mode="overwrite")
    with pytest.raises(Exception, match="already exists"):
        write_tfrecord(df, base)  # default mode errorifexists
    write_tfrecord(df.limit(1), base, mode="ignore")
    assert read_tfrecord(spark, base).count() == 30
    write_tfrecord(df, base, mode="append")
    assert read_tfrecord(spark, base).count() == 60
    write_tfrecord(df.limit(5), base, mode="overwrite")
    assert read_tfrecord(spark, base).count() == 5

    pbase = hadoop_cluster.hdfs_url("/tmp/tfrecord-parts")
    write_tfrecord(df, pbase, mode="overwrite", partition_by="grp")
    back = read_tfrecord(spark, pbase)
    assert {f.name: f.dataType for f in back.schema.fields}["grp"] == T.IntegerType()
    assert sorted((r["id"], r["grp"]) for r in back.collect()) == [(i, i % 3) for i in range(30)]
    # dynamic overwrite replaces only the partitions written (grp=0), keeps 1 and 2
    new0 = spark.createDataFrame([Row(id=100, grp=0, v=1.0)])
    write_tfrecord(new0, pbase, mode="overwrite", partition_by="grp", partitionOverwriteMode="dynamic")
    ids = sorted(r["id"] for r in read_tfrecord(spark, pbase).collect())
    assert ids == sorted([100] + [i for i in range(30) if i % 3 != 0])
    # static overwrite replaces everything
    write_tfrecord(new0, pbase, mode="overwrite", partition_by="grp")
    assert [r["id"] for r in read_tfrecord(spark, pbase).collect()] == [100]
    # the alias reads the same data
    assert spark.read.format("tfrecords").load(pbase).count() == 1


def test_recursive_dirs_and_nested_partitions(spark, tmp_path):
    df = spark.createDataFrame([Row(id=i, a=i % 2, b=f"x{i % 2}", w=i) for i in range(8)])
    out = tmp_path / "nested"
    write_tfrecord(df, local(out), partition_by=["a", "b"])
    assert (out / "a=0" / "b=x0").is_dir()
    # rows were sorted by partition within each task: one file per (task, partition), never a reopen
    names = [os.path.basename(f) for f in part_files(out)]
    assert not any(n.startswith("part-c") for n in names), names
    assert len(names) <= 2 * df.rdd.getNumPartitions()
    back = read_tfrecord(spark, local(out))
    assert sorted((r["id"], r["a"], r["b"]) for r in back.collect()) == [(i, i % 2, f"x{i % 2}") for i in range(8)]
    # plain nested directories (no key=value) are read recursively
    plain = tmp_path / "plain" / "deep" / "er"
    plain.mkdir(parents=True)
    write_tf_examples(plain / "f.tfrecord", [example(id=[1]), example(id=[2])])
    assert read_tfrecord(spark, local(tmp_path / "plain")).count() == 2
    # several paths, and globs
    assert read_tfrecord(spark, [local(out / "a=0"), local(tmp_path / "plain")]).count() == 4 + 2
    assert read_tfrecord(spark, local(tmp_path) + "/pl*").count() == 2


def test_split_reads_every_record_once(spark, tmp_path):
    n = 20000
    df = spark.range(n).selectExpr("id", "repeat('x', cast(id % 50 as int)) as pad")
    out = tmp_path / "split"
    write_tfrecord(df.coalesce(1), local(out))
    (f,) = part_files(out)
    size = os.path.getsize(f)
    back = read_tfrecord(spark, local(out), maxPartitionBytes=str(size // 37 + 1))
    assert back.rdd.getNumPartitions() >= 37
    ids = [r["id"] for r in back.select("id").collect()]
    assert len(ids) == n and sorted(ids) == list(range(n))


def test_corrupt_input_error_and_skip(spark, tmp_path):
    d = tmp_path / "bad"
    d.mkdir()
    exs = [example(id=[i], pad=("b", [b"p" * 40])) for i in range(50)]
    write_tf_examples(d / "x.tfrecord", exs)
    data = bytearray((d / "x.tfrecord").read_bytes())
    rec = len(exs[0].SerializeToString()) + 16
    data[rec * 10 + 20] ^= 0x01  # a bit flip in record 10's data
    (d / "x.tfrecord").write_bytes(bytes(data))
    with pytest.raises(Exception, match=f"corrupted record at {rec * 10}"):
        read_tfrecord(spark, local(d), schema="id long").collect()
    ids = sorted(r["id"] for r in read_tfrecord(spark, local(d), schema="id long", skip_corrupt=True,
                                                   maxPartitionBytes="300").collect())
    assert ids == [i for i in range(50) if i != 10]


def test_failed_task_leaves_no_files_and_empty_write(spark, tmp_path):
    from pyspark.sql.functions import udf

    @udf("long")
    def explode_at_7(x):
        if x == 7:
            raise ValueError("boom")
        return x

    out = tmp_path / "failed"
    df = spark.range(0, 20, 1, 4).select(explode_at_7("id").alias("id"))
    with pytest.raises(Exception):  # noqa: B017 - any task failure; the point is what is left on disk
        write_tfrecord(df, local(out))
    assert part_files(out) == []
    assert not (out / "_temporary").exists() or not any((out / "_temporary").iterdir())

    empty = tmp_path / "empty"
    write_tfrecord(spark.range(10).where("id < 0"), local(empty))
    assert part_files(empty) == [] and (empty / "_SUCCESS").exists()
    with pytest.raises(Exception, match="Unable to infer schema"):
        read_tfrecord(spark, local(empty)).collect()


def test_codecs(spark, tmp_path):
    df = spark.range(5)
    with pytest.raises(Exception, match="cannot read"):
        write_tfrecord(df, local(tmp_path / "snappy"), codec="org.apache.hadoop.io.compress.SnappyCodec")
    write_tfrecord(df, local(tmp_path / "gz"), codec="org.apache.hadoop.io.compress.GzipCodec")
    files = part_files(tmp_path / "gz")
    assert files and all(f.endswith(".tfrecord.gz") for f in files)
    assert sorted(r["id"] for r in read_tfrecord(spark, local(tmp_path / "gz")).collect()) == list(range(5))
    # a cluster-wide Hadoop output codec does not leak into TFRecord output
    spark.conf.set("spark.hadoop.mapreduce.output.fileoutputformat.compress", "true")
    try:
        write_tfrecord(df, local(tmp_path / "plain"))
    finally:
        spark.conf.unset("spark.hadoop.mapreduce.output.fileoutputformat.compress")
    assert all(f.endswith(".tfrecord") for f in part_files(tmp_path / "plain"))
    ex = tf_examples(part_files(tmp_path / "plain"))
    assert sorted(e.features.feature["id"].int64_list.value[0] for e in ex) == list(range(5))


def test_schema_inference_reads_all_files(spark, tmp_path):
    d = tmp_path / "many"
    d.mkdir()
    for k in range(6):  # enough files for the distributed inference job
        exs = [example(id=[k * 10 + j], v=[j]) for j in range(3)]
        if k == 4:
            exs.append(example(id=[99], v=("f", [0.5]), late=("b", [b"only here"])))
        if k == 5:
            exs.append(example(id=[98], multi=[1, 2]))
        write_tf_examples(d / f"f{k}.tfrecord", exs)
    df = read_tfrecord(spark, local(d))
    types = {f.name: f.dataType for f in df.schema.fields}
    assert types == {"id": T.LongType(), "v": T.FloatType(), "late": T.StringType(),
                     "multi": T.ArrayType(T.LongType())}
    rows = {r["id"]: r for r in df.collect()}
    assert rows[99]["late"] == "only here" and rows[99]["v"] == 0.5 and rows[1]["v"] == 1.0
    assert rows[98]["multi"] == [1, 2] and rows[1]["multi"] is None
    assert df.rdd.getNumPartitions() < 6, "small files share tasks"
    # sampling reads a share of the files only: the feature of file 4 alone may be missed
    sampled = read_tfrecord(spark, local(d), sampling_ratio=0.2)
    assert "id" in sampled.columns and len(sampled.columns) < 4


def test_struct_columns_flatten_to_dotted_features(spark, tmp_path):
    schema = T.StructType([
        T.StructField("id", T.LongType()),
        T.StructField("user", T.StructType([
            T.StructField("name", T.StringType()),
            T.StructField("geo", T.StructType([T.StructField("lat", T.FloatType()), T.StructField("tags", T.ArrayType(T.LongType()))])),
        ])),
    ])
    rows = [(1, ("ann", (1.5, [1, 2]))), (2, ("bob", None)), (3, None)]
    out = tmp_path / "structs"
    write_tfrecord(spark.createDataFrame(rows, schema), local(out))
    feats = {ex.features.feature["id"].int64_list.value[0]: ex.features.feature for ex in tf_examples(part_files(out))}
    assert feats[1]["user.name"].bytes_list.value == [b"ann"]
    assert feats[1]["user.geo.lat"].float_list.value == [1.5]
    assert list(feats[1]["user.geo.tags"].int64_list.value) == [1, 2]
    assert set(feats[2].keys()) == {"id", "user.name"} and set(feats[3].keys()) == {"id"}
    back = {r["id"]: r for r in read_tfrecord(spark, local(out), schema=schema).collect()}
    assert back[1]["user"]["name"] == "ann" and back[1]["user"]["geo"]["tags"] == [1, 2]
    assert back[1]["user"]["geo"]["lat"] == 1.5
    assert back[2]["user"]["name"] == "bob" and back[2]["user"]["geo"] is None
    assert back[3]["user"] is None
    # without a schema the features stay flat, with their dotted names
    assert "user.geo.lat" in read_tfrecord(spark, local(out)).columns


def test_sql_tables_using_tfrecord(spark, tmp_path):
    spark.sql("DROP TABLE IF EXISTS tfr_sql_a")
    spark.sql("DROP TABLE IF EXISTS tfr_sql_b")
    src = tmp_path / "sql_src"
    write_tfrecord(spark.range(5), local(src))
    spark.sql(f"CREATE TABLE tfr_sql_a USING tfrecord OPTIONS (path '{local(src)}')")
    assert spark.sql("SELECT sum(id) FROM tfr_sql_a").collect()[0][0] == 10
    dst = tmp_path / "sql_dst"
    spark.sql(f"CREATE TABLE tfr_sql_b (id BIGINT, s STRING) USING tfrecord LOCATION '{local(dst)}'")
    spark.sql("INSERT INTO tfr_sql_b VALUES (1, 'a'), (2, NULL)")
    spark.sql("INSERT INTO tfr_sql_b SELECT id, 'x' FROM tfr_sql_a")
    assert spark.sql("SELECT count(*) FROM tfr_sql_b").collect()[0][0] == 7
    spark.sql("INSERT OVERWRITE TABLE tfr_sql_b SELECT 9, 'z'")
    assert [tuple(r) for r in spark.sql("SELECT * FROM tfr_sql_b").collect()] == [(9, "z")]
    ex = tf_examples(part_files(dst))
    assert [e.features.feature["s"].bytes_list.value[0] for e in ex] == [b"z"]


EMPTY_WRITE = """
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[1]").config("spark.jars", sys.argv[1]).getOrCreate()
spark.range(10).where("id < 0").write.format("tfrecord").save(sys.argv[2])
spark.stop()
"""


def test_a_write_of_no_rows_says_so(tmp_path):
    """The data source logs that an empty write produced no data (a WARN line on the driver)."""
    import subprocess
    import sys

    from tfhadoop.spark.session import tfhadoop_jar

    jar = tfhadoop_jar()
    assert jar, "no tfhadoop jar under jars/: build it (make jar)"
    out = tmp_path / "empty"
    proc = subprocess.run([sys.executable, "-c", EMPTY_WRITE, jar, f"file://{out}"],
                          capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "HADOOP_CONF_DIR"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "produced no data: 0 rows, no files written" in proc.stderr, proc.stderr[-3000:]
