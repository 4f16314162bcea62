"""Small files of a job on HDFS (event log, state, metrics) and the NameNode operations around
what TensorFlow writes itself over hdfs:// (tfhdfs plugin): renames that make a checkpoint or the
SavedModel visible whole, deletes, listings. Over hdfs-native (RPC)."""
from __future__ import annotations

import os
import time
import uuid
from urllib.parse import urlparse

from hdfs_native import Client

_CLIENTS: dict = {}


def _client(url: str) -> tuple[Client, str]:
    parsed = urlparse(url)
    if parsed.scheme != "hdfs":
        raise ValueError(f"not an hdfs:// URL: {url}")
    base = f"hdfs://{parsed.netloc}" if parsed.netloc else None
    key = base or "default"
    if key not in _CLIENTS:
        _CLIENTS[key] = Client(base) if base else Client()
    return _CLIENTS[key], parsed.path


def exists(url: str) -> bool:
    client, path = _client(url)
    try:
        client.get_file_info(path)
        return True
    except FileNotFoundError:
        return False


def write_bytes(url: str, data: bytes) -> None:
    """Replace the file at ``url`` (written to a temporary name, then renamed over)."""
    client, path = _client(url)
    client.mkdirs(os.path.dirname(path), create_parent=True)
    tmp = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
    with client.create(tmp) as f:
        f.write(data)
    client.rename(tmp, path, overwrite=True)


def append_bytes(url: str, data: bytes) -> None:
    """Append ``data`` to the file at ``url``, creating it (and its folder) if missing: an
    append-only log costs one small write per entry, not a rewrite of the whole file."""
    client, path = _client(url)
    try:
        writer = client.append(path)
    except FileNotFoundError:
        client.mkdirs(os.path.dirname(path), create_parent=True)
        writer = client.create(path)
    with writer as f:
        f.write(data)


def read_bytes(url: str) -> bytes:
    client, path = _client(url)
    with client.read(path) as f:
        return f.read()


def upload_dir(local: str, url: str) -> None:
    """Copy the tree ``local`` to ``url`` (which must not exist)."""
    client, path = _client(url)
    client.mkdirs(path, create_parent=True)
    for folder, _, files in os.walk(local):
        rel = os.path.relpath(folder, local)
        target = path if rel == "." else f"{path}/{rel}"
        client.mkdirs(target, create_parent=True)
        for name in files:
            with open(os.path.join(folder, name), "rb") as src, client.create(f"{target}/{name}") as dst:
                while chunk := src.read(1 << 22):
                    dst.write(chunk)


def download_dir(url: str, local: str) -> None:
    client, path = _client(url)
    for status in client.list_status(path):
        name = status.path.rsplit("/", 1)[-1]
        dest = os.path.join(local, name)
        if status.isdir:
            os.makedirs(dest, exist_ok=True)
            download_dir(f"{url.rstrip('/')}/{name}", dest)
        else:
            os.makedirs(local, exist_ok=True)
            with client.read(f"{path}/{name}") as src, open(dest, "wb") as dst:
                dst.write(src.read())


def publish(write, url: str) -> None:
    """``write(staged_url)`` (e.g. TensorFlow saving a SavedModel over hdfs://) next to ``url``
    under a temporary name, then one rename to ``url``: readers see no SavedModel or a complete
    one. Refuses to replace an existing ``url``; a failed write leaves no staged directory."""
    client, path = _client(url)
    if exists(url):
        raise FileExistsError(f"{url} exists already: the export is not overwritten")
    tmp_url = f"{url.rstrip('/')}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        write(tmp_url)
        client.rename(_client(tmp_url)[1], path)
    except BaseException:
        delete(tmp_url)
        raise


def delete(url: str) -> None:
    """Remove ``url`` (recursively) if it exists."""
    client, path = _client(url)
    if exists(url):
        client.delete(path, True)


def rename(src: str, dst: str) -> None:
    client, path = _client(src)
    client.rename(path, _client(dst)[1])


def list_names(url: str) -> list[str]:
    """Names of the entries of the directory ``url`` (empty if it does not exist)."""
    client, path = _client(url)
    try:
        return [s.path.rstrip("/").rsplit("/", 1)[-1] for s in client.list_status(path)]
    except FileNotFoundError:
        return []


RETRY_BUDGET_S = 120  # how long an HDFS outage (NameNode restart, safe mode) is waited out
RETRY_MAX_DELAY_S = 10


def retry(fn, what: str, on_retry=None, budget_s: float = RETRY_BUDGET_S, sleep=time.sleep, clock=time.monotonic):
    """``fn()``, tried again after 1, 2, 4, ... (at most ``RETRY_MAX_DELAY_S``) s while it raises,
    for up to ``budget_s`` s: a NameNode in safe mode or restarting refuses writes for seconds to
    minutes, and a job should wait that out rather than fail. ``on_retry(attempt, exc, delay)``
    is told each time; the last error is raised once the budget is spent. Only for operations
    that may be repeated whole (a checkpoint save finishes or redoes what a failed one left)."""
    t0, attempt = clock(), 0
    while True:
        try:
            return fn()
        except Exception as exc:
            attempt += 1
            delay = min(2 ** (attempt - 1), RETRY_MAX_DELAY_S)
            if clock() - t0 + delay > budget_s:
                raise
            print(f"{what}: HDFS error ({type(exc).__name__}: {str(exc)[:300]}); retry {attempt} in {delay} s",
                  flush=True)
            if on_retry is not None:
                on_retry(attempt, exc, delay)
            sleep(delay)
