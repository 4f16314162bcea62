"""Opening TFRecord paths: local files, ``hdfs://`` (see :mod:`tfhadoop.connectors.hdfs`) and
any other URL fsspec knows (``s3://``, ``gs://``, ``memory://``...).

Everything returns plain binary streams with ``read(n)``/``write(b)``/``close()``; the reader and
writer do their own big buffering, so local files are opened unbuffered.
"""
from __future__ import annotations

import glob as _glob
import os
from urllib.parse import urlparse

_GLOB_CHARS = set("*?[")
INDEX_SUFFIX = ".idx"  # record index sidecars (tfhadoop.connectors.index)


def scheme(path: str) -> str:
    path = os.fspath(path)
    if "://" not in path:
        return ""
    return urlparse(path).scheme.lower()


def _local(path: str) -> str:
    return urlparse(path).path if path.startswith("file://") else path


def open_read(path: str):
    path = os.fspath(path)
    s = scheme(path)
    if s in ("", "file"):
        return open(_local(path), "rb", buffering=0)
    if s == "hdfs":
        from tfhadoop.connectors import hdfs

        return hdfs.filesystem(path).open_read(path)
    import fsspec

    fs, fs_path = fsspec.core.url_to_fs(path)
    return fs.open(fs_path, "rb")  # what fsspec.open(path, "rb").open() opens, without the OpenFile


def open_write(path: str, overwrite: bool = True):
    path = os.fspath(path)
    s = scheme(path)
    if s in ("", "file"):
        return open(_local(path), "wb" if overwrite else "xb")
    if s == "hdfs":
        from tfhadoop.connectors import hdfs

        return hdfs.filesystem(path).open_write(path, overwrite=overwrite)
    import fsspec

    fs, fs_path = fsspec.core.url_to_fs(path)
    return fs.open(fs_path, "wb")  # what fsspec.open(path, "wb").open() opens, without the OpenFile


def size(path: str) -> int | None:
    """Bytes in the file, or None where the filesystem cannot say cheaply."""
    path = os.fspath(path)
    s = scheme(path)
    if s in ("", "file"):
        return os.path.getsize(_local(path))
    if s == "hdfs":
        from tfhadoop.connectors import hdfs

        return hdfs.filesystem(path).size(path)
    try:
        import fsspec

        fs, p = fsspec.core.url_to_fs(path)
        return fs.size(p)
    except Exception:  # noqa: BLE001 - a size is only used for progress bars
        return None


def expand(paths, recursive: bool = True) -> list[str]:
    """Paths with globs expanded and directories replaced by the files in them (sorted; hidden
    and ``_``-prefixed files such as ``_SUCCESS``, and ``.idx`` record indexes, left out unless
    named explicitly). A pattern matching nothing raises FileNotFoundError, so a typo is never
    an empty success."""
    out: list[str] = []
    for path in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
        path = os.fspath(path)
        s = scheme(path)
        if s in ("", "file"):
            found = _expand_local(_local(path), recursive)
        elif s == "hdfs":
            from tfhadoop.connectors import hdfs

            found = hdfs.filesystem(path).expand(path, recursive)
        else:
            found = _expand_fsspec(path)
        explicit = not (_GLOB_CHARS & set(path)) and len(found) == 1 and found[0].endswith(path.rstrip("/").rsplit("/", 1)[-1])
        if not explicit:  # record indexes next to the data are not data
            found = [f for f in found if not f.endswith(INDEX_SUFFIX)]
        if not found:
            raise FileNotFoundError(f"no files match {path}")
        out.extend(found)
    return out


def _visible(name: str) -> bool:
    base = name.rstrip("/").rsplit("/", 1)[-1]
    return not base.startswith((".", "_"))


def _expand_local(path: str, recursive: bool) -> list[str]:
    matches = sorted(_glob.glob(path)) if _GLOB_CHARS & set(path) else ([path] if os.path.exists(path) else [])
    files = []
    for m in matches:
        if os.path.isdir(m):
            for root, dirs, names in os.walk(m):
                dirs[:] = sorted(d for d in dirs if _visible(d)) if recursive else []
                files.extend(os.path.join(root, n) for n in sorted(names) if _visible(n))
        else:
            files.append(m)
    return files


def _expand_fsspec(path: str) -> list[str]:
    import fsspec

    fs, p = fsspec.core.url_to_fs(path)
    matches = fs.glob(p) if _GLOB_CHARS & set(p) else ([p] if fs.exists(p) else [])
    files = []
    for m in sorted(matches):
        if fs.isdir(m):
            files.extend(f for f in sorted(fs.find(m)) if _visible(f))
        else:
            files.append(m)
    return [f if "://" in f else fs.unstrip_protocol(f) for f in files]
