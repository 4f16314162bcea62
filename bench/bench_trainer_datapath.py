"""Measurements behind docs/design/trainer.md, on local processes (1 PS + 2 workers + this
process as coordinator): examples/s of closures that read local shard files vs closures fed
with batches by the coordinator, and how long a replacement worker that binds the lost worker's
port takes from process start to its first completed closure.

    .venv/bin/python bench/bench_trainer_datapath.py [--records 20000] [--task-records 500]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("GRPC_FAIL_FAST", "use_caller")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

from tfhadoop.connectors.example import encode_example
from tfhadoop.connectors.tfrecord import write_records
from tfhadoop.ports import free_ports

SPEC = {"features": {"x": {"type": "FixedLenFeature", "shape": [8], "dtype": "float32"},
                     "y": {"type": "FixedLenFeature", "shape": [], "dtype": "float32"}}}


def write_shards(folder, records, shards):
    rng = np.random.default_rng(0)
    w = rng.normal(size=8)
    paths, per = [], records // shards
    for i in range(shards):
        x = rng.normal(size=(per, 8)).astype(np.float32)
        y = x @ w + 0.1 * rng.normal(size=per)
        path = os.path.join(folder, f"part-{i:05d}-of-{shards:05d}.tfrecord")
        write_records(path, (encode_example({"x": list(map(float, xi)), "y": [float(yi)]}) for xi, yi in zip(x, y)))
        paths.append((path, per))
    return paths


def launch(cluster, job, index, port=None):
    args = [sys.executable, "-m", "tfhadoop.trainer.server", json.dumps(cluster), job, str(index)]
    if port:
        args.append(str(port))
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main():
    import faulthandler
    faulthandler.dump_traceback_later(float(os.environ.get("BENCH_DUMP_AFTER", "1e9")))
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--task-records", type=int, default=500)
    ap.add_argument("--batch", type=int, default=64)
    opts = ap.parse_args()

    import tensorflow as tf
    import tf_keras

    from tfhadoop.trainer.step import build_task_fn, parse_fn
    from tfhadoop.trainer.tasks import Task

    tmp = tempfile.mkdtemp(prefix="bench-trainer-")
    shards = write_shards(tmp, opts.records, opts.shards)
    tasks = [(p, s, min(opts.task_records, n - s)) for p, n in shards for s in range(0, n, opts.task_records)]

    ps_port, *worker_ports, chief_port = free_ports(4)
    cluster = {"ps": [f"127.0.0.1:{ps_port}"], "worker": [f"127.0.0.1:{p}" for p in worker_ports],
               "chief": [f"127.0.0.1:{chief_port}"]}
    procs = [launch(cluster, "ps", 0)]
    for i in range(2):
        procs.append(launch(cluster, "worker", i))
    time.sleep(float(os.environ.get("BENCH_SERVER_WAIT", "30")))  # TF import in the servers

    os.environ["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": "chief", "index": 0}})
    tf.config.threading.set_inter_op_parallelism_threads(4)
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
    coord = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        model = tf_keras.Sequential([tf_keras.Input((8,)), tf_keras.layers.Dense(16, activation="relu"),
                                     tf_keras.layers.Dense(1)])
        model.compile(optimizer=tf_keras.optimizers.SGD(0.01), loss="mse")
        model.optimizer.build(model.trainable_variables)
    task_fn = build_task_fn(strategy, model, SPEC, "y", opts.batch, None)

    def run_epoch():
        t0 = time.perf_counter()
        results = [task_fn.schedule(coord, [Task(i, p, s, c)])  # offset 0: skip from the start
                   for i, (p, s, c) in enumerate(tasks)]
        coord.join()
        n = sum(int(sum(r.fetch()[0])) for r in results)
        return n, time.perf_counter() - t0

    run_epoch()  # warm up (tracing, connections)
    n, dt = run_epoch()
    out = {"closures_local_files": {"examples": n, "seconds": round(dt, 2), "examples_per_s": round(n / dt)}}
    print(json.dumps(out), flush=True)

    # Coordinator-fed: the coordinator reads the records and ships each task's batch of
    # serialized Examples as a closure argument.
    parse = parse_fn(SPEC, "y")

    @tf.function
    def fed_task(serialized):
        ds = tf.data.Dataset.from_tensor_slices(serialized).batch(opts.batch).map(parse)
        n = tf.constant(0, tf.int64)
        for features, y in ds:
            n += strategy.run(fed_step, args=(features, y))
        return n

    def fed_step(features, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf_keras.losses.mse(tf.reshape(y, (-1, 1)), model(features["x"], training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        model.optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return tf.cast(tf.shape(y)[0], tf.int64)

    from tfhadoop.connectors.tfrecord import read_records
    t0 = time.perf_counter()
    results = []
    for p, s, c in tasks:
        recs = [r for i, r in enumerate(read_records([p])) if s <= i < s + c]
        results.append(coord.schedule(fed_task, args=(tf.constant(recs),)))
    coord.join()
    n = sum(int(r.fetch()) for r in results)
    dt = time.perf_counter() - t0
    out["coordinator_fed"] = {"examples": n, "seconds": round(dt, 2), "examples_per_s": round(n / dt)}
    print(json.dumps(out), flush=True)

    # Rejoin at the same port: kill worker 1 while worker 0 keeps training, start a replacement
    # at worker 1's port, time from its process start to the coordinator's "recovered" (its next
    # closure runs right after). TF re-establishes the cluster only once EVERY worker is back
    # (update_server_def over the whole spec), so one worker is lost at a time here.
    import logging
    recovered = {}

    class Catch(logging.Handler):
        def emit(self, record):
            if "task:1 has been recovered" in record.getMessage():
                recovered.setdefault("t", time.perf_counter())

    logging.getLogger("tensorflow").addHandler(Catch())
    logging.getLogger("tensorflow").setLevel(logging.INFO)
    procs[2].kill()
    procs[2].wait()
    results = [task_fn.schedule(coord, [Task(i, p, s, c)]) for i, (p, s, c) in enumerate(tasks)]
    time.sleep(3)
    t_start = time.perf_counter()
    procs[2] = launch(cluster, "worker", 1)
    coord.join()
    t_end = time.perf_counter()
    done = sum(int(sum(r.fetch()[0])) for r in results)
    out["rejoin_same_port"] = {"replacement_start_to_recovered_s": round(recovered["t"] - t_start, 2) if recovered else None,
                               "epoch_seconds_with_loss": round(t_end - t_start + 3, 2),
                               "examples": done, "expected": sum(c for _, _, c in tasks)}
    print(json.dumps(out, indent=1), flush=True)
    for p in procs:
        p.kill()
    os._exit(0)


def _kill_children_on_timeout():
    """faulthandler's exit skips cleanup: make the servers die with us."""
    import signal
    os.setpgrp()
    signal.signal(signal.SIGTERM, lambda *a: os.killpg(0, signal.SIGKILL))


if __name__ == "__main__":
    _kill_children_on_timeout()
    main()
