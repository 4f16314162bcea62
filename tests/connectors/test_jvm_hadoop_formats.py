"""tfhadoop's Hadoop InputFormat/OutputFormat (both APIs) driven through PySpark's Hadoop-file RDD
API on the embedded cluster, against files TensorFlow writes and reads."""
from __future__ import annotations

import glob
import os

import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

tf = pytest.importorskip("tensorflow")

LW = "org.apache.hadoop.io.LongWritable"
BW = "org.apache.hadoop.io.BytesWritable"


def tf_write(path, records, compression=""):
    with tf.io.TFRecordWriter(str(path), tf.io.TFRecordOptions(compression_type=compression)) as w:
        for r in records:
            w.write(r)


@pytest.mark.parametrize("compression,name", [("", "r.tfrecord"), ("GZIP", "r.tfrecord.gz"), ("ZLIB", "r.tfrecord.deflate")])
def test_input_formats_read_tensorflow_files(spark, tmp_path, compression, name):
    records = [os.urandom(n) for n in (0, 1, 100, 70000)] + [b"x" * 10] * 200
    tf_write(tmp_path / name, records, compression)
    sc = spark.sparkContext
    conf = {"mapreduce.input.fileinputformat.split.maxsize": "4096"}
    new_api = sc.newAPIHadoopFile("file://" + str(tmp_path / name), "tfhadoop.mapreduce.TFRecordInputFormat", LW, BW,
                                  conf=conf)
    old_api = sc.hadoopFile("file://" + str(tmp_path / name), "tfhadoop.mapred.TFRecordInputFormat", LW, BW,
                            conf={"mapreduce.input.fileinputformat.split.minsize": "1"}, )
    for rdd in (new_api, old_api):
        got = rdd.collect()
        assert sorted(bytes(v) for _, v in got) == sorted(records)
        offsets = sorted(k for k, _ in got)
        assert offsets[0] == 0 and len(set(offsets)) == len(records)
    if not compression:
        assert new_api.getNumPartitions() > 10  # the uncompressed file was split


def test_output_formats_write_what_tensorflow_reads(spark, hadoop_cluster, tmp_path):
    sc = spark.sparkContext
    records = [bytes([i % 256]) * (i % 50) for i in range(500)]
    rdd = sc.parallelize([(i, bytearray(r)) for i, r in enumerate(records)], 3)
    out_new = tmp_path / "new"
    rdd.saveAsNewAPIHadoopFile("file://" + str(out_new), "tfhadoop.mapreduce.TFRecordOutputFormat",
                               keyClass=LW, valueClass=BW,
                               conf={"tfrecord.compression": "gzip",
                                     "mapreduce.output.fileoutputformat.compress": "true",
                                     "mapreduce.output.fileoutputformat.compress.codec":
                                         "org.apache.hadoop.io.compress.BZip2Codec"})
    files = sorted(glob.glob(str(out_new / "part-*")))
    assert files and all(f.endswith(".tfrecord.gz") for f in files)
    got = [r.numpy() for r in tf.data.TFRecordDataset(files, compression_type="GZIP")]
    assert sorted(got) == sorted(records)

    out_old = tmp_path / "old"
    rdd.saveAsHadoopFile("file://" + str(out_old), "tfhadoop.mapred.TFRecordOutputFormat", keyClass=LW, valueClass=BW)
    files = sorted(glob.glob(str(out_old / "part-*")))
    assert files and all(f.endswith(".tfrecord") for f in files)
    assert sorted(r.numpy() for r in tf.data.TFRecordDataset(files)) == sorted(records)

    # on HDFS, read back through our input format
    hdfs_out = hadoop_cluster.hdfs_url("/tmp/jvm-formats-out")
    rdd.saveAsNewAPIHadoopFile(hdfs_out, "tfhadoop.mapreduce.TFRecordOutputFormat", keyClass=LW, valueClass=BW)
    back = sc.newAPIHadoopFile(hdfs_out, "tfhadoop.mapreduce.TFRecordInputFormat", LW, BW).values().collect()
    assert sorted(bytes(v) for v in back) == sorted(records)
