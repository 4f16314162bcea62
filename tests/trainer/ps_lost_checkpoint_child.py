"""Child process of test_checkpoints.py: a parameter server (a real ``tf.distribute.Server`` in its
own process) is killed, then the coordinator's checkpoint save runs against its variables on HDFS.
Prints ``RESULT {json}``: the error raised, the retries made, the seconds it took, the state of
``latest`` afterwards. A child process: the ParameterServerStrategy context stays out of pytest."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("GRPC_FAIL_FAST", "use_caller")


def _listening(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    with socket.socket() as s:
        return s.connect_ex((host, int(port))) == 0


def main(url: str) -> None:
    from tfhadoop.ports import free_ports

    worker, ps, chief = (f"localhost:{p}" for p in free_ports(3))
    cluster = {"worker": [worker], "ps": [ps]}
    servers = {job: subprocess.Popen([sys.executable, "-m", "tfhadoop.trainer.server", json.dumps(cluster), job, "0"])
               for job in cluster}
    try:
        deadline = time.monotonic() + 120
        while not all(_listening(a[0]) for a in cluster.values()):
            assert time.monotonic() < deadline, "the PS and worker servers did not start"
            time.sleep(0.2)
        import tensorflow as tf

        import tfhadoop.tfhdfs  # noqa: F401 - TensorFlow writes hdfs:// itself
        from tfhadoop.connectors import hdfs
        from tfhadoop.trainer.checkpoints import HdfsCheckpoints, variables_task

        spec = tf.train.ClusterSpec({**cluster, "chief": [chief]})
        strategy = tf.distribute.experimental.ParameterServerStrategy(
            tf.distribute.cluster_resolver.SimpleClusterResolver(spec, rpc_layer="grpc"))
        tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
        with strategy.scope():
            v = tf.Variable(tf.ones([1000]))
        store = HdfsCheckpoints(tf.train.Checkpoint(v=v), url, device=variables_task([v]))  # as the coordinator saves
        store.save_waiting({"steps": 1})
        servers["ps"].kill()
        servers["ps"].wait()
        retries: list = []

        def on_retry(attempt, exc, delay):
            retries.append(f"{type(exc).__name__}: {str(exc)[:200]}")
            if attempt >= 2:  # waited twice: enough to show it is taken for an HDFS outage
                raise RuntimeError("still retrying")

        t0 = time.monotonic()
        try:
            store.save_waiting({"steps": 2}, on_retry)
            error = None
        except Exception as exc:  # noqa: BLE001 - what was raised is the result
            error = type(exc).__name__
        result = {"error": error, "retries": retries, "seconds": round(time.monotonic() - t0, 1),
                  "latest": json.loads(hdfs.read_bytes(f"{url}/latest/state.json"))}
        print("RESULT " + json.dumps(result), flush=True)
    finally:
        for proc in servers.values():
            proc.kill()
    os._exit(0)  # TF's teardown with a dead PS can hang


if __name__ == "__main__":
    main(sys.argv[1])
