"""Trainer step throughput (issue 19): `tfhadoop train` against tf-keras `model.fit` under
ParameterServerStrategy with ``steps_per_execution`` 1 and 16 (16 also with 1 worker), 1 and 2 workers, and a wide model
(~1M parameters, batch 512) against single-process `model.fit` and PSS `model.fit`; same data (bench_trainer_peers'
uncompressed indexed shards, 16 float features) in one run. Also prints the task closure's fixed
cost (bench.bench_task_overhead) and the TensorFlow error lines it logged.

    .venv/bin/python -m bench.bench_trainer_steps [--records 60000] [--epochs 3]

Steady examples/s are over the epochs after the first (see bench_trainer_peers.steady).
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
from types import SimpleNamespace

from bench import bench_trainer_peers as peers
from bench.common import JOB_MODELS_DIR, ROOT, bench_cluster, metrics, progress, run_train


def task_overhead() -> dict:
    """The task closure's fixed and per-step cost, from bench.bench_task_overhead in a child process."""
    out = subprocess.run([sys.executable, "-m", "bench.bench_task_overhead", "--tasks", "400", "--repeat", "7"],
                         capture_output=True, text=True, cwd=ROOT, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "0"})
    if out.returncode:
        raise RuntimeError(f"bench_task_overhead failed: {out.stderr[-3000:]}")
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return {**rows[0], **rows[1], "failed_to_clear_lines": out.stderr.count("Failed to clear function handle cache")}


def host_cpu() -> tuple[int, int]:
    """(busy, total) jiffies of all the host's cores so far, from /proc/stat."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    idle = ticks[3] + ticks[4]  # idle + iowait
    return sum(ticks) - idle, sum(ticks)


def fit_row(kind: str, args, workers: int, spe: int, batch: int, model: str) -> dict:
    """(a) one process or (b) ParameterServerStrategy with ``workers``, via bench_trainer_peers' children."""
    ns = SimpleNamespace(folder=args.folder, records=args.records, epochs=args.epochs, batch_size=batch,
                         steps_per_execution=spe)
    os.environ["BENCH_MODEL"] = model
    procs = []
    try:
        if kind == "b":
            cluster, procs = peers.pss_cluster(workers)
            os.environ["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": "chief", "index": 0}})
        t0 = time.perf_counter()
        r = peers.child(kind, ns)
        wall = time.perf_counter() - t0
    finally:
        os.environ.pop("TF_CONFIG", None)
        os.environ.pop("BENCH_MODEL", None)
        for p in procs:
            p.kill()
            p.wait(timeout=30)
    return {"steady": peers.steady(r["epoch_s"], args.records), "wall_s": wall, "loss": r["loss"][-1]}


def train_row(args, base: str, workers: int, batch: int, model: str, spe: str) -> dict:
    """`tfhadoop train` on the embedded cluster, reading the dataset uploaded to ``base``."""
    from tfhadoop.connectors import hdfs

    run = f"{base}/run-{uuid.uuid4().hex[:6]}"
    wall = run_train(run, "--model", f"job_models:{model}", "--python-path", JOB_MODELS_DIR,
                     "--data", f"{base}/data", "--label", "y", "--train-split", "train", "--ps", "1",
                     "--workers", str(workers), "--epochs", str(args.epochs), "--batch-size", str(batch),
                     "--task-records", str(args.task_records), "--steps-per-execution", spe,
                     "--worker-memory", "1g", "--ps-memory", "1g")
    m, samples = metrics(run), progress(run)
    hdfs.delete(run)
    later = [s for s in samples if s.get("epoch", 0) >= 1]
    ex = lambda s: s["epoch"] * args.records + s["examples"]  # noqa: E731
    # The coordinator's own account of each epoch: the tail (queue empty, last closures running)
    # and the checkpoints, which (b) does not write; averaged over the epochs after the first.
    timing = m.get("epoch_timing", [])[1:] or m.get("epoch_timing", [])
    mean = lambda key: round(sum(e[key] for e in timing) / len(timing), 3) if timing else None  # noqa: E731
    if len(later) >= 2 and later[-1]["time"] > later[0]["time"]:
        rate = (ex(later[-1]) - ex(later[0])) / (later[-1]["time"] - later[0]["time"])
    else:  # epochs too short for two progress samples after the first: the coordinator's epoch time
        rate = args.records / (mean("seconds") or m["train_seconds"] / args.epochs)
    return {"steady": rate, "wall_s": wall, "loss": m["epochs"][-1]["mean_loss"],
            "steps_per_execution": m.get("steps_per_execution"), "epoch_s": mean("seconds"),
            "tail_s": mean("tail_s"), "checkpoint_s": mean("end_checkpoint_s"),
            "checkpoints_in_epoch_s": mean("checkpoints_in_epoch_s")}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=60_000)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--wide-batch-size", type=int, default=512)
    ap.add_argument("--task-records", type=int, default=1000)
    ap.add_argument("--steps-per-execution", default="auto", help="tfhadoop train's setting")
    ap.add_argument("--skip", default="", help="comma list of row keys to leave out")
    args = ap.parse_args()
    skip = set(args.skip.split(","))
    args.folder = tempfile.mkdtemp(prefix="bench-steps-")
    peers.write_dataset(args.folder, args.records, args.shards)
    print(f"load before: {os.getloadavg()} on {os.cpu_count()} cores; {args.records} records x {args.epochs} epochs, "
          f"batch {args.batch_size} (wide: {args.wide_batch_size})", flush=True)
    rows, names = {}, {}

    def row(key: str, name: str, fn) -> None:
        if key in skip:
            return
        names[key] = name
        busy0, total0 = host_cpu()
        rows[key] = fn()
        busy1, total1 = host_cpu()
        # How much of the host's cores the row kept busy (its processes, the cluster's daemons and
        # anything else): a row near 1.0 has no core left for another worker to use.
        rows[key]["host_cpu_busy"] = round((busy1 - busy0) / max(total1 - total0, 1), 3)
        print(key, name, json.dumps(rows[key]), f"load {os.getloadavg()[0]:.1f}", flush=True)

    if "overhead" not in skip:
        print("task closure:", json.dumps(task_overhead()), flush=True)
    b, wb = args.batch_size, args.wide_batch_size
    row("a", "fit, 1 process", lambda: fit_row("a", args, 1, 16, b, "model"))
    row("b1", "fit, PSS 1 PS + 2 workers, steps_per_execution=1", lambda: fit_row("b", args, 2, 1, b, "model"))
    row("b16", "fit, PSS 1 PS + 2 workers, steps_per_execution=16", lambda: fit_row("b", args, 2, 16, b, "model"))
    # The peer with one worker: how far its own 1 -> 2 workers goes on this host (beside c2/c1).
    row("b16_1", "fit, PSS 1 PS + 1 worker, steps_per_execution=16", lambda: fit_row("b", args, 1, 16, b, "model"))
    row("wa", f"wide model, fit, 1 process, batch {wb}", lambda: fit_row("a", args, 1, 16, wb, "wide_model"))
    # The best-configured peer with the wide model: what parameter-server training on this host
    # costs anyone (variables from the PS, gradients back, per step), whoever drives it.
    row("wb16", f"wide model, fit, PSS 1 PS + 2 workers, spe=16, batch {wb}",
        lambda: fit_row("b", args, 2, 16, wb, "wide_model"))
    if not {"c1", "c2", "wc2"} <= skip:
        from tfhadoop.connectors import hdfs

        with bench_cluster():
            base = f"hdfs:///tmp/bench-steps-{uuid.uuid4().hex[:8]}"
            hdfs.upload_dir(args.folder, f"{base}/data")
            spe = args.steps_per_execution
            row("c1", f"tfhadoop train 1 PS + 1 worker (spe {spe})", lambda: train_row(args, base, 1, b, "model", spe))
            row("c2", f"tfhadoop train 1 PS + 2 workers (spe {spe})", lambda: train_row(args, base, 2, b, "model", spe))
            row("wc2", f"wide model, tfhadoop train 1 PS + 2 workers, batch {wb}",
                lambda: train_row(args, base, 2, wb, "wide_model", spe))
            hdfs.delete(base)
    print(f"\nload after: {os.getloadavg()}")
    print(f"{'run':<62} {'steady ex/s':>12} {'wall s':>8} {'last loss':>10} {'host busy':>10}")
    for k, r in rows.items():
        print(f"{k + ' ' + names[k]:<62} {r['steady']:>12.0f} {r['wall_s']:>8.1f} {r['loss']:>10.4f} "
              f"{r['host_cpu_busy']:>10.0%}")
    for k, r in rows.items():
        if r.get("epoch_s"):
            spent = r["tail_s"] + r["checkpoint_s"] + r["checkpoints_in_epoch_s"]
            print(f"{k}: epoch {r['epoch_s']:.2f} s, of which tail {r['tail_s']:.2f} s, end-of-epoch checkpoint "
                  f"{r['checkpoint_s']:.2f} s, checkpoints within {r['checkpoints_in_epoch_s']:.2f} s "
                  f"({spent / r['epoch_s']:.0%} not training at full width)")
    for num, den, target in (("c2", "b16", 1.0), ("c2", "b1", None), ("c2", "c1", 1.6), ("b16", "b16_1", None),
                              ("wc2", "wa", 0.8), ("wb16", "wa", None), ("wc2", "wb16", None)):
        if num in rows and den in rows:
            ratio = rows[num]["steady"] / rows[den]["steady"]
            print(f"{num}/{den}: {ratio:.2f}" + (f" (target >= {target})" if target else ""))
    # (b) writes no checkpoint; (c) writes one at each epoch's end. The rate (c) would have without
    # them, from its own timing (examples over the epoch's time less its checkpoints' time):
    for k in ("c1", "c2", "wc2"):
        r = rows.get(k)
        if r and r.get("epoch_s"):
            training_s = r["epoch_s"] - r["checkpoint_s"] - r["checkpoints_in_epoch_s"]
            print(f"{k} without its checkpoints' time: {r['steady'] * r['epoch_s'] / training_s:.0f} examples/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
