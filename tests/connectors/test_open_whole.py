"""hdfs_native.open_whole against a fake hdfs-native client: a reader shorter than the file the NameNode
lists (its last block committed, not yet reported) is reopened, and never returned."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from tfhadoop.connectors import hdfs, hdfs_native


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.closed = data, False

    def __len__(self) -> int:
        return len(self.data)

    def close(self) -> None:
        self.closed = True


class _Client:
    """Lists ``data`` at its full length; its reader holds ``short`` empty reads first."""

    def __init__(self, data: bytes, short: int):
        self.data, self.short, self.opened = data, short, []

    def get_file_info(self, path):
        return SimpleNamespace(length=len(self.data))

    def read(self, path):
        reader = _Reader(b"" if len(self.opened) < self.short else self.data)
        self.opened.append(reader)
        return reader


def test_a_short_reader_is_reopened_until_the_block_is_reported():
    client = _Client(b"x" * 100, short=3)
    reader = hdfs_native.open_whole(client, "/f", "hdfs://nn/f")
    assert len(reader) == 100 and len(client.opened) == 4
    assert all(r.closed for r in client.opened[:3]) and not reader.closed


def test_a_block_never_reported_fails_naming_the_file(monkeypatch):
    monkeypatch.setattr(hdfs_native, "LAST_BLOCK_WAIT_S", 0.05)
    with pytest.raises(hdfs.HdfsError, match=r"^hdfs://nn/f: the NameNode lists 100 bytes but only 0 are readable"):
        hdfs_native.open_whole(_Client(b"x" * 100, short=10**6), "/f", "hdfs://nn/f")


def test_close_left_open_asks_until_hdfs_says_closed(monkeypatch):
    answers = [False, False, True]
    monkeypatch.setattr(hdfs, "recover_lease", lambda url: answers.pop(0))
    slept = []
    hdfs.close_left_open("hdfs://nn/job/events.jsonl", sleep=slept.append)
    assert answers == [] and slept == [0.2, 0.4]


def test_close_left_open_of_a_missing_file_is_done_and_a_file_left_open_is_named(monkeypatch):
    def missing(url):
        raise FileNotFoundError(url)

    monkeypatch.setattr(hdfs, "recover_lease", missing)
    hdfs.close_left_open("hdfs://nn/job/progress.jsonl", sleep=lambda s: None)
    monkeypatch.setattr(hdfs, "recover_lease", lambda url: False)
    with pytest.raises(hdfs.HdfsError, match="hdfs://nn/job/events.jsonl is still open 0 s after"):
        hdfs.close_left_open("hdfs://nn/job/events.jsonl", timeout_s=0, sleep=lambda s: None)


def test_append_bytes_writes_the_file_whole_and_renames_it_over(monkeypatch):
    """No HDFS append (hdfs-native's lost lines on the embedded cluster): the old bytes and the
    new ones go to a temporary file renamed over the old one; a missing file is created."""
    files = {"/job/events.jsonl": b"a\n"}
    calls = []

    class _File:
        def __init__(self, path):
            self.path = path

        def __len__(self):
            return len(files[self.path])

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def read(self):
            return files[self.path]

        def write(self, data):
            files[self.path] = files.get(self.path, b"") + data

        def close(self):
            pass

    def read(path):
        if path not in files:
            raise FileNotFoundError(path)
        return _File(path)

    client = SimpleNamespace(
        get_file_info=lambda path: SimpleNamespace(length=len(read(path))), read=read,
        create=lambda path: calls.append("create") or _File(path),
        mkdirs=lambda path, create_parent: calls.append("mkdirs"),
        rename=lambda src, dst, overwrite: calls.append("rename") or files.__setitem__(dst, files.pop(src)))
    monkeypatch.setattr(hdfs, "_job", lambda url: ((lambda what, fn, *args: fn(*args)), client, url[len("hdfs://nn"):]))
    hdfs.append_bytes("hdfs://nn/job/events.jsonl", b'{"b": 1}\n')
    hdfs.append_bytes("hdfs://nn/job/progress.jsonl", b'{"c": 2}\n')
    assert files == {"/job/events.jsonl": b'a\n{"b": 1}\n', "/job/progress.jsonl": b'{"c": 2}\n'}
    assert calls == ["mkdirs", "create", "rename"] * 2  # write_bytes: no append, a rename over the old file
