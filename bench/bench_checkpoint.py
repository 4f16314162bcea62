"""The trainer's durable checkpoint (issue 32 §2): seconds per ``HdfsCheckpoints.save`` of the
issue's model (MLP 20 -> 64 -> 64 -> 1, Adam) under ParameterServerStrategy with 1 PS and 2
workers, and where they go (TensorFlow's write, each NameNode call of the save, one small-file
close through each client). Three fresh embedded clusters in one run: 1 DataNode (the cluster
before issue 32), 2 DataNodes with replication 2, and that with the NameNode's
``dfs.namenode.file.close.num-committed-allowed`` 1 (the cluster now); on each, the save as the
trainer made it before (object graph on the coordinator: two shards) and now (on the PS).

    .venv/bin/python -m bench.bench_checkpoint [--saves 10] [--json /tmp/bench_checkpoint.json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench.common import ROOT, log

FEATURES, HIDDEN = 20, 64
# (DataNodes = replication, num-committed-allowed): the embedded cluster before issue 32, the
# replication alone, and the embedded cluster now
CONFIGS = {"before": (1, 0), "replication 2": (2, 0), "after": (2, 1)}
LEDGER_TASKS = 200
MODES = ("two shards", "on the PS")  # the trainer's save before issue 32, and now  # tasks in the state's ledger: the order of an epoch of the job


class Timed:
    """Stands in for ``tfhadoop.connectors.hdfs`` inside ``checkpoints``: every call is timed."""

    def __init__(self, module):
        self.module, self.calls = module, []

    def __getattr__(self, name):
        fn = getattr(self.module, name)

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.calls.append((name, time.perf_counter() - t0))
        return timed


def model(strategy):
    import tf_keras

    with strategy.scope():
        m = tf_keras.Sequential([tf_keras.Input((FEATURES,)), tf_keras.layers.Dense(HIDDEN, activation="relu"),
                                 tf_keras.layers.Dense(HIDDEN, activation="relu"), tf_keras.layers.Dense(1)])
        m.compile(optimizer=tf_keras.optimizers.Adam(1e-3), loss="mse")
        m.optimizer.build(m.trainable_variables)  # the slots a trained model's checkpoint holds
    return m


def small_closes(base: str, n: int) -> dict:
    """Median seconds to write and close a 100-byte file through TensorFlow (tfhdfs) and through
    the Python client (hdfs-native): one NameNode ``complete`` each."""
    import tensorflow as tf

    from tfhadoop.connectors import hdfs

    tf_s, py_s = [], []
    tf.io.gfile.makedirs(base)
    for i in range(n):
        t0 = time.perf_counter()
        with tf.io.gfile.GFile(f"{base}/tf-{i}", "wb") as f:
            f.write(b"x" * 100)
        tf_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        hdfs.write_bytes(f"{base}/py-{i}", b"x" * 100)
        py_s.append(time.perf_counter() - t0)
    return {"tf_close_s": statistics.median(tf_s), "python_close_s": statistics.median(py_s)}


def timed_saves(saver, saves: int, base: str) -> dict:
    """``saves`` saves of a state with a ledger of ``LEDGER_TASKS`` tasks, each timed: in total,
    TensorFlow's write, and every call ``checkpoints`` makes to ``hdfs``."""
    from tfhadoop.connectors import hdfs
    from tfhadoop.trainer import checkpoints

    timed = Timed(hdfs)
    checkpoints.hdfs = timed  # type: ignore[assignment]
    state = {"epoch": 1, "steps": 3000, "history": [],
             "ledger": {"done": [[f"part-{i:05d}", i * 1000, 1000] for i in range(LEDGER_TASKS)]}}
    write, total, per_call = [], [], []
    real_write = saver.ckpt.write

    def ckpt_write(path):
        t0 = time.perf_counter()
        try:
            return real_write(path)
        finally:
            write.append(time.perf_counter() - t0)
    saver.ckpt.write = ckpt_write
    try:
        for _ in range(saves):
            timed.calls.clear()
            state["steps"] += 1
            t0 = time.perf_counter()
            saver.save(state)
            total.append(time.perf_counter() - t0)
            per_call.append(list(timed.calls))
    finally:
        checkpoints.hdfs = hdfs
        saver.ckpt.write = real_write
    hdfs.delete(base)
    later = slice(1, None)  # the first save also builds TensorFlow's save function
    calls: dict = {}
    for run in per_call[later]:
        for name, secs in run:
            calls.setdefault(name, []).append(secs)
    return {"save_s": total, "median_save_s": statistics.median(total[later]),
            "median_tf_write_s": statistics.median(write[later]),
            "calls": {k: {"per_save": len(v) / len(per_call[later]), "median_s": statistics.median(v),
                          "max_s": max(v)} for k, v in calls.items()}}


def measure(saves: int) -> dict:
    """In a process pointed at the running cluster: small closes, then the saves as the trainer
    made them before issue 32 (object graph on this process: two shards) and now (the whole save
    on the PS holding the variables)."""
    import tensorflow as tf

    import tfhadoop.tfhdfs  # noqa: F401 - hdfs:// for TensorFlow in this process
    from bench.bench_trainer_peers import pss_cluster
    from tfhadoop.trainer import checkpoints

    cluster, procs = pss_cluster(2)
    os.environ["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": "chief", "index": 0}})
    try:
        strategy = tf.distribute.experimental.ParameterServerStrategy(
            tf.distribute.cluster_resolver.TFConfigClusterResolver())
        m = model(strategy)
        base = f"hdfs:///tmp/bench-checkpoint-{os.getpid()}"
        out = small_closes(f"{base}/closes", 5)
        for mode, device in (("two shards", None), ("on the PS", checkpoints.variables_task(m.variables))):
            saver = checkpoints.HdfsCheckpoints(tf.train.Checkpoint(model=m, optimizer=m.optimizer),
                                                f"{base}/{len(out)}", device=device)
            out[mode] = timed_saves(saver, saves, f"{base}/{len(out)}")
        return out
    finally:
        os.environ.pop("TF_CONFIG", None)
        for p in procs:
            p.kill()
            p.wait(timeout=30)


def one_cluster(datanodes: int, committed_allowed: int, saves: int) -> dict:
    """A fresh embedded cluster with the settings, the saves measured in a child process, down."""
    from tfhadoop.yarn.embedded import ClusterOptions, EmbeddedCluster

    cluster = EmbeddedCluster(tempfile.mkdtemp(prefix="tfhadoop-bench-ckpt-"))
    t0 = time.time()
    cluster.up(ClusterOptions(node_managers=1, datanodes=datanodes, close_committed_allowed=committed_allowed))
    log(f"cluster with {datanodes} DataNode(s), num-committed-allowed={committed_allowed} up in {time.time() - t0:.0f} s")
    try:
        from tfhadoop import hadoop

        env = {**os.environ}
        env.update(hadoop.client_env(cluster.state_dir))
        env[hadoop.STATE_DIR_ENV] = str(cluster.state_dir)
        out = subprocess.run([sys.executable, "-m", "bench.bench_checkpoint", "--child", "--saves", str(saves)],
                             cwd=ROOT, env=env, capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(f"measuring child failed: {out.stderr[-3000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        cluster.down()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--saves", type=int, default=10)
    ap.add_argument("--json")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(args.saves)))
        return
    rows = {label: one_cluster(*CONFIGS[label], args.saves) for label in CONFIGS}
    for label, r in rows.items():
        datanodes, n = CONFIGS[label]
        print(f"{datanodes} DataNode(s), num-committed-allowed={n} ({label}): a 100-byte file's close "
              f"TF {r['tf_close_s']:.3f} s, Python {r['python_close_s']:.3f} s")
        for mode in MODES:
            m = r[mode]
            print(f"  save, {mode}: median {m['median_save_s']:.3f} s (TF write {m['median_tf_write_s']:.3f} s) "
                  f"over {len(m['save_s']) - 1} saves after the first")
            for name, c in sorted(m["calls"].items()):
                print(f"    hdfs.{name}: {c['per_save']:.1f} per save, median {c['median_s'] * 1000:.1f} ms, "
                      f"max {c['max_s'] * 1000:.1f} ms")
    before, after = rows["before"][MODES[0]]["median_save_s"], rows["after"][MODES[1]]["median_save_s"]
    print(f"save before issue 32 (1 DataNode, two shards) {before:.3f} s; now (2 DataNodes, "
          f"num-committed-allowed=1, on the PS) {after:.3f} s: {after / before:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
