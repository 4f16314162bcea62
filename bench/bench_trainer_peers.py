"""`tfhadoop train` against what a user would run instead, same data and model, one run:

(a) tf-keras ``model.fit`` in one process on local files;
(b) tf-keras ``model.fit`` under ``ParameterServerStrategy``, 1 PS + N worker processes on this
    machine (the standard TF way without YARN), local files, each worker reading its shards
    (``DatasetCreator`` + ``InputContext`` sharding), ``steps_per_execution`` as tuned below;
(c) ``tfhadoop train`` with 1 PS + N workers on the embedded YARN cluster reading ``hdfs://``;
(d) tf-keras ``model.fit`` under ``MultiWorkerMirroredStrategy``, N worker processes on this
    machine, each reading its shards (``DatasetCreator``), the same batch per worker, at
    ``steps_per_execution`` 1 and the tuned value (the better counts);
(e) ``tfhadoop train --strategy allreduce`` with N workers on the embedded YARN cluster.

Each is a fresh process (or application): wall time includes start-up (imports, servers,
containers); steady examples/s are measured over the epochs after the first. Prints (c)/(b) and
(e)/(d): issue 32's two trainer ratios.

    .venv/bin/python -m bench.bench_trainer_peers [--records 200000] [--epochs 3] [--workers 1,2,4]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid

from bench import job_models
from bench.common import JOB_MODELS_DIR, ROOT, bench_cluster, metrics, progress, run_train, tf_env

tf_env()
FEATURES = job_models.FEATURES
SPEC = {"features": {"x": {"type": "FixedLenFeature", "shape": [FEATURES], "dtype": "float32"},
                     "y": {"type": "FixedLenFeature", "shape": [], "dtype": "float32"}}}


def chosen_model():
    """(a), (b): ``BENCH_MODEL=wide_model`` picks the wide one of bench/job_models.py."""
    return getattr(job_models, os.environ.get("BENCH_MODEL", "model"))()


def write_dataset(folder: str, records: int, shards: int) -> dict:
    """Uncompressed shards with their index sidecars + the manifest, as `tfhadoop export` writes."""
    import numpy as np

    from tfhadoop.connectors.dataset import MANIFEST, dumps, manifest_doc
    from tfhadoop.connectors.example import encode_example
    from tfhadoop.connectors.splits import build_boundary_index
    from tfhadoop.connectors.tfrecord import write_records

    rng = np.random.default_rng(0)
    w = rng.normal(size=FEATURES)
    per, files = records // shards, []
    for i in range(shards):
        x = rng.normal(size=(per, FEATURES)).astype(np.float32)
        y = np.tanh(x @ w / 4) + 0.05 * rng.normal(size=per)
        name = f"part-{i:05d}-of-{shards:05d}.tfrecord"
        write_records(os.path.join(folder, name),
                      (encode_example({"x": list(map(float, xi)), "y": [float(yi)]}) for xi, yi in zip(x, y)))
        build_boundary_index(os.path.join(folder, name))  # the sidecar the export writes: tasks start at an offset
        files.append({"path": name, "records": per, "bytes": os.path.getsize(os.path.join(folder, name)),
                      "split": "train"})
    manifest = manifest_doc("Example", "none", files, splits={"train": {"records": per * shards}}, schema={},
                                    parse_spec=SPEC, source={}, created="bench")
    with open(os.path.join(folder, MANIFEST), "w") as f:
        f.write(dumps(manifest))
    return manifest


def dataset(files, batch: int):
    import tensorflow as tf

    from tfhadoop.trainer.step import parse_fn

    parse = parse_fn(SPEC, "y")
    return (tf.data.TFRecordDataset(files).batch(batch).map(parse, num_parallel_calls=tf.data.AUTOTUNE)
            .map(lambda f, y: (f["x"], y)).prefetch(tf.data.AUTOTUNE))


class EpochTimes:
    def __init__(self):
        import tf_keras

        outer = self

        class CB(tf_keras.callbacks.Callback):
            def on_epoch_begin(self, epoch, logs=None):
                outer.begin.append(time.perf_counter())

            def on_epoch_end(self, epoch, logs=None):
                outer.end.append(time.perf_counter())
                outer.loss.append(float((logs or {}).get("loss", float("nan"))))

        self.begin, self.end, self.loss, self.callback = [], [], [], CB()


def run_local(args) -> dict:
    """(a): one process, model.fit on local files."""
    files = sorted(os.path.join(args.folder, f) for f in os.listdir(args.folder) if f.endswith(".tfrecord"))
    times = EpochTimes()
    m = chosen_model()
    m.fit(dataset(files, args.batch_size).repeat(), epochs=args.epochs, steps_per_epoch=args.records // args.batch_size,
          verbose=0, callbacks=[times.callback])
    return {"epoch_s": [e - b for b, e in zip(times.begin, times.end)], "loss": times.loss}


def run_pss(args) -> dict:
    """(b): the chief of model.fit under ParameterServerStrategy; servers started by ``main``."""
    import tensorflow as tf
    import tf_keras

    files = sorted(os.path.join(args.folder, f) for f in os.listdir(args.folder) if f.endswith(".tfrecord"))
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
    with strategy.scope():
        m = chosen_model()

    def dataset_fn(ctx):
        mine = files[ctx.input_pipeline_id::ctx.num_input_pipelines]
        return dataset(mine, args.batch_size).repeat()

    times = EpochTimes()
    steps = args.records // args.batch_size
    m.fit(tf_keras.utils.experimental.DatasetCreator(dataset_fn), epochs=args.epochs, steps_per_epoch=steps,
          verbose=0, callbacks=[times.callback])
    return {"epoch_s": [e - b for b, e in zip(times.begin, times.end)], "loss": times.loss}


def run_mwms(args) -> dict:
    """(d): one worker of model.fit under MultiWorkerMirroredStrategy (TF_CONFIG set by ``run_d``);
    each worker reads its own shards, ``batch_size`` examples a step (the global batch is
    ``batch_size`` x workers, as in ``tfhadoop train --strategy allreduce``)."""
    import tensorflow as tf
    import tf_keras

    files = sorted(os.path.join(args.folder, f) for f in os.listdir(args.folder) if f.endswith(".tfrecord"))
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    workers = strategy.num_replicas_in_sync
    with strategy.scope():
        m = chosen_model()

    def dataset_fn(ctx):
        mine = files[ctx.input_pipeline_id::ctx.num_input_pipelines]
        return dataset(mine, args.batch_size).repeat()

    times = EpochTimes()
    m.fit(tf_keras.utils.experimental.DatasetCreator(dataset_fn), epochs=args.epochs,
          steps_per_epoch=args.records // (args.batch_size * workers), verbose=0, callbacks=[times.callback])
    return {"epoch_s": [e - b for b, e in zip(times.begin, times.end)], "loss": times.loss}


def child(kind: str, args) -> dict:
    """Run (a) or (b)'s chief in a fresh process; its wall time from spawn to exit."""
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "bench.bench_trainer_peers", "--child", kind, "--folder", args.folder, "--records",
                          str(args.records), "--epochs", str(args.epochs), "--batch-size", str(args.batch_size)],
                         capture_output=True, text=True, cwd=ROOT, env={**os.environ, "SPE": str(args.steps_per_execution)})
    wall = time.perf_counter() - t0
    if out.returncode:
        raise RuntimeError(f"{kind} failed: {out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return {**result, "wall_s": wall}


def pss_cluster(workers: int):
    from tfhadoop.ports import free_ports

    ps, *worker_ports, chief = free_ports(workers + 2)
    cluster = {"ps": [f"127.0.0.1:{ps}"], "worker": [f"127.0.0.1:{p}" for p in worker_ports],
               "chief": [f"127.0.0.1:{chief}"]}
    procs = [subprocess.Popen([sys.executable, "-m", "tfhadoop.trainer.server", json.dumps(cluster), role, str(i)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for role in ("ps", "worker") for i in range(len(cluster[role]))]
    return cluster, procs


def run_yarn(args, manifest_folder: str, workers: int, *extra: str) -> dict:
    """(c), (e): `tfhadoop train` reading hdfs:// on the embedded cluster (``extra``: more flags)."""
    from tfhadoop.connectors import hdfs

    base = f"hdfs:///tmp/bench-peers-{uuid.uuid4().hex[:8]}"
    hdfs.upload_dir(manifest_folder, f"{base}/data")
    wall = run_train(base, "--model", "job_models:model", "--python-path", JOB_MODELS_DIR,
                     "--data", f"{base}/data", "--label", "y", "--train-split", "train",
                     *(() if "allreduce" in extra else ("--ps", "1")), *extra, "--workers", str(workers), "--epochs", str(args.epochs), "--batch-size", str(args.batch_size),
                     "--task-records", str(args.task_records), "--worker-memory", "1g",
                     *(() if "allreduce" in extra else ("--ps-memory", "1g")))
    result = {"wall_s": wall, "metrics": metrics(base), "samples": progress(base)}
    hdfs.delete(base)
    return result


def steady(epoch_s: list, records: int) -> float:
    later = epoch_s[1:] or epoch_s
    return records * len(later) / sum(later)


def run_b(args, workers: int) -> dict:
    """(b) with ``workers`` worker servers (and one PS) as local processes."""
    cluster, procs = pss_cluster(workers)
    t0 = time.perf_counter()
    try:
        os.environ["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": "chief", "index": 0}})
        r = child("b", args)
    finally:
        os.environ.pop("TF_CONFIG", None)
        for p in procs:
            p.kill()
            p.wait(timeout=30)
    return {"wall_s": time.perf_counter() - t0, "steady": steady(r["epoch_s"], args.records), "loss": r["loss"][-1]}


def run_d(args, workers: int, spe: int) -> dict:
    """(d) with ``workers`` local processes at ``steps_per_execution`` ``spe``: rank 0's epochs."""
    from tfhadoop.ports import free_ports

    cluster = {"worker": [f"127.0.0.1:{p}" for p in free_ports(workers)]}
    argv = [sys.executable, "-m", "bench.bench_trainer_peers", "--child", "d", "--folder", args.folder, "--records",
            str(args.records), "--epochs", str(args.epochs), "--batch-size", str(args.batch_size)]
    t0 = time.perf_counter()
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                              env={**os.environ, "SPE": str(spe),
                                   "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}})})
             for i in range(workers)]
    outs = [p.communicate(timeout=3600) for p in procs]
    wall = time.perf_counter() - t0
    for p, (_, err) in zip(procs, outs):
        if p.returncode:
            raise RuntimeError(f"(d) failed: {err[-3000:]}")
    r = json.loads(outs[0][0].strip().splitlines()[-1])
    return {"wall_s": wall, "steady": steady(r["epoch_s"], args.records), "loss": r["loss"][-1], "spe": spe}


def run_e(args, workers: int) -> dict:
    """(e): ``tfhadoop train --strategy allreduce``; steady rate from its samples after epoch 1."""
    return run_c(args, workers, "--strategy", "allreduce")


def run_c(args, workers: int, *extra: str) -> dict:
    """(c) with ``workers`` workers; steady rate from the coordinator's samples after epoch 1."""
    r = run_yarn(args, args.folder, workers, *extra)
    m = r["metrics"]
    total = args.records * args.epochs
    later = [s for s in r["samples"] if s.get("epoch", 0) >= 1]
    if len(later) >= 2:
        ex = lambda s: s["epoch"] * args.records + s["examples"]  # noqa: E731
        rate = (ex(later[-1]) - ex(later[0])) / (later[-1]["time"] - later[0]["time"])
    else:
        rate = (total - args.task_records) / (m["train_seconds"] - (m["first_step_s"] or 0))
    return {"wall_s": r["wall_s"], "steady": rate, "train_seconds": m["train_seconds"],
            "first_step_s": m["first_step_s"], "loss": m["epochs"][-1]["mean_loss"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--task-records", type=int, default=2000)
    ap.add_argument("--steps-per-execution", type=int, default=16, help="(a), (b): tf-keras's own batching of steps")
    ap.add_argument("--workers", default="2", help="worker counts of (b) and (c), e.g. 1,2,4 for the scaling table")
    ap.add_argument("--skip", default="", help="comma list of a,b,c,d,e to leave out")
    ap.add_argument("--child", default=None)
    ap.add_argument("--folder", default=None)
    args = ap.parse_args()
    if args.child:
        result = {"a": run_local, "b": run_pss, "d": run_mwms}[args.child](args)
        print(json.dumps(result), flush=True)
        os._exit(0)  # PSS keeps remote handles: do not wait for them
    counts = [int(n) for n in args.workers.split(",")]
    args.folder = tempfile.mkdtemp(prefix="bench-peers-")
    write_dataset(args.folder, args.records, args.shards)
    skip = set(args.skip.split(","))
    print(f"load before: {os.getloadavg()} on {os.cpu_count()} cores; {args.records} records x {args.epochs} epochs, "
          f"batch {args.batch_size}, workers {counts}", flush=True)
    rows = {}
    if "a" not in skip:
        r = child("a", args)
        rows["a"] = {"wall_s": r["wall_s"], "steady": steady(r["epoch_s"], args.records), "loss": r["loss"][-1]}
        print("(a)", json.dumps(rows["a"]), flush=True)
    if "b" not in skip:
        for n in counts:
            rows[("b", n)] = run_b(args, n)
            print(f"(b) {n} workers", json.dumps(rows[("b", n)]), flush=True)
    if "d" not in skip:
        for n in counts:
            tries = [run_d(args, n, spe) for spe in sorted({1, args.steps_per_execution})]
            for t in tries:
                print(f"(d) {n} workers, steps_per_execution {t['spe']}", json.dumps(t), flush=True)
            rows[("d", n)] = max(tries, key=lambda t: t["steady"])
    if not {"c", "e"} <= skip:
        with bench_cluster():
            for kind, run in (("c", run_c), ("e", run_e)):
                for n in counts if kind not in skip else ():
                    rows[(kind, n)] = run(args, n)
                    print(f"({kind}) {n} workers", json.dumps(rows[(kind, n)]), flush=True)
    print(f"\nload after: {os.getloadavg()}")
    print(f"{'run':<58} {'steady ex/s':>12} {'wall s':>8} {'last loss':>10}")
    names = {"a": "(a) tf-keras fit, 1 process, local files",
             "b": "(b) tf-keras fit, PSS 1 PS + {n} workers, local files",
             "c": "(c) tfhadoop train, 1 PS + {n} workers, hdfs://",
             "d": "(d) tf-keras fit, MWMS {n} workers, local files",
             "e": "(e) tfhadoop train --strategy allreduce, {n} workers"}
    for k, row in rows.items():
        name = names["a"] if k == "a" else names[k[0]].format(n=k[1])
        print(f"{name:<58} {row['steady']:>12.0f} {row['wall_s']:>8.1f} {row['loss']:>10.4f}")
    for n in counts:
        for ours, peer, what in (("c", "b", "PS mode vs PSS fit"), ("e", "d", "allreduce vs MWMS fit")):
            o, p = rows.get((ours, n)), rows.get((peer, n))
            if o and p:
                print(f"{n} workers, {what}: ({ours})/({peer}) steady {o['steady'] / p['steady']:.2f}, "
                      f"wall {o['wall_s'] / p['wall_s']:.2f} (wall: lower is better)")
    for kind in "bcde":
        base = rows.get((kind, counts[0]))
        if base and len(counts) > 1:
            print(f"({kind}) scaling from {counts[0]} worker(s): " + ", ".join(
                f"{n}: {rows[(kind, n)]['steady'] / base['steady']:.2f}x" for n in counts[1:] if (kind, n) in rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
