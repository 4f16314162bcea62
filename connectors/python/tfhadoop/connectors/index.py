"""A record index: where each record of a TFRecord file starts, for random access and for
handing out record ranges to workers (dynamic sharding).

Sidecar file ``<file>.idx`` (override with ``index_path``), text, one line per record::

    <offset> <framed length>\\n

offset = byte position of the record's header in the (uncompressed) stream, framed length =
12 + data length + 4. This is the layout NVIDIA DALI's ``tfrecord2idx`` writes, so DALI's
TFRecord reader can use our indexes and we can use its. For a compressed file the offsets count
uncompressed bytes and a seek means inflating up to that point. An index whose last record does
not end where an uncompressed file ends is stale and refused.
"""
from __future__ import annotations

import itertools
import os
from array import array
from dataclasses import dataclass

from tfhadoop.connectors import compression as _comp
from tfhadoop.connectors import fileio
from tfhadoop.connectors.tfrecord import TFRecordReader

__all__ = ["RecordIndex", "build_index", "load_index", "index_path_for", "Task", "plan_tasks", "read_task"]


def index_path_for(path: str) -> str:
    return os.fspath(path) + fileio.INDEX_SUFFIX


@dataclass
class RecordIndex:
    path: str
    offsets: array  # 'Q': start of each record
    lengths: array  # 'Q': framed length of each record
    compression: str = ""

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def end(self) -> int:
        return self.offsets[-1] + self.lengths[-1] if len(self.offsets) else 0

    def record(self, i: int) -> bytes:
        """The i-th record (negative counts from the end)."""
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"record {i} of {len(self)} in {self.path}")
        return next(iter(self.read(i, i + 1)))

    def read(self, start: int, stop: int | None = None):
        """Records ``start..stop-1`` (one seek, then sequential reads)."""
        stop = len(self) if stop is None else min(stop, len(self))
        if start >= stop:
            return iter(())
        reader = TFRecordReader(self.path, self.compression or "NONE", offset=self.offsets[start])
        return _closing(itertools.islice(reader, stop - start), reader)

    def save(self, index_path: str | None = None) -> str:
        target = index_path or index_path_for(self.path)
        text = "".join(f"{o} {n}\n" for o, n in zip(self.offsets, self.lengths))
        with fileio.open_write(target) as f:
            f.write(text.encode("ascii"))
        return target


def _closing(it, reader):
    try:
        yield from it
    finally:
        reader.close()


def build_index(path: str, compression: str | None = None, save: bool = True, index_path: str | None = None) -> RecordIndex:
    """Scan ``path`` once (every checksum checked) and record where each record starts."""
    offsets, lengths = array("Q"), array("Q")
    with TFRecordReader(path, compression) as reader:
        for offset, data in reader.with_offsets():
            offsets.append(offset)
            lengths.append(len(data) + 16)
        comp = reader.compression
    idx = RecordIndex(os.fspath(path), offsets, lengths, comp)
    if save:
        idx.save(index_path)
    return idx


def load_index(path: str, compression: str | None = None, index_path: str | None = None, check: bool = True) -> RecordIndex:
    """Read ``<path>.idx``; with ``check``, refuse an index that does not fit the file."""
    source = index_path or index_path_for(path)
    with fileio.open_read(source) as f:
        chunks = []
        while True:
            piece = f.read(1 << 20)
            if not piece:
                break
            chunks.append(piece)
    fields = b"".join(chunks).split()
    if len(fields) % 2:
        raise ValueError(f"{source}: odd number of fields, not a record index")
    try:
        nums = array("Q", map(int, fields))
    except ValueError as exc:
        raise ValueError(f"{source}: not a record index ({exc})") from None
    idx = RecordIndex(os.fspath(path), nums[0::2], nums[1::2], _comp.normalize(compression, os.fspath(path)))
    if check:
        for i in range(1, len(idx)):
            if idx.offsets[i] != idx.offsets[i - 1] + idx.lengths[i - 1]:
                raise ValueError(f"{source}: record {i} does not start where record {i - 1} ends")
        if not idx.compression:
            size = fileio.size(path)
            if size is not None and size != idx.end:
                raise ValueError(f"{source} is stale: it ends at byte {idx.end}, {path} has {size} bytes")
    return idx


@dataclass(frozen=True)
class Task:
    """A record range of one file: records ``start..stop-1`` of ``path``."""

    path: str
    start: int
    stop: int
    offset: int  # byte offset of record ``start``

    @property
    def records(self) -> int:
        return self.stop - self.start


def plan_tasks(indexes, records_per_task: int) -> list[Task]:
    """Cut files into tasks of at most ``records_per_task`` records (ranges never span files),
    for a coordinator to hand out one by one to whichever worker is free."""
    if records_per_task < 1:
        raise ValueError("records_per_task must be >= 1")
    tasks = []
    for idx in indexes:
        for start in range(0, len(idx), records_per_task):
            tasks.append(Task(idx.path, start, min(start + records_per_task, len(idx)), idx.offsets[start]))
    return tasks


def read_task(task: Task, compression: str | None = None):
    """The records of one task, with one seek: no index needed on the worker."""
    reader = TFRecordReader(task.path, compression, offset=task.offset)
    return _closing(itertools.islice(reader, task.records), reader)
