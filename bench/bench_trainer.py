"""The YARN trainer end to end on the embedded cluster (issue 5's measurements), one run:

- examples/s of a fault-free job (3 workers + 1 PS, `train` queue);
- the same job while one worker of three is preempted by YARN every ``--preempt-every`` s
  (an application in the `urgent` queue makes the CapacityScheduler take back a `train`
  container; it is killed once the job reports the loss, so the replacement can start):
  goodput (bench.common.goodput: fault-free wall time / faulted wall time, submit -> exit), and
  the ratio of examples/s over the coordinator's training loop (train_seconds) as a cross-check;
- seconds from each replacement container's start (Skein ``Container.start_time``) to the
  coordinator's ``rejoins`` entry for its slot;
- seconds from a parameter server's loss (PS container killed through Skein) to the restarted
  coordinator's first progress report;
- seconds from ``submit()`` to the first progress report, for every job.

Workers read their shards over hdfs:// (no localization), so the input path is measured where it
lies: TFRecordDataset over hdfs:// vs local files in bench.bench_tfhdfs, a task's cost by its
position in a shard in bench.bench_task_offsets, and training throughput against model.fit
under ParameterServerStrategy in bench.bench_trainer_peers and bench.bench_trainer_steps.

Reproduce (≈ 25 min; starts and stops its own embedded cluster unless HADOOP_CONF_DIR is set):

    .venv/bin/python -m bench.bench_trainer [--json /tmp/bench_trainer.json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import threading
import time
import uuid

from bench.common import (
    ROOT,
    TEST_MODELS_DIR,
    bench_cluster,
    events,
    goodput,
    log,
    lost_events,
    metrics,
    preempt,
    tf_env,
)


# -- a training job and what happens to it ------------------------------------------------------
class Watch:
    """Polls a running job's Skein key-value store and containers (the values go away with the
    application): progress with the coordinator's own timestamps, each worker's `up` record, every
    container's start/finish time (``run_job`` injects the faults)."""

    def __init__(self, app_id: str, expected_epochs: int):
        self.app_id, self.epochs = app_id, expected_epochs
        self.progress, self.up, self.containers, self.events = [], {}, {}, []
        self.faults, self.notes = [], []

    def follow_progress(self, app, stop: threading.Event) -> None:
        """Every `progress` value the coordinator publishes (about one a second, with its own timestamp),
        polled often enough (one a second) that none is missed."""
        while not stop.is_set():
            p = self.kv(app, "progress")
            if p and (not self.progress or p != self.progress[-1]):
                self.progress.append(p)
            stop.wait(0.2)

    def kv(self, app, key):
        try:
            value = app.kv.get(key)
        except Exception:  # noqa: BLE001 - application going away
            return None
        return json.loads(value.decode()) if value else None

    def poll(self, app, workers: int) -> None:
        import skein

        for slot in range(workers):
            u = self.kv(app, f"up/worker/{slot}")
            if u:
                self.up.setdefault(u["container"], {**u, "slot": slot})
        self.events = self.kv(app, "events") or self.events
        try:
            for c in app.get_containers(states=list(skein.model.ContainerState)):
                self.containers[c.id] = {"service": c.service_name, "yarn": c.yarn_container_id, "state": str(c.state),
                                         "start": c.start_time.timestamp() if c.start_time else None,
                                         "finish": c.finish_time.timestamp() if c.finish_time else None}
        except Exception:  # noqa: BLE001 - application going away
            pass

    def lost(self) -> list[dict]:
        return lost_events(self.events)


def run_job(args, dataset: str, tag: str, epochs: int, fault: str | None) -> dict:
    """Submit the job through the product's Python API, follow it, inject ``fault`` ('preempt' or
    'ps') and collect metrics.json, events.jsonl and the checkpoint times from HDFS."""
    import skein

    from tfhadoop import hadoop
    from tfhadoop.connectors import hdfs
    from tfhadoop.trainer.follow import follow
    from tfhadoop.trainer.spec import JobSpec
    from tfhadoop.trainer.submit import submit

    run = hadoop.use_cluster().default_fs.rstrip("/") + f"/tmp/bench-trainer/{tag}-{uuid.uuid4().hex[:6]}"
    job = JobSpec(model="trainer_test_models:linear", data=dataset, label="y", checkpoint_dir=f"{run}/ckpt",
                  export_dir=f"{run}/model", workers=3, min_workers=1, ps=1, worker_memory=args.worker_memory,
                  ps_memory="1g", master_memory="2g", queue="train", epochs=epochs, batch_size=args.batch_size,
                  task_records=args.task_records, checkpoint_secs=args.checkpoint_secs,
                  name=f"bench-trainer-{tag}", python_path=[TEST_MODELS_DIR]).validate()
    log(f"[{tag}] submitting: 3 workers + 1 PS, {epochs} epochs, fault={fault}")
    t_submit = time.time()
    app_id = submit(job)
    result: dict = {}
    follower = threading.Thread(target=lambda: result.update(follow(app_id, job.checkpoint_dir, out=open(os.devnull, "w"))),
                                daemon=True)
    follower.start()
    watch = Watch(app_id, epochs)
    with skein.Client() as client:
        app = client.connect(app_id, wait=True)
        stop = threading.Event()
        poller = threading.Thread(target=watch.follow_progress, args=(app, stop), daemon=True)
        poller.start()
        next_fault = None
        try:
            while follower.is_alive():
                watch.poll(app, 3)
                now = time.time()
                if watch.progress and next_fault is None:
                    next_fault = now + (args.preempt_every if fault == "preempt" else args.ps_kill_after)
                last = watch.progress[-1] if watch.progress else None
                training = last is not None and not (last["epoch"] == epochs - 1 and last["examples"] == last["expected"])
                if fault == "preempt" and next_fault and now >= next_fault and training:
                    assert last is not None
                    log(f"[{tag}] urgent app submitted (epoch {last['epoch']})")
                    t_urgent, new = preempt(client, watch.lost, timeout=args.preempt_timeout,
                                            running=follower.is_alive, tick=lambda: watch.poll(app, 3),
                                            memory_mb=args.urgent_memory, containers=args.urgent_tasks)
                    if new:
                        e = new[0]
                        watch.faults.append({"kind": "yarn_preemption", "urgent_submitted": t_urgent,
                                             "lost": e["time"], "role": e["role"], "slot": e["slot"],
                                             "container": e["container"], "diagnostics": e.get("diagnostics")})
                        log(f"[{tag}] lost {e['role']}:{e['slot']} ({e.get('diagnostics')}), "
                            f"{e['time'] - t_urgent:.1f} s after the urgent app; urgent app killed")
                        if e["role"] != "worker":
                            watch.notes.append(f"preemption took {e['role']}:{e['slot']}, not a worker")
                    elif follower.is_alive():
                        running = [c for c in app.get_containers(services=["worker"]) if str(c.state) == "RUNNING"]
                        msg = f"no preemption within {args.preempt_timeout} s; killed {running[-1].id} through Skein"
                        log(f"[{tag}] " + msg)
                        watch.notes.append(msg)
                        app.kill_container(running[-1].id)
                        watch.faults.append({"kind": "skein_kill", "killed": time.time(), "container": running[-1].id})
                    next_fault = next_fault + args.preempt_every
                if fault == "ps" and next_fault and now >= next_fault and not watch.faults and training:
                    assert last is not None
                    ps = [c for c in app.get_containers(services=["ps"]) if str(c.state) == "RUNNING"]
                    t_kill = time.time()
                    app.kill_container(ps[0].id)
                    watch.faults.append({"kind": "ps_killed", "killed": t_kill, "container": ps[0].id})
                    log(f"[{tag}] killed {ps[0].id} (PS) through Skein at epoch {last['epoch']}")
                time.sleep(0.5)
        finally:
            stop.set()
    follower.join()
    t_end = time.time()
    poller.join()
    log(f"[{tag}] {result.get('final_status')} ({result.get('state')}) {str(result.get('diagnostics'))[:3000]}")
    if result.get("final_status") != "SUCCEEDED":
        for e in result.get("events") or []:
            log(f"[{tag}] event", json.dumps({k: v for k, v in e.items() if k != "cluster"})[:1500])
        raise RuntimeError(f"{tag} job {app_id} did not succeed: {result.get('diagnostics')}")
    ckpts = sorted(int(n[len("ckpt-"):]) / 1e9 for n in hdfs.list_names(f"{run}/ckpt") if n.startswith("ckpt-"))
    return {"tag": tag, "app_id": app_id, "run": run, "submit": t_submit, "end": t_end, "final_status": result.get("final_status"),
            "metrics": metrics(run), "events": events(run), "checkpoints": ckpts, "progress": watch.progress,
            "up": watch.up, "containers": watch.containers, "faults": watch.faults, "notes": watch.notes,
            "epochs": epochs, "dataset_records": None}


# -- what each run says ---------------------------------------------------------------------------
def summarize(r: dict, records: int) -> dict:
    """Useful examples per second (over the coordinator's train_seconds, and over first -> last
    progress report), submit -> first progress report, and per-epoch exactness. A report's time is the
    coordinator's own timestamp in its `progress` value."""
    m, ev = r["metrics"], r["events"]
    starts = [e for e in ev if e["event"] == "coordinator_started"]
    firsts = [e for e in ev if e["event"] == "first_progress"]
    done = sum(e["examples"] for e in m["epochs"])
    first, last = r["progress"][0], r["progress"][-1]
    return {"examples": done, "epochs_exact": [e["examples"] for e in m["epochs"]] == [records] * r["epochs"],
            "per_epoch": [e["examples"] for e in m["epochs"]],
            "coordinator_starts": len(starts), "train_seconds": m["train_seconds"],
            "examples_per_s_train_seconds": done / m["train_seconds"],
            "first_to_last_progress_s": last["time"] - first["time"], "first_progress_examples": first["examples"],
            "progress_reports_seen": len(r["progress"]), "first_progress_seen_steps": first["steps"],
            "submit_to_coordinator_begin_s": starts[0]["time"] - r["submit"],
            "submit_to_first_progress_s": first["time"] - r["submit"],
            "submit_to_first_progress_event_s": (firsts[0]["time"] - r["submit"]) if firsts else None,
            "submit_to_first_checkpoint_s": (r["checkpoints"][0] - r["submit"]) if r["checkpoints"] else None,
            "first_step_s_metric": m.get("first_step_s"), "final_status": r["final_status"],
            "wall_s": r["end"] - r["submit"]}


def replacement_times(r: dict) -> list[dict]:
    """Each replacement worker: its container's start (Skein) -> the coordinator's rejoin of its slot."""
    out = []
    lost = [e for e in r["events"] if e["event"] == "container_lost" and e["role"] == "worker"]
    for cid, up in sorted(r["up"].items(), key=lambda kv: kv[1]["started"]):
        c = r["containers"].get(cid)
        if c is None or not any(e["time"] < up["started"] and e["slot"] == up["slot"] for e in lost):
            continue  # one of the first three workers
        rejoin = [j["time"] for j in r["metrics"].get("rejoins", [])
                  if j["slot"] == up["slot"] and j["time"] > c["start"]]
        out.append({"slot": up["slot"], "container": cid, "container_start": c["start"], "server_up": up["started"],
                    "rejoined": rejoin[0] if rejoin else None, "training_end": r["progress"][-1]["time"],
                    "start_to_rejoin_s": (rejoin[0] - c["start"]) if rejoin else None,
                    "start_to_server_up_s": up["started"] - c["start"]})
    return out


def ps_recovery(r: dict) -> dict:
    """PS lost (the master's container_lost event; also from our kill call) -> the first progress the
    restarted coordinator completed: the first `progress` timestamp after the loss (cross-checks:
    the master's `first_progress` event, noticed in its 1 s loop, and the first ckpt-<ns> uploaded)."""
    lost = next(e for e in r["events"] if e["event"] == "container_lost" and e["role"] == "ps")
    kill = r["faults"][0]["killed"] if r["faults"] else None
    after = lambda ts: next((t for t in ts if t > lost["time"]), None)  # noqa: E731
    restarted = after([e["time"] for e in r["events"] if e["event"] == "coordinator_started"])
    progress_event = after([e["time"] for e in r["events"] if e["event"] == "first_progress"])
    resumed = after([p["time"] for p in r["progress"]])
    ck = after(r["checkpoints"])
    since = lambda t, t0: (t - t0) if t is not None and t0 is not None else None  # noqa: E731
    return {"kill_call": kill, "lost_event": lost["time"], "coordinator_begun": restarted, "resumed": resumed,
            "lost_to_resumed_s": since(resumed, lost["time"]), "kill_to_resumed_s": since(resumed, kill),
            "kill_to_lost_event_s": since(lost["time"], kill),
            "lost_to_coordinator_begin_s": since(restarted, lost["time"]),
            "lost_to_first_progress_event_s": since(progress_event, lost["time"]),
            "lost_to_first_checkpoint_s": since(ck, lost["time"])}


def git_state() -> dict:
    """The commit and the uncommitted trainer changes the run used (the tree is shared and moves)."""
    run = lambda *a: subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True).stdout.strip()  # noqa: E731
    return {"head": run("rev-parse", "HEAD"), "dirty": run("status", "--short", "--", "trainer", "tfhadoop", "yarn")}


def fmt(v, unit="", nd=1):
    return "n/a" if v is None else f"{v:.{nd}f}{unit}"


def main() -> int:
    doc = __doc__ or ""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=doc.split("\n\n", 1)[1])
    ap.add_argument("--json", default="/tmp/bench_trainer.json", help="where the JSON summary goes")
    ap.add_argument("--shards", type=int, default=8, help="train shards (gzip TFRecord)")
    ap.add_argument("--shard-records", type=int, default=12500, help="records per train shard")
    ap.add_argument("--epochs", type=int, default=20, help="epochs of the fault-free and the preempted job")
    ap.add_argument("--ps-epochs", type=int, default=8, help="epochs of the job whose PS is killed")
    ap.add_argument("--task-records", type=int, default=1000)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--checkpoint-secs", type=float, default=None,
                    help="the job's checkpoint interval in seconds (default: the product's default)")
    ap.add_argument("--worker-memory", default="3g",
                    help="per worker: 2g master + 1g PS + 3 x 3g = 12 of 16 GiB in `train`")
    ap.add_argument("--preempt-every", type=float, default=120, help="seconds between preemptions")
    ap.add_argument("--preempt-timeout", type=float, default=90,
                    help="no preemption this long after the urgent app: kill a worker through Skein instead")
    ap.add_argument("--urgent-memory", type=int, default=2048, help="MiB per urgent container")
    ap.add_argument("--urgent-tasks", type=int, default=3, help="urgent containers (256 MiB AM + 3 x 2 GiB)")
    ap.add_argument("--ps-kill-after", type=float, default=45, help="kill the PS this long after the first progress")
    ap.add_argument("--no-bracket", dest="bracket", action="store_false",
                    help="no second fault-free run at the end (goodput then compares against one run)")
    ap.add_argument("--skip", default="", help="comma list of parts to skip: baseline,preempt,ps")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))

    load_start = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    log("load average at start:", load_start)
    tf_env()
    from tests.trainer.trainer_test_models import write_dataset

    out = {"started": started, "load_start": load_start, "args": vars(args), "git": git_state()}
    try:
        with bench_cluster() as cluster:
            dataset = f"{cluster.fs}/tmp/bench-trainer/ds-{uuid.uuid4().hex[:6]}"
            t0 = time.time()
            write_dataset(dataset, train_shards=(args.shard_records,) * args.shards, eval_records=2000)
            records = args.shards * args.shard_records
            log(f"dataset: {records} train examples in {args.shards} gzip shards, written in {time.time() - t0:.0f} s")
            out["dataset"] = {"url": dataset, "train_records": records, "shards": args.shards}

            runs, out["errors"] = {}, {}
            plan = [("baseline", args.epochs, None), ("preempt", args.epochs, "preempt"), ("ps", args.ps_epochs, "ps")]
            if args.bracket:  # a second fault-free run after the faulted ones: load drifts on a shared host
                plan.append(("baseline2", args.epochs, None))
            for tag, epochs, fault in plan:
                if tag in skip:
                    continue
                try:
                    runs[tag] = run_job(args, dataset, tag, epochs, fault)
                except Exception as exc:  # noqa: BLE001 - reported; the other measurements still run
                    log(f"[{tag}] FAILED: {type(exc).__name__}: {exc}")
                    out["errors"][tag] = f"{type(exc).__name__}: {exc}"
            out["runs"] = {k: {**v, "summary": summarize(v, records)} for k, v in runs.items()}
            if "preempt" in runs:
                out["replacements"] = replacement_times(runs["preempt"])
            if "ps" in runs:
                out["ps_recovery"] = ps_recovery(runs["ps"])
    finally:
        out["load_end"] = os.getloadavg()
        out["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=str)
    report(out)
    return 0


def report(out: dict) -> None:
    """The numbers against the issue's targets."""
    print("\n== YARN trainer bench", out["started"], "->", out["finished"])
    print("load average start", out["load_start"], "end", out["load_end"])
    runs = out.get("runs", {})
    for tag, r in runs.items():
        s = r["summary"]
        print(f"[{tag}] {s['final_status']}: {s['examples']} examples, epochs exact: {s['epochs_exact']}, "
              f"coordinator starts {s['coordinator_starts']}, train_seconds {s['train_seconds']:.1f} "
              f"-> {s['examples_per_s_train_seconds']:.0f} ex/s; first->last progress {s['first_to_last_progress_s']:.1f} s; "
              f"submit -> coordinator begins {s['submit_to_coordinator_begin_s']:.1f} s, "
              f"submit -> first progress {s['submit_to_first_progress_s']:.1f} s (target <= 30; master's first_progress "
              f"event {fmt(s['submit_to_first_progress_event_s'], ' s')})")
        for n in r["notes"]:
            print(f"[{tag}] NOTE: {n}")
    bases = [runs[t]["summary"] for t in ("baseline", "baseline2") if t in runs]
    if bases and "preempt" in runs:
        p = runs["preempt"]["summary"]
        base_rate = sum(b["examples_per_s_train_seconds"] for b in bases) / len(bases)
        base_rate = sum(b["examples"] / b["first_to_last_progress_s"] for b in bases) / len(bases)
        g = p["examples_per_s_train_seconds"] / base_rate
        g2 = (p["examples"] / p["first_to_last_progress_s"]) / base_rate
        each = [p["examples_per_s_train_seconds"] / b["examples_per_s_train_seconds"] for b in bases]
        gp = goodput(sum(b["wall_s"] for b in bases) / len(bases), p["wall_s"])
        out["goodput"] = {"goodput": gp, "train_seconds_ratio": g, "first_to_last_progress_ratio": g2,
                          "train_seconds_ratio_vs_each_baseline": each, "baseline_examples_per_s": base_rate}
        kinds = [f["kind"] + ":" + str(f.get("role", "worker")) for f in runs["preempt"]["faults"]]
        if len(kinds) < 2:
            print(f"WARNING: only {len(kinds)} preemption(s): the faulted run was shorter than 2 x --preempt-every; "
                  "raise --epochs")
        print(f"goodput (fault-free wall / faulted wall, mean of {len(bases)} fault-free) = {gp:.3f} (target >= 0.8); "
              f"examples/s over train_seconds, faulted / fault-free = {g:.3f} (vs each fault-free run "
              f"{', '.join(f'{x:.3f}' for x in each)}); "
              f"over first->last progress: {g2:.3f}; faults: {kinds}; "
              f"per-epoch counts exact in the faulted run: {p['epochs_exact']}")
    for tag, err in out.get("errors", {}).items():
        print(f"[{tag}] ERROR: {err}")
    for rp in out.get("replacements", []):
        late = "" if rp["rejoined"] else f" (training ended {rp['training_end'] - rp['container_start']:.1f} s after its start)"
        print(f"replacement worker {rp['slot']} ({rp['container']}): container start -> rejoined "
              f"{fmt(rp['start_to_rejoin_s'], ' s')}{late} (server up after {rp['start_to_server_up_s']:.1f} s)")
    if out.get("replacements"):
        vals = [r["start_to_rejoin_s"] for r in out["replacements"] if r["start_to_rejoin_s"] is not None]
        print(f"replacement start -> first step: max {fmt(max(vals) if vals else None, ' s')} (target <= 30)")
    if "ps_recovery" in out:
        pr = out["ps_recovery"]
        print(f"PS lost (event) -> restarted coordinator's first progress: {fmt(pr['lost_to_resumed_s'], ' s')} (target <= 60); "
              f"from the kill call {fmt(pr['kill_to_resumed_s'], ' s')}; lost -> coordinator begins "
              f"{fmt(pr['lost_to_coordinator_begin_s'], ' s')}; master's first_progress event "
              f"{fmt(pr['lost_to_first_progress_event_s'], ' s')}; first checkpoint {fmt(pr['lost_to_first_checkpoint_s'], ' s')}")
    with open(out["args"]["json"], "w") as f:
        json.dump(out, f, indent=1, default=str)
    print("JSON:", out["args"]["json"])


if __name__ == "__main__":
    raise SystemExit(main())
