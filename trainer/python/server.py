"""Start a TensorFlow gRPC server for a parameter server or worker and block.

A server binds the port of its own entry in the cluster spec (``ServerDef.port``); the role
checks first that the port can be bound (``port_is_free``) and takes another one if not. Thread
pools are kept small: containers share a few cores.
"""
from __future__ import annotations

import os

os.environ.setdefault("GRPC_FAIL_FAST", "use_caller")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")


def session_config(threads: int = 2):
    import tensorflow as tf

    config = tf.compat.v1.ConfigProto()
    config.inter_op_parallelism_threads = max(threads, 2)
    config.intra_op_parallelism_threads = max(threads // 2, 1)
    return config


def start(cluster: dict, job: str, index: int, port: int | None = None, threads: int = 2):
    """A started ``tf.distribute.Server`` for ``/job:{job}/task:{index}`` of ``cluster``."""
    import tensorflow as tf
    from tensorflow.core.protobuf import tensorflow_server_pb2

    spec = tf.train.ClusterSpec(cluster)
    server_def = tensorflow_server_pb2.ServerDef(
        cluster=spec.as_cluster_def(), job_name=job, task_index=index, protocol="grpc",
        default_session_config=session_config(threads))
    if port:
        server_def.port = port
    return tf.distribute.Server(server_def, start=True)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def port_is_free(port: int) -> bool:
    """Whether ``port`` can be bound here the way gRPC binds it: with SO_REUSEADDR, so closed
    connections of a lost server in TIME_WAIT do not count, a listening socket does."""
    import socket

    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("", port))
        except OSError:
            return False
    return True


if __name__ == "__main__":  # python -m tfhadoop.trainer.server '<cluster json>' job index [port]
    import json
    import sys

    cluster_json, job, index = sys.argv[1], sys.argv[2], int(sys.argv[3])
    port = int(sys.argv[4]) if len(sys.argv) > 4 else None
    server = start(json.loads(cluster_json), job, index, port)
    print(f"{job}:{index} serving on port {port or 'from spec'}", flush=True)
    server.join()
