"""Where a task closure's fixed cost goes, part by part (issue 19): functions that each do one more
part of the trainer's closure are scheduled by a ClusterCoordinator on an in-process PS + worker,
one at a time, and their medians subtracted:

    noop            schedule -> dispatch -> remote function start -> return (no arguments)
    args            + the task vectors (paths, offsets, skips, counts) sent and one returned
    pipeline        + the task's input pipeline built and its first batch read and parsed (no step)
    step            + one train step on a batch already in the worker (no pipeline): PS reads/writes
    task            the trainer's closure of one 1-step task (pipeline + step, no loop over tasks)
    group_of_one    the same task through the function for groups (its loop over tasks)

and, in the coordinator's process, ``task_args`` (the closure's argument tensors) and the ledger's
record per task, timed directly.

    .venv/bin/python bench/bench_closure_breakdown.py [--repeat 40]

Prints one JSON line.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

for _k, _v in {"TF_USE_LEGACY_KERAS": "1", "GRPC_FAIL_FAST": "use_caller", "TF_CPP_MIN_LOG_LEVEL": "1"}.items():
    os.environ.setdefault(_k, _v)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_task_overhead import FEATURES, SPEC, closure_bench  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=5000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=40)
    opts = ap.parse_args()

    import tensorflow as tf

    from tfhadoop.trainer import step
    from tfhadoop.trainer.tasks import EpochLedger, Task

    bench = closure_bench("bench-breakdown-", opts.records)
    path, offsets, strategy, coordinator, model = bench.path, bench.offsets, bench.strategy, bench.coordinator, bench.model
    parse, train_step = bench.parse, bench.train_step
    vec = tf.TensorSpec([None], tf.int64)
    sig = [tf.TensorSpec([None], tf.string), vec, vec, vec]

    @tf.function
    def noop():
        return tf.constant(0, tf.int64)

    @tf.function(input_signature=sig)
    def args(paths, offs, skips, counts):
        return counts[0]

    @tf.function(input_signature=sig)
    def pipeline(paths, offs, skips, counts):
        records = step.records_from(paths[0], offs[0], "").skip(skips[0]).take(counts[0])
        batches = iter(step.without_rewrites(records.batch(opts.batch).prefetch(step.PREFETCH)))
        x, y = parse(batches.get_next())
        return tf.shape(y, out_type=tf.int64)[0]

    @tf.function(input_signature=sig)
    def step_only(paths, offs, skips, counts):
        x = {"x": tf.zeros([opts.batch, FEATURES])}
        n, _ = strategy.run(train_step, args=(x, tf.zeros([opts.batch])))
        return n

    task_fn = step.build_task_fn(strategy, model, SPEC, "y", opts.batch, None)

    def task(start: int) -> Task:
        return Task(id=start, path=path, start=start, count=opts.batch, offset=offsets[start], skip=0)

    fns = {"noop": (noop, False), "args": (args, True), "pipeline": (pipeline, True),
           "step": (step_only, True), "task": (task_fn.one, False), "group_of_one": (task_fn.many, True)}

    def once(fn, vectors: bool, i: int) -> float:
        start = (i * 997) % (opts.records - opts.batch)
        a = () if fn is noop else step.task_args([task(start)]) if not vectors else \
            tuple(tf.reshape(v, [1]) for v in step.task_args([task(start)]))
        t0 = time.perf_counter()
        coordinator.schedule(fn, args=a).fetch()
        return time.perf_counter() - t0

    for fn, with_args in fns.values():
        once(fn, with_args, 0)  # trace and connect
    samples = {name: [] for name in fns}
    for i in range(opts.repeat):  # interleaved, so load changes hit every part alike
        for name, (fn, with_args) in fns.items():
            samples[name].append(once(fn, with_args, i + 1))
    med = {name: statistics.median(s) * 1e3 for name, s in samples.items()}

    t0 = time.perf_counter()
    for i in range(1000):
        step.task_args([task(i % 100)])
    task_args_ms = (time.perf_counter() - t0)
    ledger = EpochLedger(0, 10 ** 9)
    t0 = time.perf_counter()
    for i in range(10000):
        ledger.record(Task(id=i, path=path, start=0, count=1), 1)
    record_ms = (time.perf_counter() - t0) / 10
    print(json.dumps({
        "median_ms": {k: round(v, 2) for k, v in med.items()},
        "parts_ms": {"schedule_dispatch_return (noop)": round(med["noop"], 2),
                     "task vectors in/out (args - noop)": round(med["args"] - med["noop"], 2),
                     "pipeline build + first batch + parse (pipeline - args)": round(med["pipeline"] - med["args"], 2),
                     "one train step incl. PS variable RPCs (step - args)": round(med["step"] - med["args"], 2),
                     "task (1 step) - pipeline - step + args": round(med["task"] - med["pipeline"] - med["step"]
                                                                     + med["args"], 2),
                     "loop over tasks (group_of_one - task)": round(med["group_of_one"] - med["task"], 2),
                     "task_args on the coordinator": round(task_args_ms, 3),
                     "ledger.record per task": round(record_ms, 4)},
        "repeat": opts.repeat, "load": os.getloadavg()[0]}), flush=True)
    del bench  # the servers stop with it
    os._exit(0)


if __name__ == "__main__":
    main()
