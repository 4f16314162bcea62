"""Record index: offsets match the framing, random access, task planning, stale detection."""
from __future__ import annotations

import os

import pytest

from tfhadoop.connectors.index import build_index, load_index, plan_tasks, read_task
from tfhadoop.connectors.tfrecord_writer import write_records


@pytest.mark.parametrize("name", ["a.tfrecord", "a.tfrecord.gz"])
def test_index_random_access_and_tasks(tmp_path, name):
    records = [os.urandom(i % 97) for i in range(1000)]
    path = str(tmp_path / name)
    write_records(path, records)
    idx = build_index(path)
    assert len(idx) == 1000 and os.path.exists(path + ".idx")
    assert idx.offsets[1] == 16 + len(records[0])
    loaded = load_index(path)
    assert list(loaded.offsets) == list(idx.offsets) and list(loaded.lengths) == list(idx.lengths)
    for i in (0, 1, 499, 999, -1):
        assert loaded.record(i) == records[i]
    assert list(loaded.read(10, 20)) == records[10:20]
    tasks = plan_tasks([loaded], 128)
    assert [t.records for t in tasks] == [128] * 7 + [104]
    got = [r for t in reversed(tasks) for r in read_task(t)]  # any order, any worker
    assert sorted(got) == sorted(records)
    assert list(read_task(tasks[3])) == records[384:512]
    # DALI tfrecord2idx layout: "<offset> <framed length>" per line
    first = open(path + ".idx").readline().split()
    assert first == ["0", str(16 + len(records[0]))]


def test_stale_or_bad_index_is_refused(tmp_path):
    path = str(tmp_path / "b.tfrecord")
    write_records(path, [b"x" * 10] * 5)
    build_index(path)
    write_records(path, [b"x" * 10] * 6)
    with pytest.raises(ValueError, match="stale"):
        load_index(path)
    with open(path + ".idx", "w") as f:
        f.write("0 26\n30 26\n")
    with pytest.raises(ValueError, match="does not start"):
        load_index(path)
    with open(path + ".idx", "w") as f:
        f.write("zero 26\n")
    with pytest.raises(ValueError, match="not a record index"):
        load_index(path)
    with pytest.raises(IndexError):
        build_index(path).record(6)
