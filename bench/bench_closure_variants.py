"""What the graph loop of a task closure costs, and what other shapes of the closure would cost
(issue 19): variants of the trainer's one-task function scheduled by a ClusterCoordinator on an
in-process PS + worker, one closure at a time, interleaved, closures of 1, 4, 16 and 64 steps;
per variant the medians and the least-squares fixed cost per closure and cost per step (the
measure of bench_task_overhead.py).

    loop_ps      a counted graph loop of 1 iteration whose body is one train step on a zero batch
                 (its PS reads and updates), against ``step`` (the same step, no loop)
    loop_local   a counted loop of 1 iteration drawing and parsing one batch (worker only),
                 against ``pipeline`` (the same, no loop)
    base         the trainer's one-task function (step.build_task_fn(...).one)
    peeled       the same, its first step outside the loop (the loop runs steps - 1 times)
    noprefetch   base without the pipeline's prefetch
    packed       base with (offset, skip, count) sent as one int64 vector

    .venv/bin/python bench/bench_closure_variants.py [--repeat 15]

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
from bench_task_overhead import FEATURES, SPEC, closure_bench, fit_line  # noqa: E402

STEPS = (1, 4, 16, 64)


def fit(times: dict) -> tuple[float, float]:
    """(fixed ms, per-step ms) of the least-squares line through {steps: seconds}."""
    fixed, per_step = fit_line(times)
    return round(fixed * 1e3, 2), round(per_step * 1e3, 3)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=15)
    opts = ap.parse_args()

    import numpy as np
    import tensorflow as tf

    from tfhadoop.trainer import step

    bench = closure_bench("bench-variants-", opts.records)
    path, offsets, strategy, coordinator, model = bench.path, bench.offsets, bench.strategy, bench.coordinator, bench.model
    parse, train_step = bench.parse, bench.train_step
    b = opts.batch
    s_str, s_int = tf.TensorSpec([], tf.string), tf.TensorSpec([], tf.int64)
    sig = [s_str, s_int, s_int, s_int]

    def batches_of(path, offset, skip, count, prefetch=True):
        ds = step.records_from(path, offset, "").skip(skip).take(count).batch(b)
        return iter(step.without_rewrites(ds.prefetch(step.PREFETCH) if prefetch else ds))

    def zero_step():
        return strategy.run(train_step, args=({"x": tf.zeros([b, FEATURES])}, tf.zeros([b])))

    @tf.function(input_signature=sig)
    def step_only(path, offset, skip, count):
        n, _ = zero_step()
        return n

    @tf.function(input_signature=sig)
    def loop_ps(path, offset, skip, count):
        n = tf.constant(0, tf.int64)
        for _ in tf.range((count + b - 1) // b):
            bn, _ = zero_step()
            n += bn
        return n

    @tf.function(input_signature=sig)
    def pipeline(path, offset, skip, count):
        _, y = parse(batches_of(path, offset, skip, count).get_next())
        return tf.shape(y, out_type=tf.int64)[0]

    @tf.function(input_signature=sig)
    def loop_local(path, offset, skip, count):
        it = batches_of(path, offset, skip, count)
        n = tf.constant(0, tf.int64)
        for _ in tf.range((count + b - 1) // b):
            _, y = parse(it.get_next())
            n += tf.shape(y, out_type=tf.int64)[0]
        return n

    def train(path, offset, skip, count, prefetch=True, peel=False):
        it = batches_of(path, offset, skip, count, prefetch)
        n, total = tf.constant(0, tf.int64), tf.constant(0.0)
        first = 0
        if peel:
            n, total = strategy.run(train_step, args=parse(it.get_next()))
            first = 1
        for _ in tf.range(first, (count + b - 1) // b):
            bn, bl = strategy.run(train_step, args=parse(it.get_next()))
            n += bn
            total += bl
        return n, total

    @tf.function(input_signature=sig)
    def peeled(path, offset, skip, count):
        return train(path, offset, skip, count, peel=True)

    @tf.function(input_signature=sig)
    def noprefetch(path, offset, skip, count):
        return train(path, offset, skip, count, prefetch=False)

    @tf.function(input_signature=[s_str, tf.TensorSpec([3], tf.int64)])
    def packed(path, osc):
        return train(path, osc[0], osc[1], osc[2])

    base = step.build_task_fn(strategy, model, SPEC, "y", b, None).one
    fns = {"step": step_only, "loop_ps": loop_ps, "pipeline": pipeline, "loop_local": loop_local,
           "base": base, "peeled": peeled, "noprefetch": noprefetch, "packed": packed}

    def once(name: str, steps: int, i: int) -> float:
        count = steps * b
        start = (i * 997) % (opts.records - count)
        p = tf.constant(path)
        args = (p, tf.constant([offsets[start], 0, count], tf.int64)) if name == "packed" else \
            (p, tf.constant(offsets[start], tf.int64), tf.constant(0, tf.int64), tf.constant(count, tf.int64))
        t0 = time.perf_counter()
        out = coordinator.schedule(fns[name], args=args).fetch()
        dt = time.perf_counter() - t0
        n = np.asarray(out[0] if isinstance(out, (tuple, list)) else out)
        if name not in ("step", "pipeline"):
            assert int(sum(n.reshape(-1))) == count, (name, n, count)
        return dt

    for name in fns:
        once(name, 1, 0)  # trace and connect
    samples = {(name, s): [] for name in fns for s in STEPS}
    for i in range(opts.repeat):  # interleaved, so load changes hit every variant alike
        for s in STEPS:
            for name in fns:
                if name in ("step", "pipeline") and s != 1:
                    continue
                samples[(name, s)].append(once(name, s, i + 1))
    med = {k: statistics.median(v) for k, v in samples.items() if v}
    out = {"median_ms": {f"{n}/{s}": round(t * 1e3, 2) for (n, s), t in med.items()},
           "fit_fixed_ms_per_step_ms": {n: fit({s: med[(n, s)] for s in STEPS})
                                        for n in fns if (n, 4) in med},
           "loop_ps_minus_step_ms": round((med[("loop_ps", 1)] - med[("step", 1)]) * 1e3, 2),
           "loop_local_minus_pipeline_ms": round((med[("loop_local", 1)] - med[("pipeline", 1)]) * 1e3, 2),
           "traces": {n: f.experimental_get_tracing_count() for n, f in fns.items()},
           "repeat": opts.repeat, "load": os.getloadavg()}
    print(json.dumps(out), flush=True)
    del bench  # the servers stop with it
    os._exit(0)


if __name__ == "__main__":
    main()
