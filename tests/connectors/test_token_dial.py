"""Which NameNode address a process with only delegation tokens dials (tfhadoop.tokens, decided by
the tfhdfs plugin library): no cluster, token files written here in Hadoop's Writable format.
The secure cluster test does the same with a token fetched from a real NameNode."""
from __future__ import annotations

import pytest

from tfhadoop import tokens
from tfhadoop.connectors import hdfs_native

pytestmark = pytest.mark.skipif(not tokens.PLUGIN.exists(), reason="libtfhdfs.so not built (make native)")


def _vint(n: int) -> bytes:
    assert 0 <= n <= 127  # WritableUtils.writeVInt's one-byte range is all these tests need
    return bytes([n])


def _text(b: bytes) -> bytes:
    return _vint(len(b)) + b


def token_file(path, *services: str, kind: bytes = b"HDFS_DELEGATION_TOKEN") -> str:
    """A Credentials token storage file (HDTS, version 0) with one token per service."""
    body = _vint(len(services))
    for service in services:
        body += _text(service.encode()) + _text(b"\x01" * 40) + _text(b"pw") + _text(kind) + _text(service.encode())
    path.write_bytes(b"HDTS\x00" + body + _vint(0))
    return str(path)


def test_ip_named_token_makes_python_dial_the_ip(tmp_path, monkeypatch):
    monkeypatch.setenv(tokens.TOKEN_FILE_ENV, token_file(tmp_path / "t", "127.0.0.1:9000"))
    assert tokens.dial_address("localhost:9000") == "127.0.0.1:9000"
    assert hdfs_native._dial_url("hdfs://localhost:9000") == "hdfs://127.0.0.1:9000"
    assert tokens.dial_address("localhost:9001") is None  # no token for that NameNode


def test_host_named_or_no_token_dials_the_authority(tmp_path, monkeypatch):
    monkeypatch.setenv(tokens.TOKEN_FILE_ENV, token_file(tmp_path / "t", "localhost:9000", "127.0.0.1:9000"))
    assert tokens.dial_address("localhost:9000") is None
    monkeypatch.setenv(tokens.TOKEN_FILE_ENV, token_file(tmp_path / "k", "127.0.0.1:9000", kind=b"kms-dt"))
    assert tokens.dial_address("localhost:9000") is None
    monkeypatch.delenv(tokens.TOKEN_FILE_ENV)
    assert hdfs_native._dial_url("hdfs://localhost:9000") == "hdfs://localhost:9000"
