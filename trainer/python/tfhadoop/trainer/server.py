"""Start a TensorFlow gRPC server for a parameter server or worker and block.

A server binds the port of its own entry in the cluster spec (``ServerDef.port``); the role
checks first that the port can be bound (``tfhadoop.ports.port_is_free``) and takes another one if not. Thread
pools are kept small: containers share a few cores.
"""
from __future__ import annotations

import sys

from tfhadoop.trainer import protocol

# What TensorFlow's own ``import`` loads eagerly for Keras (tensorflow/__init__.py: "Do an eager
# load for Keras' code", inside ``except ImportError``): tf_keras's with TF_USE_LEGACY_KERAS (the
# trainer's environment), Keras 3's without; either loads all of that Keras, and pandas with it.
_KERAS_EAGER_LOADS = ("tf_keras.src.optimizers", "keras.src.optimizers")


def import_tensorflow() -> None:
    """Import TensorFlow without the Keras it loads eagerly: a parameter server or PS-mode worker
    only serves the graphs the coordinator sends it, and never runs Keras' Python. That load is
    ~0.8 of ~3.4 CPU-s of the import (2026-11-28), paid by every server container at job start
    and by each replacement while training waits for it. ``None`` entries in ``sys.modules``
    make that import fail fast (TensorFlow catches the ImportError); they are removed after, so a
    later ``import tf_keras`` in this process works as usual."""
    if "tensorflow" in sys.modules:  # Keras is loaded already, or its loading is past
        return
    protocol.tf_environment()
    sys.modules.update(dict.fromkeys(_KERAS_EAGER_LOADS))  # type: ignore[arg-type]
    try:
        import tensorflow  # noqa: F401
    finally:
        for name in _KERAS_EAGER_LOADS:
            sys.modules.pop(name, None)


def session_config(threads: int = 2):
    protocol.tf_environment()
    import tensorflow as tf

    config = tf.compat.v1.ConfigProto()
    config.inter_op_parallelism_threads = max(threads, 2)
    config.intra_op_parallelism_threads = max(threads // 2, 1)
    return config


def start(cluster: dict, job: str, index: int, port: int | None = None, threads: int = 2):
    """A started ``tf.distribute.Server`` for ``/job:{job}/task:{index}`` of ``cluster``."""
    protocol.tf_environment()
    import tensorflow as tf
    from tensorflow.core.protobuf import tensorflow_server_pb2

    spec = tf.train.ClusterSpec(cluster)
    server_def = tensorflow_server_pb2.ServerDef(
        cluster=spec.as_cluster_def(), job_name=job, task_index=index, protocol="grpc",
        default_session_config=session_config(threads))
    if port:
        server_def.port = port
    return tf.distribute.Server(server_def, start=True)


def in_process_ps_cluster():
    """One worker and one PS as ``tf.distribute.Server``s in this process and a ParameterServerStrategy
    with its ClusterCoordinator over them: the trainer's own task function run without YARN, by
    tests (parity with model.fit, tracing) and benchmarks (closure cost). Returns
    ``(strategy, coordinator, servers)``; the caller keeps ``servers`` referenced while it trains."""
    protocol.tf_environment()
    import tensorflow as tf

    from tfhadoop.ports import free_ports

    worker, ps, chief = (f"localhost:{p}" for p in free_ports(3))
    cluster = {"worker": [worker], "ps": [ps]}
    servers = [tf.distribute.Server(tf.train.ClusterSpec(cluster), job_name=job, task_index=0, start=True)
               for job in ("worker", "ps")]
    spec = tf.train.ClusterSpec({**cluster, "chief": [chief]})
    strategy = tf.distribute.experimental.ParameterServerStrategy(
        tf.distribute.cluster_resolver.SimpleClusterResolver(spec, rpc_layer="grpc"))
    return strategy, tf.distribute.experimental.coordinator.ClusterCoordinator(strategy), servers


def main(argv=None) -> int:
    """``python -m tfhadoop.trainer.server CLUSTER_JSON JOB INDEX [PORT]``: one PS or worker of a
    ParameterServerStrategy cluster outside YARN, serving until killed (the benchmarks' servers)."""
    import json
    import sys

    protocol.tf_environment()
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (3, 4):
        print("usage: python -m tfhadoop.trainer.server CLUSTER_JSON JOB INDEX [PORT]", file=sys.stderr)
        return 2
    import tfhadoop.tfhdfs  # noqa: F401 - like a container's server: its own ops read and write hdfs://
    # (a PS runs the SaveV2 of its variables itself)

    start(json.loads(args[0]), args[1], int(args[2]), int(args[3]) if len(args) == 4 else None).join()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
