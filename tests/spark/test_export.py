"""`tfhadoop export`: Hive table on the embedded cluster -> sharded TFRecords on HDFS with a
manifest, read back by TensorFlow with the manifest's parse spec, value for value."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tfhadoop.cli import CommandError
from tfhadoop.connectors import hdfs as thdfs
from tfhadoop.spark.export import ExportOptions, check_label, parse_splits, run_export

pytestmark = [pytest.mark.cluster]

ROWS = 4000


@pytest.fixture(scope="module")
def features_table(spark):
    table = f"export_src_{uuid.uuid4().hex[:6]}"
    spark.range(ROWS).selectExpr(
        "id",
        "cast(id % 13 as float) / 4 as x",
        "cast(id * 1.5 as double) as ratio",
        "concat('user-', cast(id % 97 as string)) as user",
        "array(cast(id as float), cast(id + 1 as float), cast(id + 2 as float)) as emb",
        "case when id % 5 = 0 then null else cast(id % 3 as bigint) end as maybe",
        "transform(sequence(0, cast(id % 4 as int)), i -> concat('t', cast(i as string))) as tags",
        "id % 2 = 0 as even",
        "cast(id % 4 as string) as day",
    ).write.format("parquet").saveAsTable(table)
    return table


def _download(hadoop_cluster, manifest_dir: str, rel: str, local_dir: Path) -> str:
    fs = thdfs.filesystem(hadoop_cluster.hdfs_url("/"))
    target = local_dir / rel.replace("/", "__")
    with fs.open_read(manifest_dir + "/" + rel) as src:
        target.write_bytes(src.read())
    return str(target)


def _read_manifest(hadoop_cluster, out: str) -> dict:
    fs = thdfs.filesystem(hadoop_cluster.hdfs_url("/"))
    with fs.open_read(out + "/_tfhadoop.json") as f:
        return json.loads(f.read())


def _listing(hadoop_cluster, out: str) -> list[str]:
    from urllib.parse import urlparse

    from hdfs_native import Client

    client = Client(hadoop_cluster.default_fs)
    root = urlparse(out).path
    return sorted(s.path[len(root) + 1:] if s.path.startswith(root) else s.path
                  for s in client.list_status(root, recursive=True) if not s.isdir)


def _parse(files: list[str], parse_spec: dict) -> dict[str, Any]:
    """The exported (uncompressed) shards parsed by ``tf.io`` with the manifest's spec: a dense tensor per
    fixed-length feature, a sparse one per variable-length feature."""
    import tensorflow as tf

    from tfhadoop.connectors.dataset import tf_parse_spec

    features = tf_parse_spec(parse_spec)
    assert isinstance(features, dict)  # Examples: one dict, not a (context, sequence) pair
    return tf.io.parse_example(tf.stack(list(tf.data.TFRecordDataset(files))), features)


@pytest.mark.slow
def test_export_hive_table_with_splits_reads_back_in_tensorflow(spark, hadoop_cluster, features_table, tmp_path):
    import tensorflow as tf

    out = hadoop_cluster.hdfs_url(f"/datasets/{features_table}")
    manifest = run_export(spark, ExportOptions(output=out, table=features_table, shards=10,
                                               splits=parse_splits("train=0.8,eval=0.2"), split_key="id"))
    listing = _listing(hadoop_cluster, out)
    assert "_SUCCESS" in listing and "_tfhadoop.json" in listing
    shard_names = [p for p in listing if re.fullmatch(r"(train|eval)/part-\d{5}-of-\d{5}\.tfrecord", p)]
    assert sorted(f["path"] for f in manifest["files"]) == sorted(shard_names)
    # the default is uncompressed, each shard with its index: a trainer task starts at a byte offset
    assert manifest["compression"] == "none"
    assert all(os.path.join(os.path.dirname(p), f".{os.path.basename(p)}.tfrindex") in listing for p in shard_names)
    assert manifest == _read_manifest(hadoop_cluster, out)
    assert manifest["records"] == ROWS
    assert set(manifest["splits"]) == {"train", "eval"}
    assert abs(manifest["splits"]["train"]["records"] / ROWS - 0.8) < 0.05
    # Balanced shards: within 1% of each other inside a split.
    for split in ("train", "eval"):
        counts = [f["records"] for f in manifest["files"] if f["split"] == split]
        assert len(counts) == (8 if split == "train" else 2)
        assert max(counts) - min(counts) <= max(1, 0.01 * max(counts)), counts
    spec = manifest["parse_spec"]["features"]
    assert spec["emb"] == {"type": "FixedLenFeature", "shape": [3], "dtype": "float32"}
    assert spec["maybe"]["type"] == "VarLenFeature" and spec["tags"]["type"] == "VarLenFeature"
    assert spec["id"] == {"type": "FixedLenFeature", "shape": [], "dtype": "int64"}

    # TensorFlow reads every row with the manifest's spec; values equal the table's.
    files = [_download(hadoop_cluster, out, f["path"], tmp_path) for f in manifest["files"]]
    for f, entry in zip(files, manifest["files"]):
        assert os.path.getsize(f) == entry["bytes"]
        assert sum(1 for _ in tf.data.TFRecordDataset(f)) == entry["records"]
    parsed = _parse(files, manifest["parse_spec"])
    got = {int(i): k for k, i in enumerate(parsed["id"].numpy())}
    assert sorted(got) == list(range(ROWS))
    rows = {r.id: r for r in spark.table(features_table).collect()}
    maybe = tf.sparse.to_dense(parsed["maybe"], default_value=-1).numpy()
    tags = tf.sparse.to_dense(parsed["tags"], default_value=b"").numpy()
    for i, k in got.items():
        r = rows[i]
        assert parsed["x"][k].numpy() == pytest.approx(r.x)
        assert parsed["ratio"][k].numpy() == pytest.approx(r.ratio, rel=1e-6)
        assert parsed["user"][k].numpy().decode() == r.user
        assert list(parsed["emb"][k].numpy()) == pytest.approx(r.emb)
        assert parsed["even"][k].numpy() == int(r.even)
        assert (maybe[k][0] if r.maybe is not None else None) == r.maybe or (r.maybe is None and maybe[k][0] == -1)
        assert [t.decode() for t in tags[k] if t] == r.tags
    # Deterministic split assignment: the same ids land in the same split on a re-run.
    again = run_export(spark, ExportOptions(output=out, table=features_table, shards=10, overwrite=True,
                                            splits=parse_splits("train=0.8,eval=0.2"), split_key="id"))
    assert again["splits"]["eval"]["records"] == manifest["splits"]["eval"]["records"]


def test_existing_output_is_refused_without_overwrite(spark, hadoop_cluster, features_table):
    out = hadoop_cluster.hdfs_url(f"/datasets/refuse-{uuid.uuid4().hex[:6]}")
    run_export(spark, ExportOptions(output=out, table=features_table, shards=2, compression="none"))
    first = _listing(hadoop_cluster, out)
    shards = [p for p in first if re.fullmatch(r"part-\d{5}-of-\d{5}\.tfrecord", p)]
    assert shards and all(f".{p}.tfrindex" in first for p in shards)  # each shard's index follows its rename
    with pytest.raises(CommandError, match="already exists; pass --overwrite"):
        run_export(spark, ExportOptions(output=out, table=features_table, shards=2))
    manifest = run_export(spark, ExportOptions(output=out, query=f"SELECT * FROM {features_table} WHERE id < 100",
                                               shards=3, compression="zlib", overwrite=True))
    assert manifest["records"] == 100 and manifest["compression"] == "zlib"
    assert all(p.endswith(".tfrecord.zlib") for p in (f["path"] for f in manifest["files"]))
    assert [p for p in _listing(hadoop_cluster, out) if "part-" in p] == sorted(f["path"] for f in manifest["files"])


def test_failed_export_leaves_nothing_visible(spark, hadoop_cluster, features_table):
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    parent = f"/datasets/failed-{uuid.uuid4().hex[:6]}"
    out = hadoop_cluster.hdfs_url(parent + "/ds")
    bad = f"SELECT *, assert_true(id < 3000, 'row 3000 is poison') AS check FROM {features_table}"
    with pytest.raises((PySparkException, Py4JJavaError, Exception), match="poison"):
        run_export(spark, ExportOptions(output=out, query=bad, shards=4))
    from hdfs_native import Client

    client = Client(hadoop_cluster.default_fs)
    leftovers = [s.path for s in client.list_status(parent)] if _exists(client, parent) else []
    assert leftovers == [], f"a failed export left {leftovers}"


def _exists(client, path):
    try:
        client.get_file_info(path)
        return True
    except FileNotFoundError:
        return False


def test_partition_by_and_empty_input(spark, hadoop_cluster, features_table):
    out = hadoop_cluster.hdfs_url(f"/datasets/parts-{uuid.uuid4().hex[:6]}")
    manifest = run_export(spark, ExportOptions(output=out, table=features_table, shards=2, partition_by="day"))
    dirs = {f["path"].split("/")[0] for f in manifest["files"]}
    assert dirs == {"day=0", "day=1", "day=2", "day=3"}
    assert sum(f["records"] for f in manifest["files"]) == ROWS
    assert "day" not in manifest["parse_spec"]["features"]
    with pytest.raises(CommandError, match="no records"):
        run_export(spark, ExportOptions(output=out + "-empty", query=f"SELECT * FROM {features_table} WHERE id < 0"))


def test_option_errors():
    with pytest.raises(CommandError, match="exactly one"):
        ExportOptions(output="x", table="t", query="q")
    with pytest.raises(CommandError, match="add up to 1"):
        ExportOptions(output="x", table="t", splits=parse_splits("a=0.5,b=0.2"))
    with pytest.raises(CommandError, match="name=fraction"):
        parse_splits("train:0.9")
    with pytest.raises(CommandError, match="--compression"):
        ExportOptions(output="x", table="t", compression="snappy")


def test_flag_defaults_come_from_the_options_class():
    """One source of truth: `tfhadoop export --help` and a flagless run use ExportOptions' defaults
    (uncompressed shards, which a trainer task enters at a byte offset)."""
    import argparse

    from tfhadoop.cli import build_parser
    from tfhadoop.spark.export import options_from_args

    parser = build_parser("export")
    args = parser.parse_args(["export", "--table", "t", "--output", "x"])
    opts = options_from_args(args)
    assert (opts.compression, opts.input_format, opts.record_type) == ("none", "parquet", "Example")
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # argparse has no public API
    assert "default none" in " ".join(sub.choices["export"].format_help().split())


@pytest.mark.slow
def test_spark_submit_runs_the_same_job(hadoop_cluster, tmp_path):
    """The export as a plain spark-submit job file with the jar, on CSV input from local disk."""
    import pyspark

    from tfhadoop.spark.session import tfhadoop_jar

    jar = tfhadoop_jar()
    assert jar, "no tfhadoop jar under jars/: build it (make jar)"
    csv = tmp_path / "in.csv"
    csv.write_text("id,score,name\n" + "".join(f"{i},{i / 10},n{i}\n" for i in range(500)))
    out = hadoop_cluster.hdfs_url(f"/datasets/submit-{uuid.uuid4().hex[:6]}")
    job = Path(__file__).resolve().parents[2] / "spark" / "python" / "tfhadoop" / "spark" / "export.py"
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable,
               PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
    proc = subprocess.run([str(submit), "--master", "local[2]", "--jars", jar, str(job),
                           "--input", f"file://{csv}", "--input-format", "csv", "--output", out, "--shards", "3"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "exported 500 records" in proc.stdout
    assert "a trainer task starts at a byte offset" in proc.stdout  # the default: uncompressed, indexed
    manifest = _read_manifest(hadoop_cluster, out)
    assert manifest["compression"] == "none" and all(f["path"].endswith(".tfrecord") for f in manifest["files"])
    assert [f["records"] for f in manifest["files"]] in ([167, 167, 166], [166, 167, 167], [167, 166, 167])
    assert manifest["source"] == {"input": f"file://{csv}", "input_format": "csv"}


@pytest.mark.slow
def test_export_runs_on_yarn(hadoop_cluster, tmp_path):
    """`tfhadoop export --master yarn`: the Spark job runs in YARN containers of the embedded cluster."""
    import urllib.request

    csv = tmp_path / "in.csv"
    csv.write_text("id,score\n" + "".join(f"{i},{i / 7}\n" for i in range(900)))
    out = hadoop_cluster.hdfs_url(f"/datasets/yarn-{uuid.uuid4().hex[:6]}")
    proc = subprocess.run([sys.executable, "-m", "tfhadoop", "export", "--master", "yarn", "--input", f"file://{csv}",
                           "--input-format", "csv", "--output", out, "--shards", "3"],
                          capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "exported 900 records" in proc.stdout
    assert _read_manifest(hadoop_cluster, out)["records"] == 900
    with urllib.request.urlopen(hadoop_cluster.conf.rm_webapp_url + "/ws/v1/cluster/apps?applicationTypes=SPARK",
                                timeout=10) as resp:
        apps = (json.load(resp).get("apps") or {}).get("app", [])
    assert any(a["name"] == "tfhadoop-export" and a["finalStatus"] == "SUCCEEDED" for a in apps), apps


@pytest.mark.slow
def test_export_vector_assembler_output_float32_loss_and_exact_columns(spark, hadoop_cluster, tmp_path):
    """VectorAssembler output exports as a fixed-length float feature of the vector's size; the
    float32 loss of double/decimal columns is counted; --exact-columns writes them exactly."""
    from pyspark.ml.feature import VectorAssembler

    base = spark.range(200).selectExpr(
        "id", "cast(id as double) * 0.5 as a", "cast(id % 7 as double) as b", "cast(id % 2 as bigint) as label",
        "cast(id as double) + 1234567890123.0 as big", "cast(id as decimal(20,0)) * 1000000007 as n",
        "cast(id as decimal(38,18)) / 7 as dec")
    df = VectorAssembler(inputCols=["a", "b"], outputCol="features").transform(base).select(
        "id", "features", "label", "big", "n", "dec")
    with pytest.raises(CommandError, match="--label 'features' is a vector"):
        check_label(df, "features")
    with pytest.raises(CommandError, match="--label 'arr' is of type array<bigint>"):
        check_label(base.selectExpr("array(id) as arr"), "arr")
    table = f"vec_src_{uuid.uuid4().hex[:6]}"
    df.write.format("parquet").saveAsTable(table)
    out = hadoop_cluster.hdfs_url(f"/datasets/{table}")
    manifest = run_export(spark, ExportOptions(output=out, table=table, shards=2, label="label"))
    spec = manifest["parse_spec"]["features"]
    assert spec["features"] == {"type": "FixedLenFeature", "shape": [2], "dtype": "float32"}
    assert manifest["label"] == "label"
    loss = manifest["float32_loss"]
    assert loss["big"]["changed"] == 200 and loss["big"]["max_change"] > 0
    assert loss["n"]["changed"] > 0 and loss["dec"]["changed"] > 0
    files = [_download(hadoop_cluster, out, f["path"], tmp_path) for f in manifest["files"]]
    parsed = _parse(files, manifest["parse_spec"])
    for i, v in zip(parsed["id"].numpy(), parsed["features"].numpy()):
        assert list(v) == [i * 0.5, i % 7]
    # exactly: n (decimal scale 0) and big (integral doubles) as int64, dec as decimal text
    out2 = out + "-exact"
    m2 = run_export(spark, ExportOptions(output=out2, table=table, shards=1, exact_columns=("big", "n", "dec")))
    assert m2["exact_columns"] == {"big": "int64", "n": "int64", "dec": "decimal_text"}
    spec2 = m2["parse_spec"]["features"]
    assert spec2["big"]["dtype"] == "int64" and spec2["big"]["exact"] == "int64"
    assert spec2["dec"]["dtype"] == "string" and spec2["dec"]["exact"] == "decimal_text"
    assert "big" not in m2["float32_loss"] and "dec" not in m2["float32_loss"]
    files = [_download(hadoop_cluster, out2, f["path"], tmp_path) for f in m2["files"]]
    parsed = _parse(files, m2["parse_spec"])
    rows = {r.id: r for r in df.collect()}
    for k, i in enumerate(parsed["id"].numpy()):
        r = rows[int(i)]
        assert parsed["big"][k].numpy() == int(r.big) and parsed["n"][k].numpy() == int(r.n)
        assert parsed["dec"][k].numpy().decode() == format(r.dec, "f")
    with pytest.raises(CommandError, match="--exact-columns names 'label' of type bigint"):
        run_export(spark, ExportOptions(output=out + "-bad", table=table, exact_columns=("label",)))
