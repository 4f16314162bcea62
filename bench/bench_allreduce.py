"""Allreduce (``--strategy allreduce``) vs parameter-server mode on the embedded YARN cluster, one run:

- examples/s of the same job (same model, dataset, batch, tasks) with 2 workers in each mode
  (PS mode: + 1 parameter server and the coordinator): the job's own ``metrics.json``
  (examples trained / seconds of its training loop), and submit -> end wall time;
- an allreduce job whose worker is preempted by YARN (an application in the `urgent` queue):
  seconds from the loss to the re-formed ring's first round (``first_round`` event), and from
  the stop request to the grown ring's first round once resources return;
- goodput (``--parts goodput``): 3 workers, one preempted by YARN every ``--preempt-every`` s
  (an `urgent` application, shut down as soon as the loss is seen so the replacement can come)
  vs the same job undisturbed: examples trained (each once) per second of the training loop, the
  ratio, and per preemption the seconds from the loss to training again (ring of 2) and to full
  speed (the ring of 3 grown back: its first round), with the steps redone.

Reproduce (≈ 6 min; starts and stops its own embedded cluster unless HADOOP_CONF_DIR is set):

    .venv/bin/python bench/bench_allreduce.py [--epochs 3] [--json /tmp/bench_allreduce.json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODELS = os.path.join(ROOT, "tests", "trainer")
sys.path.insert(0, MODELS)
sys.path.insert(0, HERE)


def mlp():
    """A small MLP (4 -> 64 -> 64 -> 1, Adam): more arithmetic per step than the linear model."""
    import tf_keras

    model = tf_keras.Sequential([tf_keras.Input((4,), name="x"), tf_keras.layers.Dense(64, activation="relu"),
                                 tf_keras.layers.Dense(64, activation="relu"), tf_keras.layers.Dense(1)])
    model.compile(optimizer=tf_keras.optimizers.Adam(1e-3), loss="mse")
    return model


def log(*args):
    print(time.strftime("%H:%M:%S"), *args, flush=True)


def train(conf, dataset: str, strategy: str, model: str, epochs: int, extra=(), background=False):
    run = f"{conf.default_fs.rstrip('/')}/tmp/bench-allreduce/{strategy}-{uuid.uuid4().hex[:8]}"
    cmd = [sys.executable, "-m", "tfhadoop", "train", "--strategy", strategy, "--model", model,
           "--python-path", MODELS, "--python-path", HERE, "--data", dataset, "--label", "y",
           "--workers", "2", "--epochs", str(epochs), "--task-records", "1000", "--batch-size", "64",
           "--worker-memory", "1g", "--checkpoint-dir", f"{run}/ckpt", "--export-dir", f"{run}/model",
           *(["--ps", "1"] if strategy == "ps" else []), *extra]
    if background:
        return run, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"{strategy} job failed:\n{(proc.stdout + proc.stderr)[-3000:]}")
    return run, time.monotonic() - t0


def metrics(run: str) -> dict:
    from tfhadoop.connectors import hdfs

    return json.loads(hdfs.read_bytes(f"{run}/ckpt/metrics.json"))


def events(run: str) -> list:
    from tfhadoop.connectors import hdfs

    try:
        return [json.loads(line) for line in hdfs.read_bytes(f"{run}/ckpt/events.jsonl").decode().splitlines()]
    except Exception:  # noqa: BLE001 - not written yet
        return []


def throughput(conf, dataset: str, model: str, epochs: int) -> dict:
    out = {}
    for strategy in ("ps", "allreduce"):
        run, wall = train(conf, dataset, strategy, model, epochs)
        m = metrics(run)
        examples = sum(e["examples"] for e in m["epochs"])
        out[strategy] = {"examples": examples, "train_s": round(m["train_seconds"], 2),
                         "examples_per_s": round(examples / m["train_seconds"], 1), "wall_s": round(wall, 1)}
        log(model, strategy, out[strategy])
    out["ratio_allreduce_over_ps"] = round(out["allreduce"]["examples_per_s"] / out["ps"]["examples_per_s"], 2)
    return out


def preemption(conf, dataset: str, epochs: int) -> dict:
    """One worker of two preempted by `urgent` once the job has trained; resources back after
    the ring of one has trained for a while."""
    import skein

    run, proc = train(conf, dataset, "allreduce", "trainer_test_models:linear", epochs, background=True,
                      extra=["--min-workers", "1", "--queue", "train", "--worker-memory", "5g"])
    urgent = None
    try:
        while not any(e["event"] == "first_round" for e in events(run)):
            if proc.poll() is not None:
                raise SystemExit(proc.stderr.read()[-3000:])
            time.sleep(1)
        time.sleep(10)
        with skein.Client() as client:
            urgent = client.submit_and_connect(skein.ApplicationSpec(  # takes a `train` worker back
                name="urgent", queue="urgent", max_attempts=1,
                master=skein.Master(resources=skein.Resources(memory=256, vcores=1)),
                services={"task": skein.Service(instances=3, resources=skein.Resources(memory=2048, vcores=1),
                                                script="sleep 600")}))
            while not any(e["event"] == "ring_reformed" for e in events(run)):
                time.sleep(1)
            reformed = [e for e in events(run) if e["event"] == "ring_reformed"][0]
            while not any(e["event"] == "first_round" and e["gen"] == reformed["gen"] for e in events(run)):
                time.sleep(1)
            time.sleep(10)
            urgent.shutdown()
            urgent = None
        proc.communicate(timeout=900)
    finally:
        if urgent is not None:
            urgent.shutdown()
        if proc.poll() is None:
            proc.kill()
    ev = events(run)
    lost = [e for e in ev if e["event"] == "container_lost"][0]
    first = {e["gen"]: e["time"] for e in ev if e["event"] == "first_round"}
    out = {"returncode": proc.returncode, "lost_diagnostics": lost.get("diagnostics"),
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


def goodput(conf, dataset: str, epochs: int, every: float, commits: list[int]) -> dict:
    """The same 3-worker job undisturbed, then with a worker preempted every ``every`` s, once per
    ``--commit-every-steps`` value in ``commits`` (0: no in-memory commit, the HDFS checkpoint only)."""
    extra = ["--workers", "3", "--min-workers", "1", "--queue", "train", "--worker-memory", "4g"]
    out = {}
    run, wall = train(conf, dataset, "allreduce", "trainer_test_models:linear", epochs, extra=extra)
    m = metrics(run)
    out["undisturbed"] = {"train_s": round(m["train_seconds"], 1), "wall_s": round(wall, 1),
                          "examples_per_s": round(sum(e["examples"] for e in m["epochs"]) / m["train_seconds"], 1)}
    log("undisturbed", out["undisturbed"])
    for n in commits:
        key = f"preempted_commit_every_{n}"
        out[key] = preempted(conf, dataset, epochs, every, [*extra, "--commit-every-steps", str(n)])
        # wall time: a re-formed ring's metrics.json counts only its last training process's seconds
        out[key]["goodput_ratio"] = round(out["undisturbed"]["wall_s"] / out[key]["wall_s"], 2)
        log("goodput", key, out[key])
    return out


def preempted(conf, dataset: str, epochs: int, every: float, extra: list) -> dict:
    import skein

    run, proc = train(conf, dataset, "allreduce", "trainer_test_models:linear", epochs, extra=extra, background=True)
    t0 = time.monotonic()
    preemptions = 0
    with skein.Client() as client:
        while not any(e["event"] == "first_round" for e in events(run)):
            if proc.poll() is not None:
                raise SystemExit(proc.stderr.read()[-3000:])
            time.sleep(1)
        next_at = time.monotonic() + every
        while proc.poll() is None:
            if time.monotonic() < next_at:
                time.sleep(1)
                continue
            lost_before = sum(e["event"] == "container_lost" for e in events(run))
            urgent = client.submit_and_connect(skein.ApplicationSpec(
                name="urgent", queue="urgent", max_attempts=1,
                master=skein.Master(resources=skein.Resources(memory=256, vcores=1)),
                services={"task": skein.Service(instances=3, resources=skein.Resources(memory=2048, vcores=1),
                                                script="sleep 600")}))
            try:
                deadline = time.monotonic() + 120
                while sum(e["event"] == "container_lost" for e in events(run)) == lost_before and \
                        proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.5)
            finally:
                urgent.shutdown()
            preemptions += 1
            log("preemption", preemptions, "at", round(time.monotonic() - t0), "s")
            next_at = time.monotonic() + every
        proc.communicate()
    if proc.returncode:
        raise SystemExit("preempted job failed")
    m, ev = metrics(run), events(run)
    examples = [e["examples"] for e in m["epochs"]]
    first = {e["gen"]: e for e in ev if e["event"] == "first_round"}
    rings = [e for e in ev if e["event"] in ("ring_formed", "ring_reformed", "ring_grown")]
    recoveries = []
    for lost in (e for e in ev if e["event"] == "container_lost"):
        later = [r for r in rings if r["time"] >= lost["time"]]
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--json")
    parser.add_argument("--parts", default="throughput,preemption",
                        help="comma-separated: throughput, preemption, goodput")
    parser.add_argument("--goodput-epochs", type=int, default=40)
    parser.add_argument("--preempt-every", type=float, default=120)
    parser.add_argument("--goodput-commits", default="20,0",
                        help="goodput: the preempted job once per --commit-every-steps value (0: no in-memory commit)")
    args = parser.parse_args()
    for k, v in {"TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}.items():
        os.environ.setdefault(k, v)
    from benchcluster import bench_cluster
    from trainer_test_models import write_dataset

    with bench_cluster() as conf:
        dataset = f"{conf.default_fs.rstrip('/')}/tmp/bench-allreduce/ds-{uuid.uuid4().hex[:8]}"
        write_dataset(dataset, train_shards=(5000,) * 4, eval_records=1000, compression="none", index_interval=1 << 16)
        out = {"load_before": os.getloadavg()[0], "records": 20000, "workers": 2, "batch": 64, "task_records": 1000}
        if "throughput" in args.parts:
            out["linear"] = throughput(conf, dataset, "trainer_test_models:linear", args.epochs)
            out["mlp"] = throughput(conf, dataset, "bench_allreduce:mlp", args.epochs)
        if "preemption" in args.parts:
            out["preemption"] = preemption(conf, dataset, 12)
        if "goodput" in args.parts:
            out["goodput"] = goodput(conf, dataset, args.goodput_epochs, args.preempt_every,
                                    [int(n) for n in args.goodput_commits.split(",")])
        out["load_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
