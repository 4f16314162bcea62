"""A task's input pipeline on real TensorFlow: from the byte offset of the record-boundary index
entry before its first record, exactly its records, in order; without an index, the same records
by skipping from the shard start."""
from __future__ import annotations

import os

import pytest

from tests.trainer import trainer_test_models as models


def _records(task, compression):
    import tensorflow as tf

    from tfhadoop.trainer.step import records_from, without_rewrites

    ds = without_rewrites(records_from(tf.constant(task.path), tf.constant(task.offset, tf.int64), compression)
                          .skip(task.records_to_skip).take(task.count))
    return list(ds.as_numpy_iterator())


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_every_task_reads_exactly_its_records(tmp_path, compression):
    from tfhadoop.connectors import dataset as mf
    from tfhadoop.connectors.tfrecord import read_records
    from tfhadoop.trainer.step import COMPRESSION
    from tfhadoop.trainer.tasks import plan_epoch

    root = str(tmp_path / "ds")
    models.write_dataset(root, train_shards=(700, 333), eval_records=0, compression=compression, index_interval=4096)
    m = mf.load(root)
    indexes = mf.load_indexes(m, "train")
    if compression == "none":
        assert all(len(i[0]) > 3 for i in indexes.values())  # an entry every 4 kB: several per shard
    else:
        assert indexes == {s.path: None for s in m.split("train")}  # TF cannot start inside a gzip stream
    tasks = plan_epoch(m, "train", task_records=100, indexes=indexes)
    assert any(t.offset > 0 and t.records_to_skip < t.start for t in tasks) == (compression == "none")
    shards = {mf.shard_url(m, s): list(read_records(mf.shard_url(m, s), compression=None if compression == "none"
                                                    else compression)) for s in m.split("train")}
    for t in tasks:
        assert _records(t, COMPRESSION[compression]) == shards[t.path][t.start:t.start + t.count], t
    assert sum(t.count for t in tasks) == 1033


def test_an_index_that_does_not_describe_the_shard_is_not_used(tmp_path):
    from tfhadoop.connectors import dataset as mf

    root = str(tmp_path / "ds")
    models.write_dataset(root, train_shards=(300,), eval_records=0, compression="none", index_interval=4096)
    shard = os.path.join(root, "part-00000-of-00001.tfrecord")
    with open(shard, "ab") as f:
        f.write(b"\0" * 16)  # the file changed after its index was written
    assert mf.load_indexes(mf.load(root), "train") == {"part-00000-of-00001.tfrecord": None}
