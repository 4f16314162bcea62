"""What both HDFS backends share (:mod:`.hdfs_native`, :mod:`.hdfs_webhdfs`): the error they
raise, hdfs:// URL parsing against ``fs.defaultFS``, and the filesystem interface with its
listing, globbing and error mapping. Callers use :mod:`tfhadoop.connectors.hdfs`."""
from __future__ import annotations

import fnmatch
import re
from abc import ABC, abstractmethod
from urllib.parse import urlparse

from tfhadoop.errors import HdfsPermissionError, hdfs_error


class HdfsError(OSError):
    """HDFS could not be reached or refused an operation; the message names the NameNode."""


def _split(url: str):
    """(``hdfs://host:port``, ``/path``) of an hdfs URL; no authority means fs.defaultFS."""
    u = urlparse(url)
    if u.scheme != "hdfs":
        raise ValueError(f"not an hdfs:// URL: {url}")
    authority = u.netloc
    if not authority:
        default = _conf().default_fs
        d = urlparse(default)
        if d.scheme != "hdfs" or not d.netloc:
            raise HdfsError(f"{url} has no NameNode address and fs.defaultFS is {default!r}")
        authority = d.netloc
    return f"hdfs://{authority}", u.path or "/"


def _conf():
    from tfhadoop import hadoop

    return hadoop.load_conf()


def _unstrip(base: str, path: str) -> str:
    return base + (path if path.startswith("/") else "/" + path)


def _has_glob(path: str) -> bool:
    return any(c in path for c in "*?[")


def _visible(path: str) -> bool:
    return not path.rstrip("/").rsplit("/", 1)[-1].startswith((".", "_"))


class _HdfsFS(ABC):
    """What the reader/writer need from a filesystem; ``path`` arguments are full URLs."""

    name = "?"

    def __init__(self, base: str):
        self.base = base

    @abstractmethod
    def _status(self, path: str) -> bool | None:
        """Whether ``path`` is a directory; None when nothing is there."""

    @abstractmethod
    def _list(self, path: str) -> list[tuple[str, bool]]:
        """(name, is_dir) of each entry of the directory ``path``."""

    def _fail(self, what: str, path: str, exc: Exception) -> OSError:
        """``exc`` as the error to raise: FileNotFoundError, PermissionError or HdfsError."""
        if isinstance(exc, FileNotFoundError):
            return FileNotFoundError(f"{_unstrip(self.base, path)}: no such file")
        text = str(exc)
        # hdfs-native: RPCError("<Java class>", "<message>\n\tat <stack>..."): one line of it
        m = re.search(r'\("([\w.$]+(?:Exception|Error))", "((?:[^"\\]|\\.)*)', text)
        mapped = m and hdfs_error(m.group(1), m.group(2).replace("\\n", "\n").replace('\\"', '"'),
                                  f"HDFS {what} of {_unstrip(self.base, path)}")
        if mapped:
            return (PermissionError if isinstance(mapped, HdfsPermissionError) else HdfsError)(str(mapped))
        return HdfsError(f"HDFS {what} of {_unstrip(self.base, path)} failed via {self.name} ({self.base}): {text}")

    def expand(self, url: str, recursive: bool = True) -> list[str]:
        _, path = _split(url)
        if _has_glob(path):
            matches = self._glob(path)
        else:
            st = self._status(path)
            matches = [] if st is None else [(path, st)]
        files = []
        for p, is_dir in sorted(matches):
            if is_dir:
                files.extend(_unstrip(self.base, f) for f in sorted(self._files_under(p, recursive)))
            else:
                files.append(_unstrip(self.base, p))
        return files

    def _glob(self, pattern: str):
        """(path, is_dir) matching ``pattern`` component by component."""
        parts = [p for p in pattern.split("/") if p]
        found = [("/", True)]
        for part in parts:
            nxt = []
            for parent, is_dir in found:
                if not is_dir:
                    continue
                child_prefix = parent.rstrip("/") + "/"
                if not _has_glob(part):
                    st = self._status(child_prefix + part)
                    if st is not None:
                        nxt.append((child_prefix + part, st))
                    continue
                for name, d in self._list(parent):
                    if fnmatch.fnmatchcase(name, part):
                        nxt.append((child_prefix + name, d))
            found = nxt
        return found

    def _files_under(self, path: str, recursive: bool):
        out = []
        for name, is_dir in self._list(path):
            if not _visible(name):
                continue
            child = path.rstrip("/") + "/" + name
            if is_dir:
                if recursive:
                    out.extend(self._files_under(child, True))
            else:
                out.append(child)
        return out
