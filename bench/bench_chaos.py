"""Chaos run of the YARN trainer (issue 12): one training job on the embedded cluster while a
seeded random fault hits it every 60-120 s, and the same job without faults for comparison.

Faults, drawn with ``random.Random(--seed)`` (the sequence is printed before the run):
- ``preempt``: an application in the `urgent` queue makes the CapacityScheduler take back a
  container of the job's `train` queue (killed once the job reports the loss; if no preemption
  comes within 90 s a worker is killed through Skein instead, and the run says so);
- ``kill_worker`` / ``kill_ps``: SIGKILL to the role's process (its pid from ``up/<role>/<slot>``);
- ``kill_am``: SIGKILL to the application master's JVM (YARN starts attempt 2; the job allows
  ``MAX_AM_ATTEMPTS`` = 2 attempts, so at most one such fault is drawn per run);
- ``restart_nm``: the extra NodeManager on 127.0.0.2 is killed with its containers (a node losing
  power) and started again 20 s later.

Reported: both jobs' final status, exact per-epoch counts, steps redone (the drops of the
coordinator's step counter: work run again after a restart from a checkpoint), goodput = fault-free
wall time / faulted wall time (submit -> end), and for each fault the seconds until the job trains
at >= 80 % of the fault-free step rate again (over a 30 s window, past its step count before the fault).

Reproduce (starts and stops its own embedded cluster):

    .venv/bin/python -m bench.bench_chaos --seed 12 --epochs 30 [--json /tmp/chaos.json]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import threading
import time
import uuid

from bench.common import (
    TEST_MODELS_DIR,
    bench_cluster,
    events,
    goodput,
    log,
    lost_events,
    metrics,
    preempt,
    start_train,
    tf_env,
)
from tfhadoop.yarn.embedded import application_master_pid

FAULTS = ("preempt", "kill_worker", "kill_ps", "kill_am", "restart_nm")
WORKERS = 3


def fault_plan(seed: int, horizon_s: float) -> list[tuple[float, str]]:
    """(seconds after the first progress report, fault) every 60-120 s up to ``horizon_s``; one ``kill_am`` at most."""
    rng, t, plan = random.Random(seed), 0.0, []
    while True:
        t += rng.uniform(60, 120)
        if t > horizon_s:
            return plan
        kinds = [k for k in FAULTS if k != "kill_am" or all(f != "kill_am" for _, f in plan)]
        plan.append((round(t, 1), rng.choice(kinds)))


class Job:
    """``tfhadoop train`` in a subprocess, its key-value store polled (reconnecting across AM attempts)."""

    def __init__(self, args, dataset: str, tag: str):
        self.tag = tag
        self.run = f"{dataset.rsplit('/', 1)[0]}/{tag}-{uuid.uuid4().hex[:6]}"
        self.t_submit = time.time()
        self.t_end: float | None = None
        self.proc: subprocess.Popen[str] = start_train(
            self.run, "--model", "trainer_test_models:linear", "--python-path", TEST_MODELS_DIR, "--data", dataset,
            "--label", "y", "--workers", str(WORKERS), "--min-workers", "1", "--ps", "1",
            "--worker-memory", args.worker_memory, "--ps-memory", "1g", "--queue", "train",
            "--epochs", str(args.epochs), "--batch-size", "64", "--task-records", "1000",
            "--checkpoint-secs", str(args.checkpoint_secs), "--hang-timeout", "60",
            "--max-worker-restarts", "50", "--max-ps-restarts", "20")
        assert self.proc.stdout is not None and self.proc.stderr is not None
        stdout, stderr = self.proc.stdout, self.proc.stderr
        self.app_id = ""
        for line in stdout:
            if line.startswith("application "):
                self.app_id = line.split()[1]
                break
        if not self.app_id:
            raise RuntimeError("no application id: " + stderr.read()[-3000:])
        self.rest: list[str] = []
        threading.Thread(target=lambda: self.rest.extend(stdout), daemon=True).start()
        self.progress: list[dict] = []
        self._app = None

    def kv(self, key):
        import skein

        for _ in range(2):
            try:
                if self._app is None:
                    with skein.Client() as c:
                        if str(c.application_report(self.app_id).state) != "RUNNING":
                            return None
                    self._app = skein.Client().connect(self.app_id, wait=False)
                v = self._app.kv.get(key)  # pyright: ignore[reportAttributeAccessIssue] - skein's kv is a cached_property
                return json.loads(v.decode()) if v else None
            except Exception:  # noqa: BLE001 - master between attempts
                self._app = None
        return None

    def poll_progress(self):
        p = self.kv("progress")
        if p and (not self.progress or p != self.progress[-1]):
            self.progress.append({**p, "seen": time.time()})

    def done(self) -> bool:
        return self.proc.poll() is not None

    def steps(self) -> int:
        return self.progress[-1]["steps"] if self.progress else 0


def read_results(job: Job) -> dict:
    out: dict = {"returncode": job.proc.returncode, "wall_s": (job.t_end or time.time()) - job.t_submit,
                 "stdout_tail": "".join(job.rest)[-1500:]}
    try:
        out["metrics"] = metrics(job.run)
        out["events"] = events(job.run)
    except Exception as exc:  # noqa: BLE001 - reported
        out["error"] = repr(exc)
    return out


def run_clean(args, dataset) -> dict:
    job = Job(args, dataset, "clean")
    log(f"[clean] {job.app_id} submitted")
    while not job.done():
        job.poll_progress()
        time.sleep(0.5)
    job.t_end = time.time()
    r = read_results(job)
    r["progress"] = job.progress
    log(f"[clean] exit {job.proc.returncode} in {r['wall_s']:.0f} s")
    return r


class Injector:
    def __init__(self, cluster, client, job: Job, args):
        self.cluster, self.client, self.job, self.args = cluster, client, job, args
        self.nm = None
        self.rng = random.Random(args.seed + 1)

    def start_nm(self):
        self.nm = self.cluster.start_node_manager("127.0.0.2", memory_mb=self.args.nm_memory, vcores=4)

    def apply(self, kind: str) -> dict:
        job = self.job
        rec = {"kind": kind, "time": time.time(), "steps_before": job.steps()}
        if kind in ("kill_worker", "kill_ps"):
            role = "worker" if kind == "kill_worker" else "ps"
            slots = list(range(WORKERS)) if role == "worker" else [0]
            self.rng.shuffle(slots)
            for slot in slots:
                up = job.kv(f"up/{role}/{slot}")
                if up:
                    try:
                        os.kill(up["pid"], signal.SIGKILL)
                        rec.update(slot=slot, pid=up["pid"], container=up.get("container"))
                        break
                    except ProcessLookupError:
                        continue
            else:
                rec["skipped"] = f"no live {role}"
        elif kind == "kill_am":
            pid = application_master_pid(job.app_id)
            if pid:
                os.kill(pid, signal.SIGKILL)
                rec["pid"] = pid
            else:
                rec["skipped"] = "no AM process"
        elif kind == "restart_nm":
            assert self.nm is not None
            rec["containers_killed"] = self.nm.kill()
            time.sleep(20)
            self.start_nm()
            rec["restarted"] = time.time()
        elif kind == "preempt":
            t0, new = preempt(self.client, self._lost, timeout=90, running=lambda: not job.done(),
                              name="chaos-urgent")
            if new:
                rec.update(role=new[0]["role"], slot=new[0]["slot"], diagnostics=new[0].get("diagnostics"),
                           lost_after_s=round(new[0]["time"] - t0, 1))
            else:
                rec["fallback"] = "no preemption within 90 s: a worker was SIGKILLed instead"
            if "fallback" in rec and not job.done():
                rec.update(self.apply("kill_worker"))
                rec["kind"] = "preempt"
        return rec

    def _lost(self) -> list[dict]:
        return lost_events(self.job.kv("events") or [])


def run_chaos(args, dataset, cluster, plan) -> dict:
    import skein

    with skein.Client() as client:
        nm = cluster.start_node_manager("127.0.0.2", memory_mb=args.nm_memory, vcores=4)
        job = Job(args, dataset, "chaos")
        inj = Injector(cluster, client, job, args)
        inj.nm = nm
        log(f"[chaos] {job.app_id} submitted")
        faults, t_first, i = [], None, 0
        try:
            while not job.done():
                job.poll_progress()
                if t_first is None and job.progress:
                    t_first = time.time()
                if t_first is not None and i < len(plan) and time.time() - t_first >= plan[i][0]:
                    rec = inj.apply(plan[i][1])
                    rec["planned_s"] = plan[i][0]
                    faults.append(rec)
                    log(f"[chaos] fault {i + 1}/{len(plan)}: {json.dumps(rec)}")
                    i += 1
                time.sleep(0.5)
        finally:
            if inj.nm is not None:
                inj.nm.kill()
            if not job.done():
                job.proc.kill()
        job.t_end = time.time()
    r = read_results(job)
    r.update(progress=job.progress, faults=faults, faults_not_reached=plan[i:])
    log(f"[chaos] exit {job.proc.returncode} in {r['wall_s']:.0f} s; {len(faults)} faults")
    return r


def steps_redone(progress: list[dict]) -> int:
    """Drops of the step counter between consecutive progress reports: steps trained again from a checkpoint."""
    redone, top = 0, 0
    for p in progress:
        if p["steps"] < top:
            redone += top - p["steps"]
        top = max(top, p["steps"])
    return redone


def rate(progress: list[dict]) -> float:
    """Steps/s of a run from its first to its last progress report."""
    a, b = progress[0], progress[-1]
    return (b["steps"] - a["steps"]) / max(1e-9, b["seen"] - a["seen"])


def time_to_full_speed(progress, fault: dict, full: float, window: float = 30.0):
    """Seconds from the fault until a ``window``-second stretch at >= 80 % of ``full`` steps/s
    begins, counted from when the step count is again past its value at the fault."""
    after = [p for p in progress if p["seen"] >= fault["time"]]
    for k, p in enumerate(after):
        if p["steps"] < fault["steps_before"]:
            continue
        end = next((q for q in after[k:] if q["seen"] - p["seen"] >= window), None)
        if end is None:
            return None
        if (end["steps"] - p["steps"]) / (end["seen"] - p["seen"]) >= 0.8 * full:
            return round(p["seen"] - fault["time"], 1)
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--shard-records", type=int, default=12500)
    ap.add_argument("--checkpoint-secs", type=float, default=30)
    ap.add_argument("--worker-memory", default="3g")
    ap.add_argument("--nm-memory", type=int, default=4096, help="MiB of the extra NodeManager on 127.0.0.2")
    ap.add_argument("--horizon", type=float, default=900, help="faults are planned up to this many s")
    ap.add_argument("--json", default="/tmp/bench_chaos.json")
    args = ap.parse_args()
    plan = fault_plan(args.seed, args.horizon)
    log(f"seed {args.seed}: fault plan (s after the first progress report): {plan}")
    log("load average at start:", os.getloadavg())
    tf_env()
    from tests.trainer.trainer_test_models import write_dataset

    out = {"args": vars(args), "plan": plan, "load_start": os.getloadavg(), "started": time.strftime("%H:%M:%S")}
    records = args.shards * args.shard_records
    try:
        with bench_cluster(fresh=True) as cluster:  # its own: the bench adds a NodeManager and kills it
            dataset = f"{cluster.fs}/tmp/bench-chaos/ds-{uuid.uuid4().hex[:6]}"
            write_dataset(dataset, train_shards=(args.shard_records,) * args.shards, eval_records=2000)
            out["clean"] = run_clean(args, dataset)
            out["chaos"] = run_chaos(args, dataset, cluster.embedded, plan)
    finally:
        out["load_end"] = os.getloadavg()
        out["finished"] = time.strftime("%H:%M:%S")
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=str)
    report(out, records)
    return 0


def report(out: dict, records: int) -> None:
    c, x = out["clean"], out["chaos"]
    epochs = out["args"]["epochs"]
    print(f"\n== chaos bench {out['started']} -> {out['finished']}, load {out['load_start']} -> {out['load_end']}")
    print(f"seed {out['args']['seed']}, plan {out['plan']}")
    for tag, r in (("clean", c), ("chaos", x)):
        per = [e["examples"] for e in r.get("metrics", {}).get("epochs", [])]
        kinds = [e["event"] for e in r.get("events", [])]
        print(f"[{tag}] exit {r['returncode']} ({'SUCCEEDED' if r['returncode'] == 0 else 'FAILED'}), "
              f"wall {r['wall_s']:.0f} s, per-epoch exact: {per == [records] * epochs} ({len(per)} epochs), "
              f"steps redone {steps_redone(r['progress'])}, coordinator starts {kinds.count('coordinator_started')}, "
              f"am restarts {kinds.count('am_restarted')}")
    print(f"goodput (clean wall / chaos wall) = {goodput(c['wall_s'], x['wall_s']):.3f} (target >= 0.7)")
    full = rate(c["progress"])
    print(f"fault-free rate {full:.1f} steps/s")
    for f in x["faults"]:
        ttf = time_to_full_speed(x["progress"], f, full)
        extra = {k: f[k] for k in ("role", "slot", "skipped", "fallback", "containers_killed", "diagnostics") if k in f}
        print(f"  +{f['planned_s']:>6.1f} s {f['kind']:<12} {extra} -> full speed again after "
              f"{'n/a (not within the run or before the next fault)' if ttf is None else f'{ttf} s'}")
    if x.get("faults_not_reached"):
        print(f"  faults planned after the job ended: {x['faults_not_reached']}")


if __name__ == "__main__":
    raise SystemExit(main())
