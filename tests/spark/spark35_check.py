"""Runs under a pyspark 3.5 interpreter (the second venv, ``.venv35``) against the same tfhadoop
jar: every save mode, partitionBy with dynamic overwrite, SequenceExample, ByteArray, gzip, and a
value-for-value read back. Writes its final output to argv[2] for the Spark 4 side to check.
Usage: python spark35_check.py JAR OUTDIR. Exits non-zero on any mismatch."""
import os
import shutil
import sys

from pyspark.sql import Row, SparkSession
from pyspark.sql import types as T

jar, out = sys.argv[1], sys.argv[2]
warehouse = os.path.join(out + "-warehouse")
shutil.rmtree(warehouse, ignore_errors=True)
spark = (SparkSession.builder.master("local[2]").config("spark.jars", jar)
         .config("spark.sql.warehouse.dir", "file://" + warehouse)
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
assert spark.version.startswith("3.5"), spark.version
shutil.rmtree(out, ignore_errors=True)
uri = lambda p: "file://" + os.path.join(out, p)  # noqa: E731

schema = T.StructType([
    T.StructField("id", T.LongType()), T.StructField("grp", T.IntegerType()),
    T.StructField("f", T.FloatType()), T.StructField("s", T.StringType()),
    T.StructField("flag", T.BooleanType()), T.StructField("longs", T.ArrayType(T.LongType())),
    T.StructField("strs", T.ArrayType(T.StringType()))])
rows: list[tuple] = [(i, i % 3, i * 0.5, f"s{i}", i % 2 == 0, list(range(i % 4)), [f"t{i}"]) for i in range(30)]
rows.append((99, 0, None, None, None, None, None))
df = spark.createDataFrame(rows, schema)
fmt = "tfrecord"

df.write.format(fmt).save(uri("modes"))  # default ErrorIfExists on a new path
try:
    df.write.format(fmt).save(uri("modes"))
    raise SystemExit("ErrorIfExists did not fail on an existing path")
except Exception as e:  # noqa: BLE001
    assert "already exists" in str(e), e
df.limit(1).write.format(fmt).mode("ignore").save(uri("modes"))
assert spark.read.format(fmt).load(uri("modes")).count() == 31
df.write.format(fmt).mode("append").save(uri("modes"))
assert spark.read.format(fmt).load(uri("modes")).count() == 62
df.limit(3).write.format(fmt).mode("overwrite").save(uri("modes"))
assert spark.read.format(fmt).load(uri("modes")).count() == 3

back = {r["id"]: tuple(r) for r in spark.read.format(fmt).schema(schema).load(uri("modes")).collect()}
df.write.format(fmt).option("compression", "gzip").save(uri("typed"))
back = {r["id"]: tuple(r) for r in spark.read.format(fmt).schema(schema).load(uri("typed")).collect()}
assert back == {r[0]: r for r in rows}, "typed round trip differs"

df.write.format(fmt).partitionBy("grp").save(uri("parts"))
spark.createDataFrame([Row(id=500, grp=0, f=1.0, s="new", flag=True, longs=[1], strs=["x"])], schema) \
    .write.format("tfrecords").mode("overwrite").option("partitionOverwriteMode", "dynamic") \
    .partitionBy("grp").save(uri("parts"))
ids = sorted(r["id"] for r in spark.read.format(fmt).load(uri("parts")).collect())
assert ids == sorted([500] + [r[0] for r in rows if r[1] != 0]), ids

seq = spark.createDataFrame([(1, [[1, 2], [3]]), (2, [])], "id long, ids array<array<long>>")
seq.write.format(fmt).option("recordType", "SequenceExample").save(uri("seq"))
got = {r["id"]: r["ids"] for r in spark.read.format(fmt).option("recordType", "SequenceExample").load(uri("seq")).collect()}
assert got == {1: [[1, 2], [3]], 2: []}, got

raw = spark.createDataFrame([(bytearray(b"abc"),), (bytearray(b""),)], "byteArray binary")
raw.write.format(fmt).option("recordType", "ByteArray").save(uri("raw"))
got = sorted(bytes(r[0]) for r in spark.read.format(fmt).option("recordType", "ByteArray").load(uri("raw")).collect())
assert got == [b"", b"abc"], got
# SQL catalog tables (resolved through the V1 relation on 3.5)
spark.sql(f"CREATE TABLE t35 USING tfrecord OPTIONS (path '{uri('typed')}')")
assert spark.sql("SELECT count(*) FROM t35").collect()[0][0] == 31
spark.sql(f"CREATE TABLE t35b (id BIGINT, s STRING) USING tfrecord LOCATION '{uri('sqltab')}'")
spark.sql("INSERT INTO t35b VALUES (1, 'a'), (2, NULL)")
spark.sql("INSERT OVERWRITE TABLE t35b SELECT 3, 'c'")
assert [tuple(r) for r in spark.sql("SELECT * FROM t35b").collect()] == [(3, "c")]

# Spark ML vectors (dense, sparse, empty) round-trip as float_list features; read back as DenseVector
from pyspark.ml.linalg import DenseVector, SparseVector, VectorUDT  # noqa: E402

vschema = T.StructType([T.StructField("features", VectorUDT()), T.StructField("id", T.LongType())])
vrows = [(DenseVector([1.0, -2.5]), 0), (SparseVector(4, {1: 3.0}), 1), (DenseVector([]), 2), (None, 3)]
spark.createDataFrame(vrows, vschema).write.format(fmt).save(uri("vec"))
vback = {r["id"]: r["features"] for r in spark.read.format(fmt).schema(vschema).load(uri("vec")).collect()}
assert vback == {0: DenseVector([1.0, -2.5]), 1: DenseVector([0.0, 3.0, 0.0, 0.0]), 2: DenseVector([]), 3: None}, vback
seqv = T.StructType([T.StructField("id", T.LongType()), T.StructField("frames", T.ArrayType(VectorUDT()))])
spark.createDataFrame([(1, [DenseVector([0.5]), SparseVector(2, {0: 1.0})])], seqv).write.format(fmt) \
    .option("recordType", "SequenceExample").save(uri("seqvec"))
got = spark.read.format(fmt).option("recordType", "SequenceExample").schema(seqv).load(uri("seqvec")).collect()
assert got[0]["frames"] == [DenseVector([0.5]), DenseVector([1.0, 0.0])], got


def fails_with(df, text):
    try:
        df.collect()
    except Exception as e:  # noqa: BLE001
        assert text in str(e), str(e)[:3000]
        return
    raise SystemExit(f"no error, expected: {text}")


# no silent wrong values: missing under non-nullable, kind mismatch, narrowing
nn = T.StructType([T.StructField("id", T.LongType()), T.StructField("f", T.FloatType(), False)])
fails_with(spark.read.format(fmt).schema(nn).load(uri("typed")), "feature 'f' is missing in record at offset")
fails_with(spark.read.format(fmt).schema("id long, f bigint").load(uri("typed")),
           "feature 'f' is a float_list but column f is bigint")
fails_with(spark.read.format(fmt).schema("id long, s double").load(uri("typed")),
           "feature 's' is a bytes_list but column s is double")
fails_with(spark.read.format(fmt).schema("id long, f string").load(uri("typed")),
           "feature 'f' is a float_list but column f is string")
fails_with(spark.read.format(fmt).schema("id boolean").load(uri("typed")), "feature 'id' holds int64 ")
print("SPARK35 OK", spark.version)
spark.stop()
