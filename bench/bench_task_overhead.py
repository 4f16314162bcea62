"""Where a task closure's time goes: the trainer's own task function (step.build_task_fn) run by a
ClusterCoordinator over an in-process PS and worker, one closure at a time, on a local
uncompressed shard. Closures of 1, 4, 16 and 64 steps give, by a least-squares line, the fixed
cost per closure and the cost per step; then many small closures at varied offsets show how
often the function traced, and the process's memory over them.

    .venv/bin/python -m bench.bench_task_overhead [--tasks 2000] [--batch 64]

Prints one JSON line per measurement; the process's stderr is scanned by the caller for
TensorFlow's per-task log lines (e.g. "Failed to clear function handle cache").
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

from bench.common import tf_env

tf_env(TF_CPP_MIN_LOG_LEVEL="1")

FEATURES = 20
SPEC = {"features": {"x": {"type": "FixedLenFeature", "shape": [FEATURES], "dtype": "float32"},
                     "y": {"type": "FixedLenFeature", "shape": [], "dtype": "float32"}}}


def write_shard(path: str, records: int) -> list[int]:
    """An uncompressed shard; returns the byte offset of every record (TFRecord framing: 12-byte
    header + data + 4-byte CRC)."""
    import numpy as np

    from tfhadoop.connectors.example import encode_example
    from tfhadoop.connectors.tfrecord_writer import write_records

    rng = np.random.default_rng(0)
    x = rng.normal(size=(records, FEATURES)).astype(np.float32)
    y = np.tanh(x.sum(axis=1) / 4)
    examples = [encode_example({"x": list(map(float, xi)), "y": [float(yi)]}) for xi, yi in zip(x, y)]
    write_records(path, iter(examples))
    offsets, pos = [], 0
    for e in examples:
        offsets.append(pos)
        pos += len(e) + 16
    assert pos == os.path.getsize(path), (pos, os.path.getsize(path))
    return offsets


def small_model(strategy):
    """The benches' 2 x 64 MLP with Adam, variables and optimizer slots on the PS."""
    import tf_keras

    with strategy.scope():
        model = tf_keras.Sequential([tf_keras.Input((FEATURES,), name="x"), tf_keras.layers.Dense(64, activation="relu"),
                                     tf_keras.layers.Dense(64, activation="relu"), tf_keras.layers.Dense(1)])
        model.compile(optimizer=tf_keras.optimizers.Adam(1e-3), loss="mse")
        model.optimizer.build(model.trainable_variables)
    return model


def fit_line(times: dict) -> tuple[float, float]:
    """(fixed s, per-step s) of the least-squares line through {steps: seconds}: a closure's
    fixed cost and its cost per step."""
    xs, ys = list(times), [times[s] for s in times]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    per_step = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - per_step * mx, per_step


def closure_bench(prefix: str, records: int):
    """What every closure bench starts from: a local shard of ``records`` Examples (and the byte
    offset of each), an in-process PS + worker with their ClusterCoordinator, the small model on
    them, and the trainer's parse function and train step for it."""
    from types import SimpleNamespace

    from tfhadoop.trainer import step
    from tfhadoop.trainer.server import in_process_ps_cluster

    path = os.path.join(tempfile.mkdtemp(prefix=prefix), "part-00000.tfrecord")
    offsets = write_shard(path, records)
    strategy, coordinator, servers = in_process_ps_cluster()
    model = small_model(strategy)
    return SimpleNamespace(path=path, offsets=offsets, strategy=strategy, coordinator=coordinator, servers=servers,
                           model=model, parse=step.parse_fn(SPEC, "y"), train_step=step.train_step_fn(model))


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=15, help="closures per size in the fixed/per-step fit")
    ap.add_argument("--tasks", type=int, default=2000, help="small closures in the trace/memory run")
    opts = ap.parse_args()


    from tfhadoop.trainer import step
    from tfhadoop.trainer.tasks import Task

    bench = closure_bench("bench-task-", opts.records)
    path, offsets, strategy, coordinator, model = bench.path, bench.offsets, bench.strategy, bench.coordinator, bench.model
    task_fn = step.build_task_fn(strategy, model, SPEC, "y", opts.batch, None)

    def task(start: int, count: int) -> Task:
        return Task(id=start, path=path, start=start, count=count, offset=offsets[start], skip=0)

    def run(tasks: list) -> tuple[int, float]:
        results = [task_fn.schedule(coordinator, group) for group in tasks]
        return sum(int(sum(r.fetch()[0])) for r in results), 0.0

    run([[task(0, opts.batch)]])  # trace and connect
    times = {}
    for steps in (1, 4, 16, 64):
        count = steps * opts.batch
        samples = []
        for i in range(opts.repeat):
            start = (i * 997) % (opts.records - count)
            t0 = time.perf_counter()
            n, _ = run([[task(start, count)]])
            samples.append(time.perf_counter() - t0)
            assert n == count, (n, count)
        times[steps] = statistics.median(samples)
    fixed, per_step = fit_line(times)
    print(json.dumps({"closure_median_ms": {s: round(t * 1e3, 2) for s, t in times.items()},
                      "task_overhead_ms": round(fixed * 1e3, 2), "per_step_ms": round(per_step * 1e3, 3)}), flush=True)

    # Many small closures at varied offsets and counts, two in flight as the coordinator keeps them.
    rss0, t0, done = rss_mib(), time.perf_counter(), 0
    pending = []
    for i in range(opts.tasks):
        count = 1 + (i * 37) % (2 * opts.batch)
        start = (i * 7919) % (opts.records - count)
        pending.append(task_fn.schedule(coordinator, [task(start, count)]))
        if len(pending) >= 2:
            done += int(sum(pending.pop(0).fetch()[0]))
        if i + 1 == opts.tasks // 10:
            rss0 = rss_mib()  # after warm-up (allocator pools, gRPC buffers)
    done += sum(int(sum(r.fetch()[0])) for r in pending)
    dt = time.perf_counter() - t0
    print(json.dumps({"small_tasks": opts.tasks, "examples": done, "tasks_per_s": round(opts.tasks / dt, 1),
                      "rss_mib_after_10pct": round(rss0, 1), "rss_mib_end": round(rss_mib(), 1),
                      "traces": task_fn.tracing_count()}), flush=True)
    del bench  # the servers stop with it
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
