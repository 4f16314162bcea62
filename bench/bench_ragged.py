"""Variable-length id lists (issue 30 §6): `tfhadoop train` against tf-keras ``model.fit`` under
``ParameterServerStrategy`` on the same files and model, an embedding bag over ``Input(ragged=True)``.

The data: ``ids`` lists of 0..200 item ids (mean 20), label ``y`` the mean of the items' effects.
(b) is what a user writes without tfhadoop: 1 PS + N worker processes on this machine, each worker
reading its shards, ``tf.io.parse_example`` with a ``VarLenFeature`` turned into a
``tf.RaggedTensor``; (c) is ``tfhadoop train`` with 1 PS + N workers on the embedded YARN cluster
reading ``hdfs://`` (the trainer gives the ragged input the lists as they are). Steady examples/s
over the epochs after the first, as in bench.bench_trainer_peers.

    .venv/bin/python -m bench.bench_ragged [--records 100000] [--epochs 3] [--workers 1]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any

from bench import bench_trainer_peers as peers
from bench import job_models
from bench.common import JOB_MODELS_DIR, ROOT, bench_cluster, metrics, progress, run_train, tf_env

tf_env()
MEAN_LENGTH, MAX_LENGTH = 20, 200
SPEC = {"features": {"ids": {"type": "VarLenFeature", "dtype": "int64", "max_length": MAX_LENGTH},
                     "y": {"type": "FixedLenFeature", "shape": [], "dtype": "float32"}}}


def lengths(rng, n: int):
    """Geometric list lengths of mean ~MEAN_LENGTH cut at MAX_LENGTH, zeros included."""
    import numpy as np

    return np.minimum(rng.geometric(1.0 / (MEAN_LENGTH + 1), size=n) - 1, MAX_LENGTH)


def write_dataset(folder: str, records: int, shards: int) -> dict:
    """Uncompressed shards + the manifest with the ragged parse spec, as `tfhadoop export` writes."""
    import numpy as np

    from tfhadoop.connectors.dataset import MANIFEST, dumps, manifest_doc
    from tfhadoop.connectors.example import encode_example
    from tfhadoop.connectors.tfrecord_writer import write_records

    rng = np.random.default_rng(0)
    effect = rng.normal(size=job_models.ITEMS)
    per, files, total = records // shards, [], 0
    for i in range(shards):
        rows = []
        for n in lengths(rng, per):
            ids = rng.integers(0, job_models.ITEMS, size=int(n))
            rows.append((ids.tolist(), float(effect[ids].mean()) if n else 0.0))
            total += int(n)
        name = f"part-{i:05d}-of-{shards:05d}.tfrecord"
        write_records(os.path.join(folder, name), (encode_example({"ids": ids, "y": [y]}) for ids, y in rows))
        files.append({"path": name, "records": per, "bytes": os.path.getsize(os.path.join(folder, name)),
                      "split": "train"})
    manifest = manifest_doc("Example", "none", files, splits={"train": {"records": per * shards}}, schema={},
                            parse_spec=SPEC, source={}, created="bench")
    with open(os.path.join(folder, MANIFEST), "w") as f:
        f.write(dumps(manifest))
    return {"records": per * shards, "mean_length": total / (per * shards)}


def dataset(files, batch: int):
    """(b)'s input pipeline: a batch of records parsed at once, the id lists as a RaggedTensor."""
    import tensorflow as tf

    spec = {"ids": tf.io.VarLenFeature(tf.int64), "y": tf.io.FixedLenFeature([], tf.float32)}

    def parse(serialized):
        f = tf.io.parse_example(serialized, spec)
        ids: Any = f["ids"]  # a SparseTensor for a VarLenFeature (the stubs say any tensor)
        return {"ids": tf.RaggedTensor.from_sparse(ids)}, f["y"]

    return tf.data.TFRecordDataset(files).batch(batch).map(parse, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
        tf.data.AUTOTUNE)


def run_pss(args) -> dict:
    """(b)'s chief: model.fit under ParameterServerStrategy; servers started by ``run_b``."""
    import tensorflow as tf
    import tf_keras

    files = sorted(os.path.join(args.folder, f) for f in os.listdir(args.folder) if f.endswith(".tfrecord"))
    strategy = tf.distribute.experimental.ParameterServerStrategy(
        tf.distribute.cluster_resolver.TFConfigClusterResolver())
    with strategy.scope():
        m: Any = job_models.ragged_bag()  # tf_keras is unannotated: pyright takes verbose's type from "auto"

    def dataset_fn(ctx):
        return dataset(files[ctx.input_pipeline_id::ctx.num_input_pipelines], args.batch_size).repeat()

    times = peers.EpochTimes()
    m.fit(tf_keras.utils.experimental.DatasetCreator(dataset_fn), epochs=args.epochs,
          steps_per_epoch=args.records // args.batch_size, verbose=0, callbacks=[times.callback])
    return {"epoch_s": [e - b for b, e in zip(times.begin, times.end)], "loss": times.loss}


def run_b(args, workers: int) -> dict:
    cluster, procs = peers.pss_cluster(workers)
    t0 = time.perf_counter()
    try:
        env = {**os.environ, "SPE": str(args.steps_per_execution),
               "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "chief", "index": 0}})}
        out = subprocess.run([sys.executable, "-m", "bench.bench_ragged", "--child", "b", "--folder", args.folder,
                              "--records", str(args.records), "--epochs", str(args.epochs),
                              "--batch-size", str(args.batch_size)], capture_output=True, text=True, cwd=ROOT, env=env)
        if out.returncode:
            raise RuntimeError(f"(b) failed: {out.stderr[-3000:]}")
        r = json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=30)
    return {"wall_s": time.perf_counter() - t0, "steady": peers.steady(r["epoch_s"], args.records),
            "loss": r["loss"][-1]}


def run_c(args, workers: int) -> dict:
    from tfhadoop.connectors import hdfs

    base = f"hdfs:///tmp/bench-ragged-{uuid.uuid4().hex[:8]}"
    hdfs.upload_dir(args.folder, f"{base}/data")
    wall = run_train(base, "--model", "job_models:ragged_bag", "--python-path", JOB_MODELS_DIR, "--data",
                     f"{base}/data", "--label", "y", "--train-split", "train", "--ps", "1", "--workers", str(workers),
                     "--epochs", str(args.epochs), "--batch-size", str(args.batch_size), "--task-records",
                     str(args.task_records), "--worker-memory", "1g", "--ps-memory", "1g")
    m, samples = metrics(base), progress(base)
    hdfs.delete(base)
    return {"wall_s": wall, "steady": peers.job_steady(args, samples, m), "loss": m["epochs"][-1]["mean_loss"]}


def main() -> int:
    ap = peers.job_arguments(__doc__, records=100_000, shards=4, batch_size=256, task_records=5120)
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run_pss(args)))
        return 0
    args.folder = tempfile.mkdtemp(prefix="bench-ragged-")
    data = write_dataset(args.folder, args.records, args.shards)
    print(f"{data['records']} records, mean list length {data['mean_length']:.1f} (max {MAX_LENGTH}); "
          f"{args.epochs} epochs, batch {args.batch_size}, {args.workers} worker(s), load {os.getloadavg()}", flush=True)
    b = run_b(args, args.workers)
    print("(b)", json.dumps(b), flush=True)
    with bench_cluster():
        c = run_c(args, args.workers)
    print("(c)", json.dumps(c), flush=True)
    print(f"steady examples/s: (b) tf-keras fit under PSS {b['steady']:.0f}, (c) tfhadoop train {c['steady']:.0f}; "
          f"(c)/(b) {c['steady'] / b['steady']:.2f}; wall (b) {b['wall_s']:.0f} s, (c) {c['wall_s']:.0f} s; "
          f"last loss (b) {b['loss']:.4f}, (c) {c['loss']:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
