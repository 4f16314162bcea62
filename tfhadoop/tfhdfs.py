"""``hdfs://`` for TensorFlow: ``import tfhadoop.tfhdfs`` registers the tfhdfs filesystem plugin.

The plugin (``libtfhdfs.so`` next to this file, built from connectors/native/tfhdfs by ``make
native``) is a TensorFlow modular filesystem on the pure-Rust hdfs-native client: no JVM and no
libhdfs. After the import, ``tf.io.gfile``, ``tf.data.TFRecordDataset``, checkpoints, SavedModel
and summary writers accept ``hdfs://namenode:port/path`` and ``hdfs:///path`` (fs.defaultFS).

The cluster comes from ``HADOOP_CONF_DIR`` (read by the plugin when it first opens a path). Without
one, the running embedded cluster's configuration is used (:mod:`tfhadoop.hadoop` decides, at
import), so the plugin reaches the same cluster as the rest of tfhadoop.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

__all__ = ["LIBRARY", "register", "ride_out_outages"]

LIBRARY = Path(__file__).with_name("libtfhdfs.so")  # also asked by tfhadoop.tokens (ctypes)
CONF_DIR_ENV = "TFHADOOP_HDFS_CONF_DIR"  # read by the plugin (connectors/native/tfhdfs/src/hdfs.rs)
PATIENT_ENV = "TFHADOOP_HDFS_PATIENT"  # read by the plugin: "1" keeps hdfs-native's NameNode retries

_lock = threading.Lock()
_registered = False


def _point_at_cluster() -> None:
    """Name the embedded cluster's conf dir to the plugin when no HADOOP_CONF_DIR is set, in a
    variable of its own: setting HADOOP_CONF_DIR would make the process look like a real-cluster one."""
    if os.environ.get("HADOOP_CONF_DIR"):
        return
    from tfhadoop import hadoop
    from tfhadoop.errors import TfhadoopError

    try:
        os.environ[CONF_DIR_ENV] = str(hadoop.conf_dir())
    except TfhadoopError:
        pass  # no cluster known: hdfs://host:port/ URIs still work, hdfs:/// says what is missing


def ride_out_outages() -> None:
    """For the trainer's long-running roles, before their first ``hdfs://`` access: the plugin's
    NameNode calls keep hdfs-native's own retries (~165 s of backoff) instead of failing in a few
    seconds, so a NameNode restart stalls a worker's shard open instead of failing its closure
    (TensorFlow turns the Unavailable into an InternalError that the coordinator cannot re-queue)."""
    os.environ[PATIENT_ENV] = "1"


def register() -> None:
    """Load the plugin into TensorFlow once per process (later calls do nothing)."""
    global _registered
    with _lock:
        if _registered:
            return
        if not LIBRARY.exists():
            raise ImportError(
                f"tfhdfs plugin {LIBRARY} is missing: run `make native` (needs cargo) in the tfhadoop checkout"
            )
        import tensorflow as tf

        _point_at_cluster()
        try:
            tf.experimental.register_filesystem_plugin(str(LIBRARY))
        except tf.errors.AlreadyExistsError as exc:
            # Another loader (e.g. tensorflow-io) already owns hdfs://: say so instead of using it.
            raise ImportError(f"cannot register {LIBRARY}: hdfs:// is already registered in TensorFlow ({exc})") from exc
        _registered = True


register()
