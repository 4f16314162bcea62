"""Issue 20 through Spark: files whose records are themselves TFRecord streams read exactly at
any split size, without an index (header walk from a proven boundary) and with the index our writer leaves beside
each file; TensorFlow's whole-file read is the reference."""
from __future__ import annotations

import collections
import glob
import os
import random

import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

tf = pytest.importorskip("tensorflow")

from tfhadoop.connectors.tfrecord_writer import encode_record  # noqa: E402
from tfhadoop.spark.tfrecord import read_tfrecord, write_tfrecord  # noqa: E402


def local(path) -> str:
    return "file://" + str(path)


def bundles(rng, n, max_inner):
    """Records each of which is a TFRecord stream of 1..4 records (the issue's "bundles")."""
    return [b"".join(encode_record(rng.randbytes(rng.randint(0, max_inner))) for _ in range(rng.randint(1, 4)))
            for _ in range(n)]


def tf_read(path):
    return [r.numpy() for r in tf.data.TFRecordDataset([str(path)])]


def spark_bytes(spark, path, split, **kw):
    df = read_tfrecord(spark, local(path), record_type="ByteArray", maxPartitionBytes=str(split), **kw)
    return [bytes(r["byteArray"]) for r in df.collect()]


def test_tensorflow_written_bundles_read_exactly_without_index(spark, tmp_path):
    rng = random.Random(20)
    records = bundles(rng, 3000, 300) + bundles(rng, 20, 150_000)
    rng.shuffle(records)
    d = tmp_path / "tfw"
    d.mkdir()
    with tf.io.TFRecordWriter(str(d / "bundles.tfrecord")) as w:
        for r in records:
            w.write(r)
    want = tf_read(d / "bundles.tfrecord")
    assert want == records
    assert not glob.glob(str(d / ".*.tfrindex"))  # no index: the header walk alone must be exact
    for split in (4 << 10, 64 << 10, 1 << 20):
        got = spark_bytes(spark, d, split)
        assert collections.Counter(got) == collections.Counter(want), split
        assert len(got) == len(want)


def test_spark_writes_an_index_and_reads_with_it(spark, tmp_path):
    rng = random.Random(21)
    records = bundles(rng, 2000, 400)
    out = tmp_path / "written"
    df = spark.createDataFrame([(bytearray(r),) for r in records], "byteArray binary").coalesce(1)
    write_tfrecord(df, local(out), record_type="ByteArray", indexInterval="4096")
    (part,) = glob.glob(str(out / "part-*"))
    side = os.path.join(os.path.dirname(part), "." + os.path.basename(part) + ".tfrindex")
    assert os.path.isfile(side)
    assert collections.Counter(tf_read(part)) == collections.Counter(records)
    for split in (1 << 10, 16 << 10, 256 << 10):
        got = spark_bytes(spark, out, split)
        assert len(got) == len(records) and collections.Counter(got) == collections.Counter(records), split
    # Example records whose bytes feature holds a TFRecord stream, no index
    ex = spark.createDataFrame([(i, bytearray(r)) for i, r in enumerate(records)], "id long, blob binary")
    out2 = tmp_path / "examples"
    write_tfrecord(ex.coalesce(1), local(out2), indexInterval="0")
    assert not glob.glob(str(out2 / ".*.tfrindex"))
    for split in (2 << 10, 64 << 10):
        rows = read_tfrecord(spark, local(out2), schema="id long, blob binary", maxPartitionBytes=str(split)).collect()
        assert sorted(r["id"] for r in rows) == list(range(len(records)))
        assert all(bytes(r["blob"]) == records[r["id"]] for r in rows)


def test_splits_inside_a_huge_record_holding_a_stream(spark, tmp_path):
    """A record longer than a split plus any look-ahead, whose payload is a valid stream of plain
    records (what a checked resync cannot tell from real records), written by TensorFlow, no index:
    read in order, every record once, with the walk cache and from the file start in every split."""
    rng = random.Random(22)
    inner = b"".join(encode_record(rng.randbytes(1000)) for _ in range(3000))
    records = bundles(rng, 50, 300) + [inner, b""] + bundles(rng, 50, 300)
    d = tmp_path / "huge"
    d.mkdir()
    with tf.io.TFRecordWriter(str(d / "huge.tfrecord")) as w:
        for r in records:
            w.write(r)
    want = tf_read(d / "huge.tfrecord")
    assert want == records
    for kw in ({}, {"walkCache": "false"}):
        assert spark_bytes(spark, d, 64 << 10, **kw) == want, kw
        df = read_tfrecord(spark, local(d), record_type="ByteArray", maxPartitionBytes=str(16 << 10), **kw)
        assert df.rdd.getNumPartitions() > 100 and df.count() == len(want), kw
