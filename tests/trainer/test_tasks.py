"""Epoch planning and the exactly-once ledger, from a manifest as the export job writes it."""
from __future__ import annotations

import json

import pytest

from tfhadoop.connectors import dataset as mf
from tfhadoop.trainer.tasks import EpochLedger, plan_epoch

SPEC = {"features": {"x": {"type": "FixedLenFeature", "shape": [2], "dtype": "float32"},
                     "y": {"type": "FixedLenFeature", "shape": [], "dtype": "float32"}}}


def _manifest(records=(250, 250, 101), evals=(40,)):
    files = [{"path": f"part-{i:05d}-of-00004.tfrecord.gz", "records": n, "bytes": 10 * n, "split": "train"}
             for i, n in enumerate(records)]
    files += [{"path": f"eval/part-{i:05d}.tfrecord.gz", "records": n, "bytes": 10 * n, "split": "eval"}
              for i, n in enumerate(evals)]
    return {"format": "tfrecord", "record_type": "Example", "compression": "gzip", "files": files,
            "splits": {}, "schema": {}, "parse_spec": SPEC, "source": {}, "created": "now"}


def test_load_local_manifest(tmp_path):
    (tmp_path / mf.MANIFEST).write_text(json.dumps(_manifest()))
    m = mf.load(str(tmp_path))
    assert m.compression == "gzip" and m.records("train") == 601 and m.records("eval") == 40
    assert mf.shard_url(m, m.split("eval")[0]) == f"{tmp_path}/eval/part-00000.tfrecord.gz"


@pytest.mark.parametrize("change, message", [
    ({"format": "parquet"}, "only tfrecord"),
    ({"compression": "snappy"}, "unknown compression"),
    ({"files": []}, "lists no files"),
    ({"files": [{"path": "a"}]}, "bad file entry"),
])
def test_bad_manifests_are_named(tmp_path, change, message):
    (tmp_path / mf.MANIFEST).write_text(json.dumps({**_manifest(), **change}))
    with pytest.raises(mf.ManifestError, match=message):
        mf.load(str(tmp_path))


def test_missing_manifest(tmp_path):
    with pytest.raises(mf.ManifestError, match="no dataset manifest"):
        mf.load(str(tmp_path))


def test_every_record_in_exactly_one_task_and_order_is_per_epoch():
    m = mf.parse(_manifest(), "/d")
    e0, e1 = plan_epoch(m, task_records=100, epoch=0), plan_epoch(m, task_records=100, epoch=1)
    assert plan_epoch(m, task_records=100, epoch=0) == e0  # a restarted coordinator plans the same
    assert [(t.path, t.start) for t in e0] != [(t.path, t.start) for t in e1]
    covered = {}
    for t in e0:
        for r in range(t.start, t.start + t.count):
            assert (t.path, r) not in covered
            covered[(t.path, r)] = t.id
    assert len(covered) == 601 and max(t.count for t in e0) == 100
    assert {t.path for t in e0} == {f"/d/part-{i:05d}-of-00004.tfrecord.gz" for i in range(3)}  # read where they lie
    assert all(t.offset == 0 and t.records_to_skip == t.start for t in e0)  # no index: from the shard start


def test_with_an_index_a_task_starts_at_the_entry_before_its_first_record():
    from tfhadoop.trainer.tasks import start_point

    index = ([0, 90, 180], [0, 9000, 18100])  # ordinals, byte offsets (one entry every ~9 kB here)
    assert start_point(index, 0) == (0, 0)
    assert start_point(index, 89) == (0, 89)
    assert start_point(index, 90) == (9000, 0)
    assert start_point(index, 200) == (18100, 20)
    assert start_point(None, 200) == (0, 200)
    m = mf.parse({**_manifest(), "compression": "none"}, "hdfs://nn:8020/d")
    indexes = {"part-00000-of-00004.tfrecord.gz": index}
    tasks = {(t.path.rsplit("/", 1)[-1], t.start): t for t in plan_epoch(m, task_records=100, indexes=indexes)}
    t = tasks[("part-00000-of-00004.tfrecord.gz", 200)]
    assert (t.path, t.offset, t.records_to_skip, t.count) == ("hdfs://nn:8020/d/part-00000-of-00004.tfrecord.gz",
                                                               18100, 20, 50)
    other = tasks[("part-00001-of-00004.tfrecord.gz", 200)]
    assert (other.offset, other.records_to_skip) == (0, 200)  # a shard without an index: the slow path


def test_ledger_counts_completed_tasks_once_and_survives_a_checkpoint():
    m = mf.parse(_manifest(), "/d")
    tasks = plan_epoch(m, task_records=100)
    ledger = EpochLedger(0, m.records("train"))
    for t in tasks[:3]:
        ledger.record(t, t.count)
    with pytest.raises(RuntimeError, match="completed twice"):
        ledger.record(tasks[0], tasks[0].count)
    with pytest.raises(RuntimeError, match="expected"):
        ledger.record(tasks[3], tasks[3].count - 1)
    restored = EpochLedger.from_json(json.loads(json.dumps(ledger.to_json())))
    assert restored.remaining(tasks) == tasks[3:]
    for t in restored.remaining(tasks):
        restored.record(t, t.count)
    assert restored.complete() and restored.examples == 601


def test_slow_path_note_names_the_rewrite_command_and_input_report_counts_indexed_shards():
    from tfhadoop.trainer.training_common import input_report

    gz = mf.parse(_manifest(), "hdfs://nn:8020/d")
    unindexed = {s.path: None for s in gz.split("train")}
    note = mf.slow_path_note(gz, unindexed)
    assert note is not None and "3 of 3 train shards are gzip-compressed" in note
    assert ("tfhadoop export --input hdfs://nn:8020/d --input-format tfrecord --compression none "
            "--output hdfs://nn:8020/d-indexed") in note
    assert input_report(unindexed) == {"train_shards": 3, "indexed_shards": 0}
    plain = mf.parse({**_manifest(), "compression": "none"}, "hdfs://nn:8020/d")
    indexed = {s.path: ([0], [0]) for s in plain.split("train")}
    assert mf.slow_path_note(plain, indexed) is None
    assert input_report(indexed) == {"train_shards": 3, "indexed_shards": 3}
    older = {**indexed, "part-00002-of-00004.tfrecord.gz": None}  # uncompressed, written before indexes
    assert "1 of 3 train shards are without a record index" in (mf.slow_path_note(plain, older) or "")
