"""A gzip dataset of an older export, rewritten by `tfhadoop export --input DATASET --input-format
tfrecord --compression none`: the same records per split, the manifest's spec and label kept, every
shard indexed, and trainer tasks then start at byte offsets. The gzip dataset itself still trains
(on the slow path), and `tfhadoop train` says so once, naming the rewrite command."""
from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tfhadoop.connectors import dataset
from tfhadoop.spark.export import ExportOptions, parse_splits, run_export

pytestmark = [pytest.mark.cluster]

ROWS = 3000
KEPT = ("record_type", "schema", "parse_spec", "label", "split_key", "partition_by", "float32_loss", "exact_columns")


@pytest.fixture(scope="module")
def gzip_dataset(spark, hadoop_cluster):
    """(URL, manifest) of a dataset exported with --compression gzip and train/eval splits."""
    import uuid

    view = f"rewrite_src_{uuid.uuid4().hex[:6]}"
    spark.range(ROWS).selectExpr(
        "id",
        "array(cast((id % 97) / 97.0 - 0.5 as float), cast((id % 89) / 89.0 - 0.5 as float), "
        "cast((id % 83) / 83.0 - 0.5 as float), cast((id % 79) / 79.0 - 0.5 as float)) as x",
    ).selectExpr("x", "cast(2 * x[0] - x[1] + 0.5 * x[2] as float) as y").createOrReplaceTempView(view)
    url = hadoop_cluster.hdfs_url(f"/datasets/{view}-gz")
    manifest = run_export(spark, ExportOptions(output=url, query=f"select * from {view}", shards=5, compression="gzip",
                                               splits=parse_splits("train=0.8,eval=0.2"), label="y"))
    assert manifest["compression"] == "gzip"
    assert all(f["path"].endswith(".tfrecord.gz") for f in manifest["files"])
    return url, manifest


def _local_copy(url: str, rel: str, tmp_path: Path) -> str:
    from tfhadoop.connectors import hdfs

    target = tmp_path / rel.replace("/", "__")
    target.write_bytes(hdfs.read_bytes(f"{url}/{rel}"))
    return str(target)


def _examples(url: str, manifest: dict, tmp_path: Path) -> dict[str, Counter]:
    """split -> the multiset of its records, each decoded as a tf.train.Example (as sorted JSON)."""
    import tensorflow as tf
    from google.protobuf.json_format import MessageToDict

    comp = "GZIP" if manifest["compression"] == "gzip" else ""
    out: dict[str, Counter] = {}
    for f in manifest["files"]:
        local = _local_copy(url, f["path"], tmp_path)
        records = [bytes(r.numpy()) for r in tf.data.TFRecordDataset(local, compression_type=comp)]
        assert len(records) == f["records"], f
        decoded = (json.dumps(MessageToDict(tf.train.Example.FromString(r)), sort_keys=True) for r in records)
        out.setdefault(f["split"], Counter()).update(decoded)
    return out


@pytest.mark.slow
def test_gzip_dataset_rewritten_uncompressed_keeps_records_and_manifest_and_trains_from_offsets(
        spark, hadoop_cluster, gzip_dataset, tmp_path, capsys):
    from hdfs_native import Client

    from tfhadoop.cli import main
    from tfhadoop.connectors import hdfs
    from tfhadoop.trainer.tasks import plan_epoch

    old_url, old = gzip_dataset
    new_url = old_url.replace("-gz", "-indexed")
    # the command the README and the trainer's notice name, run as a user runs it
    assert main(["export", "--input", old_url, "--input-format", "tfrecord", "--compression", "none",
                 "--output", new_url]) == 0
    assert f"exported {ROWS} records" in capsys.readouterr().out
    new = json.loads(hdfs.read_bytes(f"{new_url}/{dataset.MANIFEST}"))

    # uncompressed shards, each with its record index, as many per split as before
    assert new["compression"] == "none" and new["records"] == ROWS
    assert new["rewritten_from"]["compression"] == "gzip"
    root = urlparse(new_url).path
    names = {s.path[len(root) + 1:] for s in Client(hadoop_cluster.default_fs).list_status(root, recursive=True)}
    for f in new["files"]:
        assert f["path"].endswith(".tfrecord"), f
        d, name = os.path.split(f["path"])
        assert os.path.join(d, f".{name}.tfrindex") in names, (f["path"], sorted(names))
        with open(_local_copy(new_url, f["path"], tmp_path), "rb") as fh:
            assert fh.read(2) != b"\x1f\x8b", f"{f['path']} is gzip"
    for split in ("train", "eval"):
        assert len(new["splits"][split]["files"]) == len(old["splits"][split]["files"])
        assert new["splits"][split]["records"] == old["splits"][split]["records"]
        assert new["splits"][split]["fraction"] == old["splits"][split]["fraction"]

    # the same tf.Examples in each split, and what the trainer reads them with, unchanged
    assert _examples(new_url, new, tmp_path) == _examples(old_url, old, tmp_path)
    assert {k: new.get(k) for k in KEPT} == {k: old.get(k) for k in KEPT}

    # how the trainer plans: every train shard has its index, so every task starts at an index entry's
    # byte offset (skip >= 0 after it); the gzip dataset's tasks read from the shard start (skip -1).
    # These ~20 kB shards hold one entry (offset 0; one per ~1 MiB): bench_task_offsets --from-export
    # measures starts deep in a 1M-record shard.
    new_m, old_m = dataset.load(new_url), dataset.load(old_url)
    new_idx, old_idx = dataset.load_indexes(new_m, "train"), dataset.load_indexes(old_m, "train")
    assert new_idx and all(i is not None for i in new_idx.values()), new_idx
    assert dataset.slow_path_note(new_m, new_idx) is None
    tasks = plan_epoch(new_m, "train", task_records=100, indexes=new_idx)
    assert all(t.skip >= 0 and t.skip == t.start for t in tasks), tasks[:3]
    assert all(i is None for i in old_idx.values())
    assert all(t.skip == -1 for t in plan_epoch(old_m, "train", task_records=100, indexes=old_idx))
    assert dataset.rewrite_command(old_url) in (dataset.slow_path_note(old_m, old_idx) or "")


def test_rewrite_refuses_layout_options(spark, hadoop_cluster, gzip_dataset):
    from tfhadoop.errors import CommandError

    old_url, _ = gzip_dataset
    with pytest.raises(CommandError, match=r"is a tfhadoop dataset .*--split, --shards"):
        run_export(spark, ExportOptions(output=old_url + "-x", input=old_url, input_format="tfrecord",
                                        splits=parse_splits("a=0.5,b=0.5"), shards=3))


@pytest.mark.slow
def test_train_on_gzip_and_on_its_rewrite(spark, hadoop_cluster, gzip_dataset):
    """Both train; the gzip one on the slow path, said once by `tfhadoop train` with the rewrite
    command; metrics.json's ``input`` says which path each job's tasks took."""
    from tests.trainer import jobs

    old_url, _ = gzip_dataset
    new_url = old_url.replace("-gz", "-indexed2")
    run_export(spark, ExportOptions(output=new_url, input=old_url, input_format="tfrecord"))
    extra = ["--workers", "1", "--epochs", "1"]
    run, proc = jobs.train(hadoop_cluster, old_url, extra=extra)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    notices = [line for line in proc.stdout.splitlines() if line.startswith(f"{old_url} is gzip-compressed")]
    assert len(notices) == 1 and dataset.rewrite_command(old_url) in notices[0], proc.stdout
    assert jobs.metrics(run)["input"] == {"train_shards": 4, "indexed_shards": 0}
    run, proc = jobs.train(hadoop_cluster, new_url, extra=extra)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "compressed" not in proc.stdout, proc.stdout
    assert jobs.metrics(run)["input"] == {"train_shards": 4, "indexed_shards": 4}
