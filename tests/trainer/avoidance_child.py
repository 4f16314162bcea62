"""Child process of test_preemption_warnings.py: WorkerAvoidance on TensorFlow's own
ClusterCoordinator (a ParameterServerStrategy connects the process's eager context to a cluster for
good, so it stays out of the pytest process). Two workers and a PS as ``tf.distribute.Server``s in
this process; with task 1 avoided, 40 closures are scheduled, then 40 more with none avoided. Each
closure adds 1 to a PS variable and returns the device string of the worker that ran it. Prints
one line ``RESULT <json>``."""
from __future__ import annotations

import json
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf

from tfhadoop.ports import free_ports
from tfhadoop.trainer.closures import WorkerAvoidance


def main() -> int:
    *workers, ps, chief = (f"localhost:{p}" for p in free_ports(4))
    cluster = {"worker": workers, "ps": [ps]}
    # Servers in one process share its thread pools: with fewer inter-op threads than workers + 1
    # the cluster hangs (as TensorFlow's own create_in_process_cluster says); 2 by default on 2 cores.
    config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=4)
    tf.config.threading.set_inter_op_parallelism_threads(4)
    servers = [tf.distribute.Server(tf.train.ClusterSpec(cluster), job_name=job, task_index=i, config=config,
                                    start=True)
               for job, n in (("worker", 2), ("ps", 1)) for i in range(n)]
    spec = tf.train.ClusterSpec({**cluster, "chief": [chief]})
    strategy = tf.distribute.experimental.ParameterServerStrategy(
        tf.distribute.cluster_resolver.SimpleClusterResolver(spec, rpc_layer="grpc"))
    avoidance = WorkerAvoidance(os.path.join(tempfile.mkdtemp(), "avoid.json"))  # as coordinator.run: first
    coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        v = tf.Variable(tf.constant(0, dtype=tf.int64))

    @tf.function
    def add():
        v.assign_add(1)
        return tf.constant(1, dtype=tf.int64)  # placed on the worker that runs the closure

    avoidance.set({1})
    first = [coordinator.schedule(add) for _ in range(40)]
    coordinator.join()
    during = dict(avoidance.dispatched)
    avoidance.set(set())
    second = [coordinator.schedule(add) for _ in range(40)]
    coordinator.join()
    result = {"installed": avoidance.installed, "during": {str(k): n for k, n in during.items()},
              "report": avoidance.report(), "value": int(v.read_value()),
              "fetched": sum(int(r.fetch()) for r in first + second),
              # the worker each closure ran on, as the per-worker throughput reads it
              "ran_on_first": sorted({avoidance.worker_of(r) for r in first}, key=str),
              "ran_on_second": sorted({avoidance.worker_of(r) for r in second}, key=str),
              "left": len(avoidance.taken)}
    print("RESULT " + json.dumps(result), flush=True)
    del servers
    sys.stdout.flush()
    os._exit(0)  # the coordinator's threads hold remote handles


if __name__ == "__main__":
    sys.exit(main())
