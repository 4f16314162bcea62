"""The hdfs-native backend of :mod:`tfhadoop.connectors.hdfs` (the NameNode and DataNode RPC
protocols in Rust, no JVM): the default for records and the only one for job files. Its reader
waits for a closed file's last block (:func:`open_whole`); a container dials the NameNode by the
address its delegation token names (:func:`_dial_url`)."""
from __future__ import annotations

import time

from tfhadoop.connectors.hdfs_base import HdfsError, _conf, _HdfsFS, _split

_FAST_FAIL = {"dfs.client.failover.max.attempts": "0"}


class NativeFS(_HdfsFS):
    """hdfs-native: the NameNode/DataNode RPC protocols in Rust, no JVM."""

    name = "hdfs-native"

    def __init__(self, base: str, config: dict | None = None, patient: bool = False):
        import hdfs_native

        super().__init__(base)
        cfg = {} if patient else dict(_FAST_FAIL)
        try:
            props = _conf().props
            cfg.update({k: v for k, v in props.items() if k.startswith(("dfs.", "fs.", "hadoop.", "ipc."))})
        except Exception:  # noqa: BLE001 - no local conf: the URL alone is enough
            pass
        cfg.update(config or {})
        self._client = hdfs_native.Client(_dial_url(base), config=cfg)
        self._options = hdfs_native.WriteOptions

    def _call(self, what, path, fn, *args):
        try:
            return fn(*args)
        except FileNotFoundError:
            raise
        except Exception as exc:  # noqa: BLE001 - hdfs-native raises plain RuntimeError/OSError
            raise self._fail(what, path, exc) from None

    def open_read(self, url: str):
        _, path = _split(url)
        try:
            return open_whole(self._client, path, url)
        except FileNotFoundError:
            raise FileNotFoundError(f"{url}: no such file") from None
        except Exception as exc:  # noqa: BLE001
            raise self._fail("read", path, exc) from None

    def open_write(self, url: str, overwrite: bool = True):
        _, path = _split(url)
        opts = self._options(overwrite=overwrite, create_parent=True)
        return self._call("write", path, self._client.create, path, opts)

    def size(self, url: str) -> int:
        _, path = _split(url)
        return self._call("stat", path, self._client.get_file_info, path).length

    def _status(self, path: str):
        try:
            return self._client.get_file_info(path).isdir
        except FileNotFoundError:
            return None
        except Exception as exc:  # noqa: BLE001
            raise self._fail("stat", path, exc) from None

    def _list(self, path: str):
        entries = self._call("list", path, lambda: list(self._client.list_status(path, False)))
        return [(e.path.rstrip("/").rsplit("/", 1)[-1], e.isdir) for e in entries]

    def delete(self, url: str, recursive: bool = False) -> bool:
        _, path = _split(url)
        return self._call("delete", path, self._client.delete, path, recursive)

    def check(self) -> None:
        self._status("/")


LAST_BLOCK_WAIT_S = 30.0  # how long a reader waits for a closed file's last block (open_whole)


def open_whole(client, path: str, url: str):
    """hdfs-native's reader of ``path`` over the whole length the NameNode lists for it.

    Where the NameNode lets a writer close while its last block is only COMMITTED
    (``dfs.namenode.file.close.num-committed-allowed``, HDFS-8999: the embedded cluster sets it),
    the block locations leave that block out of the file's length until a DataNode reports it,
    milliseconds later; a reader opened in between reads a shorter, often empty, file and no
    error (seen: 5 of 300 reads right after a close). Like Hadoop's own client, wait for the
    report and open again; rather than return bytes the file does not hold, fail naming it."""
    deadline = time.monotonic() + LAST_BLOCK_WAIT_S
    delay = 0.01
    while True:
        listed = client.get_file_info(path).length
        reader = client.read(path)
        readable = len(reader)
        if readable >= listed:
            return reader
        reader.close()
        if time.monotonic() >= deadline:
            raise HdfsError(f"{url}: the NameNode lists {listed} bytes but only {readable} are readable: "
                            f"no DataNode has reported its last block after {LAST_BLOCK_WAIT_S:.0f} s, or the "
                            "file is open: a writer that died holds it until HDFS recovers its lease")
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def _dial_url(base: str) -> str:
    """``base``, or ``hdfs://ip:port`` in a container whose delegation token names the NameNode by
    IP (hdfs-native picks the token whose service equals the address it dials)."""
    from tfhadoop import tokens

    authority = base.split("://", 1)[-1].split("/", 1)[0]
    dial = tokens.dial_address(authority) if authority else None
    return f"hdfs://{dial}" if dial else base
