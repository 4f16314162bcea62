"""The coordinator (chief) process, started by the job master inside the application master's
container: connects to the parameter servers and workers, builds the user's model, restores the
latest checkpoint, trains epoch by epoch with one closure per task, checkpoints to HDFS, and at
the end evaluates and publishes the SavedModel exactly once.

Exit status 0: done. On an error it writes ``error.json`` (type, message) into its work dir so
the master can tell a model bug (same error again: fail fast) from a lost parameter server.
"""
from __future__ import annotations

import importlib
import json
import os
import re
import sys
import time
import traceback

from tfhadoop.trainer import protocol
from tfhadoop.trainer.closures import (
    IN_FLIGHT_PER_WORKER,
    ClosureSize,
    Scheduler,
    WorkerAvoidance,
    checkpoint_request,
    within_step_budget,
)
from tfhadoop.trainer.spec import JobSettings
from tfhadoop.trainer.training_common import (
    Progress,
    build_model,
    epoch_end,
    eval_due,
    evaluate,
    input_report,
    last_eval,
    load_model_fn,
    per_second,
    plain_copy,
    training_done,
)

CLUSTER_POLL_S = 0.2  # a started coordinator looks this often for the cluster spec the master writes
REPORT_S = 1.0  # progress and TensorBoard scalars at most this often (and at every drain)


class RejoinWatch:
    """ClusterCoordinator logs when a lost worker is back ("Worker ... has been recovered"):
    those become ``rejoins`` in the key-value store (slot, task index, time), for the client and
    the event log (time from a replacement's start to its rejoining). TF names the worker by its
    task index; ``slots`` (from the master) maps it to the master's slot, which differs when
    workers joined the spec in another order."""

    PATTERN = re.compile(r"Worker /job:worker/replica:0/task:(\d+) has been recovered")

    def __init__(self, progress: Progress, slots: list):
        import logging

        self.progress, self.rejoins, self.slots = progress, [], slots
        watch = self

        class Handler(logging.Handler):
            def emit(self, record):
                m = watch.PATTERN.search(record.getMessage())
                if m:
                    task = int(m.group(1))
                    slot = watch.slots[task] if task < len(watch.slots) else task
                    watch.rejoins.append({"slot": slot, "task": task, "time": time.time()})
                    print(f"worker slot {slot} (task {task}) rejoined", flush=True)
                    watch.progress.put_list(protocol.KV_REJOINS, watch.rejoins)

        logger = logging.getLogger("tensorflow")
        logger.addHandler(Handler())
        logger.setLevel(logging.INFO)


def run(job: JobSettings, cluster: dict, work: str, app=None, phases=None) -> dict:
    """Train, evaluate and export; ``phases`` (a started PhaseReporter) tells the master's
    watchdog what it is doing."""
    import tensorflow as tf

    from tfhadoop.connectors import hdfs
    from tfhadoop.connectors.dataset import load as load_manifest
    from tfhadoop.connectors.dataset import load_indexes, slow_path_note
    from tfhadoop.trainer.checkpoints import CheckpointPolicy, HdfsCheckpoints, variables_task
    from tfhadoop.trainer.phases import PhaseReporter
    from tfhadoop.trainer.step import build_task_fn
    from tfhadoop.trainer.summaries import Summaries
    from tfhadoop.trainer.tasks import EpochLedger, plan_epoch

    phases = phases or PhaseReporter(None)
    phases.enter(protocol.PHASE_CONNECTING)
    progress = Progress(app)
    slots_file = os.path.join(work, protocol.WORKER_SLOTS_FILE)
    slots = json.load(open(slots_file)) if os.path.exists(slots_file) else list(range(len(cluster["worker"])))
    rejoin_watch = RejoinWatch(progress, slots)
    manifest = load_manifest(job.data)
    tf.config.threading.set_inter_op_parallelism_threads(len(cluster["worker"]) + len(cluster["ps"]) + 2)
    os.environ["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": "chief", "index": 0}})
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
    # before the ClusterCoordinator: its worker threads take closures from the start
    avoidance = WorkerAvoidance(os.path.join(work, protocol.AVOID_WORKERS_FILE))
    coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    build = load_model_fn(job.model)
    model = build_model(strategy, build, job.model)
    task_fn = build_task_fn(strategy, model, manifest.parse_spec, job.label, job.batch_size, manifest.compression,
                            job.sample_weight)

    ckpt = tf.train.Checkpoint(model=model, optimizer=model.optimizer)
    checkpoints = HdfsCheckpoints(ckpt, job.checkpoint_dir, keep=job.keep_checkpoints,
                                  device=variables_task(model.variables))  # slots follow their variables
    ckpt_url = checkpoints.url
    summaries = Summaries(f"{ckpt_url}/{protocol.TENSORBOARD_DIR}")
    retries: list = []

    def retried(what: str):
        """``on_retry`` for ``hdfs.retry``: each retry into the key-value store (the event log)."""
        def note(attempt, exc, delay):
            phases.enter(protocol.PHASE_HDFS_RETRY)  # a wait of up to hdfs.RETRY_BUDGET_S, not a hang
            retries.append({"what": what, "attempt": attempt, "error": f"{type(exc).__name__}: {str(exc)[:300]}",
                            "delay_s": delay, "time": time.time()})
            progress.put_list(protocol.KV_HDFS_RETRIES, retries)
        return note

    state = checkpoints.restore_waiting(retried("restore")) or \
        {"epoch": 0, "ledger": None, "steps": 0, "history": []}
    if state["steps"]:
        print(f"restored checkpoint: epoch {state['epoch']}, step {state['steps']}, "
              f"{len(state['ledger']['done']) if state['ledger'] else 0} tasks of the epoch done", flush=True)
    policy = CheckpointPolicy(job.checkpoint_steps, job.checkpoint_secs)
    policy.saved(state["steps"])

    # Where this coordinator's wall time went besides training, per epoch (metrics.json
    # "epoch_timing"): the tail (queue empty, closures still running: workers idle in turn), the
    # checkpoints taken in the epoch and the one at its end.
    timing: list = []

    def save() -> float:
        t0 = time.monotonic()
        with phases.during(protocol.PHASE_CHECKPOINTING):
            checkpoints.save_waiting(state, retried("checkpoint"))
            policy.saved(state["steps"])
            summaries.sync()
        return time.monotonic() - t0

    epochs, max_steps, batch_size = job.epochs, job.steps, job.batch_size
    train_split = job.train_split
    expected = manifest.records(train_split)
    indexes = load_indexes(manifest, train_split)
    note = slow_path_note(manifest, indexes)
    if note:  # said once per coordinator: the job still trains, each task skipping from its shard's start
        print(note, flush=True)
    scheduler = Scheduler(coordinator, task_fn, IN_FLIGHT_PER_WORKER * len(cluster["worker"]), avoidance.worker_of)
    avoidance.refresh()
    early: list = []  # checkpoints the master asked for (YARN's preemption warnings), taken or not
    rate_from = (time.monotonic(), state["steps"])  # the steps per second since this coordinator began
    size = ClosureSize(job.steps_per_execution, len(cluster["worker"]))
    t_start = time.monotonic()
    first_step_at = None
    # examples and loss since the last report; "by": examples per worker slot
    window = {"n": 0, "loss": 0.0, "t": time.monotonic(), "by": {}}

    def report(epoch: int, ledger) -> None:
        now = time.monotonic()
        rate = window["n"] / max(now - window["t"], 1e-9)
        loss = window["loss"] / max(window["n"], 1)
        progress.put(protocol.KV_PROGRESS, {"epoch": epoch, "examples": ledger.examples, "expected": expected,
                                            "steps": state["steps"], "examples_per_s": round(rate, 1),
                                            "loss": round(loss, 6), "time": time.time(), **last_eval(state),
                                            "examples_per_s_by": per_second(window["by"], now - window["t"])})
        summaries.scalars("train", state["steps"], {"loss": loss, "examples_per_second": rate,
                                                    "workers": len(cluster["worker"])})
        window.update(n=0, loss=0.0, t=now, by={})

    def drain(epoch: int, ledger) -> None:
        """Schedule nothing more and collect what is in flight (bounded waits, see Scheduler)."""
        while scheduler.pending:
            for t, n, loss, worker in scheduler.completed():
                account(t, n, loss, ledger, worker)
        if window["n"]:
            report(epoch, ledger)

    def account(t, n: int, loss: float, ledger, worker: int | None) -> None:
        nonlocal first_step_at
        phases.progress()
        ledger.record(t, n)
        if first_step_at is None:
            first_step_at = time.monotonic()
        state["steps"] += -(-t.count // batch_size)
        size.completed(-(-t.count // batch_size), time.monotonic())
        state["loss_sum"] = state.get("loss_sum", 0.0) + loss
        state["ledger"] = ledger.to_json()
        window["n"] += n
        window["loss"] += loss
        if worker is not None:  # the master's slot of TF's task index
            key = f"worker/{slots[worker] if worker < len(slots) else worker}"
            window["by"][key] = window["by"].get(key, 0) + n

    phases.enter(protocol.PHASE_TRAINING)
    while not training_done(state, epochs, max_steps):
        epoch = state["epoch"]
        tasks = plan_epoch(manifest, train_split, job.task_records, epoch=epoch, seed=job.seed,
                           indexes=indexes)
        ledger = EpochLedger.from_json(state["ledger"]) if state["ledger"] else EpochLedger(epoch, expected)
        queue = ledger.remaining(tasks)
        window.update(n=0, loss=0.0, t=time.monotonic(), by={})
        t_epoch, tail_from, saves_s = time.monotonic(), None, 0.0
        while queue or scheduler.pending:
            if not queue and tail_from is None:
                tail_from = time.monotonic()
            # A checkpoint is taken with nothing in flight: a closure running during the save would
            # leave part of its updates in the checkpoint but not its task in the ledger, and be
            # trained again on restore. So only a due checkpoint drains, not every few tasks.
            rescale = os.path.exists(os.path.join(work, protocol.RESCALE_FILE))  # the master has a new cluster spec for us
            avoidance.refresh()
            soon = checkpoint_request(work)
            if soon is not None:  # YARN will take a container back soon: checkpoint before it goes?
                elapsed = time.monotonic() - rate_from[0]
                rate = (state["steps"] - rate_from[1]) / elapsed if elapsed > 1 else None
                soon["taken"] = soon.get("reason") == "ps" or policy.due_within(state["steps"], soon["within_s"], rate)
                early.append({**soon, "time": time.time(), "steps": state["steps"]})
                print(f"checkpoint requested ({soon.get('reason')}): {'now' if soon['taken'] else 'none due soon'}",
                      flush=True)
            if rescale or policy.due(state["steps"]) or (soon and soon["taken"]):
                drain(epoch, ledger)
                if queue or rescale:  # the epoch's last checkpoint is taken below, with its history entry
                    saves_s += save()
                if rescale:
                    summaries.close()
                    os.remove(os.path.join(work, protocol.RESCALE_FILE))
                    print("checkpoint saved; exiting to restart with the new cluster spec", flush=True)
                    os._exit(protocol.RESCALE_EXIT)
                continue
            while queue and not scheduler.full():
                group = []
                while queue and sum(-(-t.count // batch_size) for t in group) < size.steps:
                    in_flight = sum(-(-t.count // batch_size) for t in scheduler.tasks() + group)
                    if max_steps:
                        cut = within_step_budget(queue[:1], max_steps - state["steps"] - in_flight, batch_size)
                        if not cut:
                            queue = []
                            break
                        queue[0] = cut[0]
                    # --checkpoint-steps: nothing scheduled past the step where the next checkpoint is due
                    # (a task whose steps cross it still runs whole, as the first one after it)
                    due_in = policy.steps_until_due(state["steps"])
                    if in_flight and due_in is not None and in_flight >= due_in:
                        break
                    group.append(queue.pop(0))
                if not group:
                    break
                scheduler.submit(group)
            for t, n, loss, worker in scheduler.completed():
                account(t, n, loss, ledger, worker)
            if time.monotonic() - window["t"] >= REPORT_S and window["n"]:
                report(epoch, ledger)
        tail_s = time.monotonic() - tail_from if tail_from else 0.0
        if window["n"]:
            report(epoch, ledger)
        entry = {"epoch": epoch, "examples": ledger.examples, "expected": expected,
                 "mean_loss": state.pop("loss_sum", 0.0) / max(ledger.examples, 1), "steps": state["steps"]}
        state["epoch"], state["ledger"] = epoch + 1, None
        stop = progress.stop_request()
        if stop and not training_done(state, epochs, max_steps):
            state["stopped"] = {**stop, "after_epoch": epoch}
            print(f"stop requested by {stop.get('user')}: training ends after epoch {epoch}", flush=True)
        evaluation = None  # not after the last epoch: the final evaluation follows
        if eval_due(job, manifest, epoch, training_done(state, epochs, max_steps)):
            with phases.during(protocol.PHASE_EVALUATING):
                evaluation = evaluate(plain_copy(build, model), manifest, job)
        epoch_end(state, entry, summaries, evaluation)
        print(f"epoch {epoch}: {ledger.examples} examples (expected {expected}), step {state['steps']}", flush=True)
        trained_s = time.monotonic() - t_epoch
        end_save_s = save()
        timing.append({"epoch": epoch, "seconds": round(trained_s + end_save_s, 3),
                       "tail_s": round(tail_s, 3),
                       "checkpoints_in_epoch_s": round(saves_s, 3), "end_checkpoint_s": round(end_save_s, 3)})

    # Final metrics and the export, from a plain (non-distributed) copy of the trained model.
    plain = plain_copy(build, model)
    metrics = {"train_seconds": time.monotonic() - t_start,
               "first_step_s": (first_step_at - t_start) if first_step_at else None, "epochs": state["history"],
               "steps": state["steps"], "steps_per_execution": size.steps,
               "rejoins": rejoin_watch.rejoins, "app": getattr(app, "id", None), "epoch_timing": timing,
               "input": input_report(indexes), "stopped": state.get("stopped")}
    # Steps the parameter servers applied beyond the ones the ledger counts: the work of closures that
    # ran (in part) on a worker lost meanwhile and ran again elsewhere (redone), since the checkpoint
    # this coordinator restored (a restore sets both back alike).
    metrics["applied_steps"] = int(model.optimizer.iterations.numpy())
    metrics["redone_steps"] = metrics["applied_steps"] - state["steps"]
    metrics["preemption"] = {**avoidance.report(), "checkpoints": early}
    phases.enter(protocol.PHASE_EVALUATING)
    values = evaluate(plain, manifest, job)
    if values is not None:
        metrics["eval"] = values
        summaries.scalars("eval", state["steps"], values)
    phases.enter(protocol.PHASE_EXPORTING)
    hdfs.publish(lambda staged: plain.save(staged, save_format="tf"), job.export_dir)
    summaries.close()
    hdfs.write_bytes(protocol.job_file(ckpt_url, protocol.METRICS_FILE), json.dumps(metrics, indent=1).encode())
    progress.put(protocol.KV_METRICS, metrics)
    return metrics


def main() -> int:
    """``coordinator JOB_JSON CLUSTER_JSON WORK_DIR``. The master starts this process before the
    servers are up: it imports TensorFlow, Keras and the model's module first (seconds that then
    overlap the containers' start) and waits for CLUSTER_JSON, which the master writes whole once
    every server in it is up."""
    from tfhadoop.trainer.children import die_with_parent

    protocol.tf_environment()

    die_with_parent()
    job = JobSettings.load(sys.argv[1])
    cluster_file, work = sys.argv[2], sys.argv[3]
    app = None
    if os.environ.get("SKEIN_APPMASTER_ADDRESS") or os.environ.get("SKEIN_APPLICATION_ID"):
        import skein

        app = skein.ApplicationClient.from_current()
    from tfhadoop.trainer.phases import PhaseReporter

    phases = PhaseReporter(app).start()  # first: a coordinator that hangs anywhere after this is seen
    try:
        import tensorflow  # noqa: F401

        import tfhadoop.tfhdfs  # noqa: F401 - hdfs:// for TensorFlow (shards, checkpoints, events, export)
        try:
            import tf_keras  # noqa: F401
        except ImportError:
            pass
        importlib.import_module(job.model.partition(":")[0])
        master = os.getppid()
        while not os.path.exists(cluster_file):
            if os.getppid() != master:  # the master is gone: nobody will write it
                os._exit(1)
            time.sleep(CLUSTER_POLL_S)
        with open(cluster_file) as f:
            cluster = json.load(f)
        metrics = run(job, cluster, work, app, phases)
    except BaseException as exc:
        with open(os.path.join(work, protocol.ERROR_FILE), "w") as f:
            json.dump({"type": type(exc).__name__, "message": str(exc)[:4000],
                       "traceback": traceback.format_exc()[-8000:]}, f)
        raise
    print("training done:", json.dumps(metrics), flush=True)
    os._exit(0)  # the coordinator's threads hold remote handles; do not wait for them


if __name__ == "__main__":
    main()
