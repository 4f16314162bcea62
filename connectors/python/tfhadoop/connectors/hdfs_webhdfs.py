"""The WebHDFS backend of :mod:`tfhadoop.connectors.hdfs` (the ``hdfs`` package over HTTP): the
fallback for reading and writing records where hdfs-native is missing or its RPC connection fails
(``TFHADOOP_HDFS_CLIENT=webhdfs`` forces it). :func:`tfhadoop.connectors.hdfs.filesystem` picks it."""
from __future__ import annotations

import getpass
import os
from urllib.parse import urlparse

from tfhadoop.connectors.hdfs_base import HdfsError, _conf, _HdfsFS, _split, _unstrip


class _OwnsContext:
    """A file-like object over a context manager it entered: closing exits it, once."""

    _cm = None

    def close(self) -> None:
        if self._cm is not None:
            cm, self._cm = self._cm, None
            cm.__exit__(None, None, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _WebHdfsWriter(_OwnsContext):
    """A file-like writer over the hdfs package's streaming ``write`` context manager."""

    def __init__(self, cm, url):
        self._cm, self._url = cm, url
        self._w = cm.__enter__()
        self.name = url

    def write(self, data) -> int:
        self._w.write(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass



class _WebHdfsReader(_OwnsContext):
    """An HTTP body that ends early (a dropped connection) raises instead of looking like EOF."""

    def __init__(self, cm, url: str, length: int):
        self._cm, self._url, self._length, self._pos = cm, url, length, 0
        self._raw = cm.__enter__()
        self.name = url

    def read(self, n: int = -1) -> bytes:
        piece = self._raw.read(n if n and n > 0 else None)
        self._pos += len(piece)
        if not piece and self._pos < self._length:
            raise HdfsError(f"{self._url}: WebHDFS stream ended at byte {self._pos} of {self._length}")
        return piece

    def readable(self) -> bool:
        return True



class WebHdfsFS(_HdfsFS):
    """WebHDFS over HTTP (the ``hdfs`` package); needs the NameNode's HTTP address."""

    name = "webhdfs"

    def __init__(self, base: str, http_url: str | None = None):
        import hdfs as hdfscli

        super().__init__(base)
        if http_url is None:
            conf = _conf()
            if urlparse(conf.default_fs).netloc != urlparse(base).netloc:
                raise HdfsError(f"no WebHDFS address known for {base} (the Hadoop conf describes {conf.default_fs})")
            http_url = conf.webhdfs_url
        self.http_url = http_url
        self._client = hdfscli.InsecureClient(http_url, user=os.environ.get("HADOOP_USER_NAME") or getpass.getuser())
        self._errors = (hdfscli.HdfsError,)

    def _call(self, what, path, fn, *args, **kw):
        try:
            return fn(*args, **kw)
        except FileNotFoundError:
            raise
        except Exception as exc:  # noqa: BLE001 - requests' ConnectionError, HdfsError
            if "not found" in str(exc).lower() or "does not exist" in str(exc).lower():
                raise FileNotFoundError(f"{_unstrip(self.base, path)}: no such file") from None
            raise self._fail(what, path, exc) from None

    def _length(self, path: str) -> int:
        st = self._call("stat", path, self._client.status, path)  # strict: a missing file raises
        if st is None:
            raise FileNotFoundError(f"{_unstrip(self.base, path)}: no such file")
        return st["length"]

    def open_read(self, url: str):
        _, path = _split(url)
        length = self._length(path)
        return self._call("read", path, lambda: _WebHdfsReader(self._client.read(path), url, length))

    def open_write(self, url: str, overwrite: bool = True):
        _, path = _split(url)
        return self._call("write", path, lambda: _WebHdfsWriter(self._client.write(path, overwrite=overwrite), url))

    def size(self, url: str) -> int:
        _, path = _split(url)
        return self._length(path)

    def _status(self, path: str):
        st = self._call("stat", path, self._client.status, path, strict=False)
        return None if st is None else st["type"] == "DIRECTORY"

    def _list(self, path: str):
        return [(name, st["type"] == "DIRECTORY") for name, st in self._call("list", path, self._client.list, path, status=True)]

    def delete(self, url: str, recursive: bool = False) -> bool:
        _, path = _split(url)
        return self._call("delete", path, self._client.delete, path, recursive=recursive)

    def check(self) -> None:
        self._status("/")
