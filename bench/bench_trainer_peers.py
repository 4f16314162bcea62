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

``--from-export`` (issue 32's one command): the dataset is written by ``tfhadoop export``'s
defaults (``run_export``, from a Spark DataFrame of the same rows) to HDFS; the jobs read it there,
the peers a local copy; and (f) times a task at the start and at the end of its first shard as the
trainer plans and reads them (bench_task_offsets). Ends with issue 32's three ratios.

    .venv/bin/python -m bench.bench_trainer_peers [--records 200000] [--epochs 3] [--workers 1,2,4] [--from-export]
"""
from __future__ import annotations

import argparse
import contextlib
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
    from tfhadoop.connectors.tfrecord_writer import write_records

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


def export_dataset(args, url: str) -> None:
    """(--from-export) The rows of :func:`write_dataset` as a DataFrame (x: array<float> of
    FEATURES, y: float), exported to ``url`` by ``run_export`` with the export's defaults, then
    copied to ``args.folder`` for the peers."""
    import numpy as np
    import pandas as pd

    from tfhadoop.connectors import hdfs
    from tfhadoop.spark.export import ExportOptions, run_export
    from tfhadoop.spark.session import get_session

    rng = np.random.default_rng(0)
    w = rng.normal(size=FEATURES)
    x = rng.normal(size=(args.records, FEATURES)).astype(np.float32)
    y = (np.tanh(x @ w / 4) + 0.05 * rng.normal(size=args.records)).astype(np.float32)
    spark = get_session("bench-trainer-peers", extra_conf={"spark.driver.memory": "3g", "spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    try:
        spark.createDataFrame(pd.DataFrame({"x": list(x), "y": y})).createOrReplaceTempView("bench_peers")
        t0 = time.perf_counter()
        manifest = run_export(spark, ExportOptions(output=url, query="select x, y from bench_peers"))
        print(f"export defaults: compression {manifest['compression']}, {len(manifest['files'])} shards, "
              f"{manifest['bytes'] / 1e6:.1f} MB in {time.perf_counter() - t0:.0f} s", flush=True)
    finally:
        spark.stop()
    hdfs.download_dir(url, args.folder)


def task_position(url: str, task_records: int) -> dict:
    """(f) The first and the last task of the export's first shard, planned and read as the trainer
    does (bench_task_offsets.reader), best of 3 each: the cost of a task's position."""
    import tfhadoop.tfhdfs  # noqa: F401  (hdfs:// for TensorFlow, as in a worker)
    from bench.bench_task_offsets import reader
    from tfhadoop.connectors import dataset as ds
    from tfhadoop.trainer.step import COMPRESSION
    from tfhadoop.trainer.tasks import plan_epoch

    m = ds.load(url)
    tasks = plan_epoch(m, None, task_records, shuffle=False, indexes=ds.load_indexes(m, None))
    mine = [t for t in tasks if t.path == tasks[0].path]
    task = reader(COMPRESSION[m.compression])

    def best(t) -> float:
        return min(task(t.path, t.offset, t.records_to_skip, t.count) for _ in range(3))

    best(mine[0])  # traces the reader
    first, last = best(mine[0]), best(mine[-1])
    return {"first_ms": first * 1e3, "last_ms": last * 1e3, "ratio": last / first, "last_record": mine[-1].start}


def dataset(files, batch: int, ctx=None):
    """The peers' pipeline; with ``ctx`` (an ``InputContext``) this input pipeline's part: its
    files, or every n-th record when there are fewer files than pipelines (a small export)."""
    import tensorflow as tf

    from tfhadoop.trainer.step import parse_fn

    parse = parse_fn(SPEC, "y")
    n, i = (ctx.num_input_pipelines, ctx.input_pipeline_id) if ctx else (1, 0)
    records = (tf.data.TFRecordDataset(files[i::n]) if len(files) >= n
               else tf.data.TFRecordDataset(files).shard(n, i))
    return (records.batch(batch).map(parse, num_parallel_calls=tf.data.AUTOTUNE)
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
        return dataset(files, args.batch_size, ctx).repeat()

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
        return dataset(files, args.batch_size, ctx).repeat()

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
    """(c), (e): `tfhadoop train` reading hdfs:// on the embedded cluster (``extra``: more flags);
    the exported dataset with --from-export, else a copy of the local one."""
    from tfhadoop.connectors import hdfs

    base = f"hdfs:///tmp/bench-peers-{uuid.uuid4().hex[:8]}"
    data = args.export_url or f"{base}/data"
    if not args.export_url:
        hdfs.upload_dir(manifest_folder, data)
    wall = run_train(base, "--model", "job_models:model", "--python-path", JOB_MODELS_DIR,
                     "--data", data, "--label", "y", *(() if args.export_url else ("--train-split", "train")),
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


def job_steady(args, samples: list, metrics: dict) -> float:
    """A `tfhadoop train` job's steady examples/s: from the coordinator's progress samples after
    epoch 1 (the first epoch's start-up left out, as ``steady`` leaves out (b)'s), or, in a job too
    short for two such samples (the smoke sizes), from its training time less the first step's."""
    later = [s for s in samples if s.get("epoch", 0) >= 1]
    if len(later) >= 2:
        ex = lambda s: s["epoch"] * args.records + s["examples"]  # noqa: E731
        return (ex(later[-1]) - ex(later[0])) / (later[-1]["time"] - later[0]["time"])
    return (args.records * args.epochs - args.task_records) / (metrics["train_seconds"] - (metrics["first_step_s"] or 0))


def run_c(args, workers: int, *extra: str) -> dict:
    """(c) with ``workers`` workers; steady rate from the coordinator's samples after epoch 1."""
    r = run_yarn(args, args.folder, workers, *extra)
    m = r["metrics"]
    rate = job_steady(args, r["samples"], m)
    return {"wall_s": r["wall_s"], "steady": rate, "train_seconds": m["train_seconds"],
            "first_step_s": m["first_step_s"], "loss": m["epochs"][-1]["mean_loss"]}


def job_arguments(doc: str | None, records: int, shards: int, batch_size: int, task_records: int):
    """The options run_b/run_c/run_pss read from ``args`` (also bench_ragged's, which runs them on
    its own dataset), with the caller's sizes as defaults."""
    ap = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    ap.add_argument("--records", type=int, default=records)
    ap.add_argument("--shards", type=int, default=shards)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=batch_size)
    ap.add_argument("--task-records", type=int, default=task_records)
    ap.add_argument("--steps-per-execution", type=int, default=16, help="(a), (b): tf-keras's own batching of steps")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--folder", default=None, help=argparse.SUPPRESS)
    return ap


def main() -> int:
    ap = job_arguments(__doc__, records=200_000, shards=8, batch_size=128, task_records=2000)
    ap.add_argument("--workers", default="2", help="worker counts of (b) and (c), e.g. 1,2,4 for the scaling table")
    ap.add_argument("--skip", default="", help="comma list of a,b,c,d,e to leave out")
    ap.add_argument("--from-export", action="store_true", help="the dataset written by `tfhadoop export`'s defaults")
    args = ap.parse_args()
    if args.child:
        result = {"a": run_local, "b": run_pss, "d": run_mwms}[args.child](args)
        print(json.dumps(result), flush=True)
        os._exit(0)  # PSS keeps remote handles: do not wait for them
    counts = [int(n) for n in args.workers.split(",")]
    args.folder = tempfile.mkdtemp(prefix="bench-peers-")
    args.export_url = None
    with contextlib.ExitStack() as cluster:
        if args.from_export:  # the cluster first: the export writes to its HDFS
            cluster.enter_context(bench_cluster())
            args.export_url = f"hdfs:///tmp/bench-peers-export-{uuid.uuid4().hex[:8]}"
            export_dataset(args, args.export_url)
        else:
            write_dataset(args.folder, args.records, args.shards)
        try:
            return measure(args, counts, cluster)
        finally:
            if args.export_url:
                from tfhadoop.connectors import hdfs

                hdfs.delete(args.export_url)


def measure(args, counts: list[int], cluster: contextlib.ExitStack) -> int:
    """Runs (a)-(f) as asked and prints the table and the ratios."""
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
    position = None
    if not {"c", "e"} <= skip or (args.from_export and "f" not in skip):
        if not args.from_export:
            cluster.enter_context(bench_cluster())
        for kind, run in (("c", run_c), ("e", run_e)):
            for n in counts if kind not in skip else ():
                rows[(kind, n)] = run(args, n)
                print(f"({kind}) {n} workers", json.dumps(rows[(kind, n)]), flush=True)
        if args.from_export and "f" not in skip:
            position = task_position(args.export_url, args.task_records)
            print("(f) task position", json.dumps(position), flush=True)
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
    if args.from_export:
        ratio = {k: rows[(o, counts[0])]["steady"] / rows[(p, counts[0])]["steady"]
                 for k, o, p in (("ps", "c", "b"), ("allreduce", "e", "d")) if (o, counts[0]) in rows and (p, counts[0]) in rows}
        print(f"\nissue 32, on the default export ({counts[0]} workers): PS mode / PSS fit "
              f"{ratio.get('ps', float('nan')):.2f} (target >= 1.0); allreduce / MWMS fit "
              f"{ratio.get('allreduce', float('nan')):.2f} (target >= 1.0); last task / first task of a shard "
              f"{position['ratio'] if position else float('nan'):.2f} (target <= 1.2)")
    for kind in "bcde":
        base = rows.get((kind, counts[0]))
        if base and len(counts) > 1:
            print(f"({kind}) scaling from {counts[0]} worker(s): " + ", ".join(
                f"{n}: {rows[(kind, n)]['steady'] / base['steady']:.2f}x" for n in counts[1:] if (kind, n) in rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
