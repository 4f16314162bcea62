"""Allreduce (``--strategy allreduce``) vs parameter-server mode on the embedded YARN cluster, one run:

- examples/s of the same job (same model, dataset, batch, tasks) with 2 workers in each mode
  (PS mode: + 1 parameter server and the coordinator): the job's own ``metrics.json``
  (examples trained / seconds of its training loop), and submit -> end wall time;
- an allreduce job whose worker is preempted by YARN (an application in the `urgent` queue):
  seconds from the loss to the first round of a ring without it (``first_round`` event; that ring
  is formed on YARN's preemption warning when one comes, so it can precede the loss), and from
  the stop request to the grown ring's first round once resources return;
- goodput (``--parts goodput``): 3 workers, one preempted by YARN every ``--preempt-every`` s
  (an `urgent` application, shut down as soon as the loss is seen so the replacement can come)
  vs the same job undisturbed: goodput (bench.common.goodput: undisturbed wall / preempted wall,
  submit -> exit), and per preemption the seconds from the loss to training again (ring of 2) and to full
  speed (the ring of 3 grown back: its first round), with the steps redone.

Reproduce (≈ 6 min; starts and stops its own embedded cluster unless HADOOP_CONF_DIR is set):

    .venv/bin/python -m bench.bench_allreduce [--epochs 3] [--json /tmp/bench_allreduce.json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid

from bench.common import (
    JOB_MODELS_DIR,
    TEST_MODELS_DIR,
    bench_cluster,
    events,
    goodput,
    log,
    lost_events,
    metrics,
    preempt,
    run_train,
    start_train,
    tf_env,
    urgent_app,
)

LINEAR = "trainer_test_models:linear"
# A ring without the preempted worker: re-formed after the loss, or shrunk (or restarted) on YARN's
# preemption warning, which comes ~10 s before the container is lost (issue 12).
NEW_RING = ("ring_reformed", "ring_shrunk", "ring_restarted")


def since_warning(lost: dict) -> float:
    """When the job first knew of a loss: its warning when one came (``warned_s`` before it)."""
    return lost["time"] - (lost.get("warned_s") or 0)


def train_args(dataset: str, strategy: str, model: str, epochs: int, extra=()) -> tuple[str, list[str]]:
    """(job run folder, `tfhadoop train` arguments) of the bench's job: 2 workers (``extra`` may
    change it), tasks of 1 000 records, batch 64 per worker; the PS mode adds 1 PS."""
    run = f"{dataset.rsplit('/', 1)[0]}/{strategy}-{uuid.uuid4().hex[:8]}"
    return run, ["--strategy", strategy, "--model", model, "--python-path", TEST_MODELS_DIR,
                 "--python-path", JOB_MODELS_DIR, "--data", dataset, "--label", "y",
                 "--workers", "2", "--epochs", str(epochs), "--task-records", "1000", "--batch-size", "64",
                 "--worker-memory", "1g", *(["--ps", "1"] if strategy == "ps" else []), *extra]


def wait_for(proc: subprocess.Popen[str], run: str, seen, what: str) -> list[dict]:
    """The job's events once ``seen(events)`` holds; exits saying so, with the job's output, if the
    job ended first (e.g. before a preemption landed: give it more epochs)."""
    while True:
        ev = events(run)
        if seen(ev):
            return ev
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise SystemExit(f"the job ended (exit {proc.returncode}) before {what}:\n{(out + err)[-3000:]}")
        time.sleep(1)


def throughput(dataset: str, model: str, epochs: int) -> dict:
    out: dict = {}
    for strategy in ("ps", "allreduce"):
        run, args = train_args(dataset, strategy, model, epochs)
        wall = run_train(run, *args)
        m = metrics(run)
        examples = sum(e["examples"] for e in m["epochs"])
        out[strategy] = {"examples": examples, "train_s": round(m["train_seconds"], 2),
                         "examples_per_s": round(examples / m["train_seconds"], 1), "wall_s": round(wall, 1)}
        log(model, strategy, out[strategy])
    out["ratio_allreduce_over_ps"] = round(out["allreduce"]["examples_per_s"] / out["ps"]["examples_per_s"], 2)
    return out


def preemption(dataset: str, epochs: int) -> dict:
    """One worker of two preempted by `urgent` once the job has trained; resources back after
    the ring of one has trained for a while."""
    import skein

    run, args = train_args(dataset, "allreduce", LINEAR, epochs,
                           extra=["--min-workers", "1", "--queue", "train", "--worker-memory", "5g"])
    proc = start_train(run, *args)
    try:
        wait_for(proc, run, lambda ev: any(e["event"] == "first_round" for e in ev), "its first round")
        time.sleep(10)
        with skein.Client() as client, urgent_app(client):  # takes a `train` worker back
            ev = wait_for(proc, run, lambda ev: any(e["event"] in NEW_RING for e in ev),
                          "a ring without the preempted worker")
            reformed = [e for e in ev if e["event"] in NEW_RING][0]
            wait_for(proc, run, lambda ev: any(e["event"] == "first_round" and e["gen"] == reformed["gen"] for e in ev),
                     "the re-formed ring trained")
            time.sleep(10)
        proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
    ev = events(run)
    lost = lost_events(ev)[0]
    first = {e["gen"]: e["time"] for e in ev if e["event"] == "first_round"}
    out = {"returncode": proc.returncode, "lost_diagnostics": lost.get("diagnostics"),
           "new_ring": reformed["event"], "warned_s": lost.get("warned_s"),
           # negative: the ring was re-formed on the warning, before the container was lost
           "loss_to_reformed_ring_s": round(reformed["time"] - lost["time"], 1),
           "loss_to_training_again_s": round(first[reformed["gen"]] - lost["time"], 1)}
    grown = [e for e in ev if e["event"] == "ring_grown"]
    stop = [e for e in ev if e["event"] == "ring_stop_requested"]
    if grown and stop and grown[-1]["gen"] in first:
        out["stop_request_to_grown_ring_training_s"] = round(first[grown[-1]["gen"]] - stop[-1]["time"], 1)
    m = metrics(run)
    out["epoch_examples"] = sorted({e["examples"] for e in m["epochs"]})
    log("preemption", out)
    return out


def goodput_part(dataset: str, epochs: int, every: float, commits: list[int]) -> dict:
    """The same 3-worker job undisturbed, then with a worker preempted every ``every`` s, once per
    ``--commit-every-steps`` value in ``commits`` (0: no in-memory commit, the HDFS checkpoint only)."""
    extra = ["--workers", "3", "--min-workers", "1", "--queue", "train", "--worker-memory", "4g"]
    out: dict = {}
    run, args = train_args(dataset, "allreduce", LINEAR, epochs, extra=extra)
    wall = run_train(run, *args)
    m = metrics(run)
    out["undisturbed"] = {"train_s": round(m["train_seconds"], 1), "wall_s": round(wall, 1),
                          "examples_per_s": round(sum(e["examples"] for e in m["epochs"]) / m["train_seconds"], 1)}
    log("undisturbed", out["undisturbed"])
    for n in commits:
        key = f"preempted_commit_every_{n}"
        out[key] = preempted(dataset, epochs, every, [*extra, "--commit-every-steps", str(n)])
        # wall time: a re-formed ring's metrics.json counts only its last training process's seconds
        out[key]["goodput"] = round(goodput(out["undisturbed"]["wall_s"], out[key]["wall_s"]), 2)
        log("goodput", key, out[key])
    return out


def preempted(dataset: str, epochs: int, every: float, extra: list) -> dict:
    import skein

    run, args = train_args(dataset, "allreduce", LINEAR, epochs, extra=extra)
    proc = start_train(run, *args)
    t0 = time.monotonic()
    preemptions = 0
    with skein.Client() as client:
        wait_for(proc, run, lambda ev: any(e["event"] == "first_round" for e in ev), "its first round")
        next_at = time.monotonic() + every
        while proc.poll() is None:
            if time.monotonic() < next_at:
                time.sleep(1)
                continue
            preempt(client, lambda: lost_events(events(run)), timeout=120,
                    running=lambda: proc.poll() is None)
            preemptions += 1
            log("preemption", preemptions, "at", round(time.monotonic() - t0), "s")
            next_at = time.monotonic() + every
        proc.communicate()
    if proc.returncode:
        raise SystemExit("preempted job failed")
    m, ev = metrics(run), events(run)
    examples = [e["examples"] for e in m["epochs"]]
    first = {e["gen"]: e for e in ev if e["event"] == "first_round"}
    rings = [e for e in ev if e["event"] in ("ring_formed", *NEW_RING, "ring_grown")]
    recoveries = []
    for lost in lost_events(ev):
        later = [r for r in rings if r["time"] >= since_warning(lost)]
        again = next((first[r["gen"]] for r in later if r["gen"] in first), None)
        full = next((first[r["gen"]] for r in later if r["workers"] == 3 and r["gen"] in first), None)
        recoveries.append({"preempted": lost["preempted"], "restored_from": again.get("restored_from") if again else None,
                           "to_training_again_s": round(again["time"] - lost["time"], 1) if again else None,
                           "redone_steps": again["redone_steps"] if again else None,
                           "to_full_speed_s": round(full["time"] - lost["time"], 1) if full else None})
    wall = time.monotonic() - t0
    return {"wall_s": round(wall, 1), "examples_per_s_wall": round(sum(examples) / wall, 1),
            "preemptions": preemptions, "every_s": every, "recoveries": recoveries,
            "redone_steps_total": sum(r["redone_steps"] or 0 for r in recoveries),
            "epoch_examples": sorted(set(examples))}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--json")
    parser.add_argument("--parts", default="throughput,preemption",
                        help="comma-separated: throughput, preemption, goodput")
    parser.add_argument("--preemption-epochs", type=int, default=12,
                        help="preemption: epochs of the job (more when the host is slow to preempt)")
    parser.add_argument("--goodput-epochs", type=int, default=40)
    parser.add_argument("--preempt-every", type=float, default=120)
    parser.add_argument("--goodput-commits", default="20,0",
                        help="goodput: the preempted job once per --commit-every-steps value (0: no in-memory commit)")
    args = parser.parse_args()
    tf_env()
    from tests.trainer.trainer_test_models import write_dataset

    with bench_cluster() as cluster:
        dataset = f"{cluster.fs}/tmp/bench-allreduce/ds-{uuid.uuid4().hex[:8]}"
        write_dataset(dataset, train_shards=(5000,) * 4, eval_records=1000, compression="none", index_interval=1 << 16)
        out = {"load_before": os.getloadavg()[0], "records": 20000, "workers": 2, "batch": 64, "task_records": 1000}
        if "throughput" in args.parts:
            out["linear"] = throughput(dataset, LINEAR, args.epochs)
            out["mlp"] = throughput(dataset, "job_models:mlp", args.epochs)
        if "preemption" in args.parts:
            out["preemption"] = preemption(dataset, args.preemption_epochs)
        if "goodput" in args.parts:
            out["goodput"] = goodput_part(dataset, args.goodput_epochs, args.preempt_every,
                                    [int(n) for n in args.goodput_commits.split(",")])
        out["load_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
