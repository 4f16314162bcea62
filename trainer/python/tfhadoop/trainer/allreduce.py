"""Synchronous allreduce training (``--strategy allreduce``): the training process a ring member
runs for each ring generation (docs/design/trainer.md, "Synchronous allreduce on YARN").

``python -m tfhadoop.trainer.allreduce train GEN`` is started by the container's supervisor
(ring_member.py) with ``TF_CONFIG`` for that ring (MWMS cannot change membership in-process, so a
new ring means new training processes). It restores the latest checkpoint (or the ring's newer
in-memory commit), trains the epoch's remaining tasks in rounds (one task per worker per round,
the same plan on every worker) and touches ``protocol.ring_beat_file(gen)`` at each start-up
stage and after each round, so that the supervisor can tell a hung process from a slow one.
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
import time
import traceback

from tfhadoop.trainer import children, protocol
from tfhadoop.trainer.commit import FROM_CHECKPOINT, FROM_COMMIT, FROM_START, LocalCommits, choose, decode, encode
from tfhadoop.trainer.commit import due as commit_due
from tfhadoop.trainer.spec import JobSettings

STOP_CHECK_S = 1.0  # the chief reads ``ring_stop`` at most this often (once per round otherwise)


def beat_path(work: str, gen: int) -> str:
    """The file a generation's training process touches whenever it makes progress."""
    return os.path.join(work, protocol.ring_beat_file(gen))


def touch(path: str) -> None:
    with open(path, "a"):
        pass
    os.utime(path, None)


def plan_rounds(queue: list, workers: int) -> list[list]:
    """The remaining tasks of an epoch as rounds: round r gives ``queue[r*W + i]`` to worker i;
    the last round's missing tasks are None (that worker trains no batch, MWMS gives it empty
    ones). Every worker computes the same rounds from the same plan and ledger."""
    if workers < 1:
        raise ValueError("a ring has at least one worker")
    return [[queue[i] if i < len(queue) else None for i in range(r, r + workers)]
            for r in range(0, len(queue), workers)]


def cut_round(tasks: list, steps_left: int, batch_size: int) -> list:
    """``--steps``: a round's tasks cut to at most ``steps_left`` steps each (a round takes as many
    steps as its longest task)."""
    out = []
    for t in tasks:
        if t is not None and -(-t.count // batch_size) > steps_left:
            t = dataclasses.replace(t, count=max(steps_left, 0) * batch_size)
        out.append(t)
    return out


def round_steps(tasks: list, batch_size: int) -> int:
    return max((-(-t.count // batch_size) for t in tasks if t is not None), default=0)


# -- the training process (one per container and ring generation) -----------------------------
def train(job: JobSettings, gen: int, rank: int, workers: int, work: str, app=None) -> dict | None:
    """Train with MWMS in a ring of ``workers`` (TF_CONFIG is set); ``rank`` 0 is the chief, which
    checkpoints to HDFS, reports progress and exports. Exits the process with protocol.STOP_EXIT when the
    master asked the ring to stop (after a checkpoint). Returns the metrics (chief) or None."""
    import tensorflow as tf

    import tfhadoop.tfhdfs  # hdfs:// for TensorFlow (shards, checkpoints, export)
    from tfhadoop.connectors.dataset import load as load_manifest
    from tfhadoop.connectors.dataset import load_indexes, slow_path_note
    from tfhadoop.trainer.checkpoints import CheckpointPolicy, HdfsCheckpoints
    from tfhadoop.trainer.step import COMPRESSION, model_parse_fn, records_from, train_step_fn, without_rewrites
    from tfhadoop.trainer.summaries import Summaries
    from tfhadoop.trainer.tasks import EpochLedger, plan_epoch
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

    tfhadoop.tfhdfs.ride_out_outages()  # a NameNode restart stalls this ring's reads, not fails them
    chief = rank == 0
    beat = beat_path(work, gen)
    touch(beat)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    replicas = strategy.num_replicas_in_sync
    per_worker = max(replicas // workers, 1)
    manifest = load_manifest(job.data)
    build = load_model_fn(job.model)
    model = build_model(strategy, build, job.model)
    step = train_step_fn(model, dense_gradients=True)  # see its docstring: MWMS and IndexedSlices
    parse = model_parse_fn(model, manifest.parse_spec, job.label, job.sample_weight)
    comp, batch_size = COMPRESSION[manifest.compression], job.batch_size

    ckpt = tf.train.Checkpoint(model=model, optimizer=model.optimizer)
    checkpoints = HdfsCheckpoints(ckpt, job.checkpoint_dir, keep=job.keep_checkpoints)
    touch(beat)
    state = checkpoints.restore() or {"epoch": 0, "ledger": None, "steps": 0, "history": []}
    restored_from = FROM_CHECKPOINT if state["steps"] else FROM_START
    commits, commit_every = LocalCommits(work), job.commit_every_steps
    variables = list(model.variables) + list(optimizer_variables(model.optimizer))
    if commit_every:
        shared = restore_commit(tf, strategy, per_worker, rank, commits, variables, state["steps"])
        if shared is not None:
            state, restored_from = shared, FROM_COMMIT
    restored_steps, last_commit = state["steps"], state["steps"]
    touch(beat)
    print(f"gen {gen} rank {rank}/{workers}: restored epoch {state['epoch']}, step {state['steps']} "
          f"from {restored_from}", flush=True)
    progress = Progress(app if chief else None)
    summaries = Summaries(f"{checkpoints.url}/{protocol.TENSORBOARD_DIR}") if chief else None
    policy = CheckpointPolicy(job.checkpoint_steps, job.checkpoint_secs)
    policy.saved(state["steps"])
    scratch = tempfile.mkdtemp(prefix=f"ckpt-{rank}-", dir=work)

    def save():
        """Every worker writes (MWMS may run collectives in a save); only the chief's goes to HDFS."""
        if chief:
            checkpoints.save(state)
        else:
            ckpt.write(os.path.join(scratch, "ckpt"))
        if summaries:  # the chief's
            summaries.sync()
        policy.saved(state["steps"])
        touch(beat)

    def dataset(task):
        if task is None:  # no task this round: an empty dataset, MWMS feeds empty batches
            return tf.data.Dataset.from_tensor_slices(tf.constant([], tf.string)).batch(batch_size).map(parse)
        ds = records_from(tf.constant(task.path), tf.constant(task.offset, tf.int64), comp)
        return without_rewrites(ds.skip(task.records_to_skip).take(task.count).batch(batch_size).map(parse))

    @tf.function
    def run_round(dist, flags):
        n = tf.constant(0, tf.int64)
        loss = tf.constant(0.0, tf.float32)
        for batch in dist:
            bn, bl = strategy.run(step, args=batch)
            n += tf.add_n(strategy.experimental_local_results(bn))
            loss += tf.add_n(strategy.experimental_local_results(bl))
        row = tf.concat([tf.stack([tf.cast(n, tf.float64), tf.cast(loss, tf.float64)]), flags], axis=0)
        return strategy.gather(tf.reshape(row, [1, -1]), axis=0)

    stop_seen, stop_checked, job_stop = False, 0.0, None

    def stop_requested() -> bool:
        """The chief's reading (at most every STOP_CHECK_S) of the master's ``ring_stop`` for this
        generation, and of ``tfhadoop stop`` (kept in ``job_stop``): both reach every member as flags."""
        nonlocal stop_seen, stop_checked, job_stop
        if chief and app is not None and not stop_seen and time.monotonic() - stop_checked >= STOP_CHECK_S:
            stop_checked = time.monotonic()
            raw = app.kv.get(protocol.KV_RING_STOP)
            stop_seen = raw is not None and int(raw.decode()) == gen
            job_stop = job_stop or progress.stop_request()
        return stop_seen

    epochs, max_steps = job.epochs, job.steps
    expected = manifest.records(job.train_split)
    indexes = load_indexes(manifest, job.train_split)
    note = slow_path_note(manifest, indexes) if chief else None
    if note:  # said once, by the chief: the job still trains, each task skipping from its shard's start
        print(note, flush=True)
    t_start, first_step_at = time.monotonic(), None
    window = {"n": 0, "loss": 0.0, "t": time.monotonic(), "by": {}}  # "by": examples per rank

    def report(epoch, ledger):
        now = time.monotonic()
        rate, loss = window["n"] / max(now - window["t"], 1e-9), window["loss"] / max(window["n"], 1)
        progress.put(protocol.KV_PROGRESS, {"epoch": epoch, "examples": ledger.examples, "expected": expected,
                                            "steps": state["steps"], "examples_per_s": round(rate, 1),
                                            "loss": round(loss, 6), "time": time.time(), "gen": gen,
                                            "restored_steps": restored_steps, "restored_from": restored_from,
                                            **last_eval(state),
                                            "examples_per_s_by": per_second(window["by"], now - window["t"])})
        if summaries:
            summaries.scalars("train", state["steps"], {"loss": loss, "examples_per_second": rate, "workers": workers})
        window.update(n=0, loss=0.0, t=now, by={})

    finishing = False
    while not training_done(state, epochs, max_steps):
        epoch = state["epoch"]
        tasks = plan_epoch(manifest, job.train_split, job.task_records, epoch=epoch, seed=job.seed,
                           indexes=indexes)
        ledger = EpochLedger.from_json(state["ledger"]) if state["ledger"] else EpochLedger(epoch, expected)
        window.update(n=0, loss=0.0, t=time.monotonic(), by={})
        for mine in plan_rounds(ledger.remaining(tasks), workers):
            if max_steps:
                mine = cut_round(mine, max_steps - state["steps"], batch_size)
                if not round_steps(mine, batch_size):
                    break
            dist = strategy.distribute_datasets_from_function(lambda ctx, t=mine[rank]: dataset(t))
            flags = tf.constant([float(chief and policy.due(state["steps"])), float(stop_requested()),
                                 float(job_stop is not None)], tf.float64)
            rows = run_round(dist, flags).numpy()[::per_worker]
            touch(beat)
            if first_step_at is None:
                first_step_at = time.monotonic()
            for i, (task, row) in enumerate(zip(mine, rows)):
                if task is not None:
                    ledger.record(task, int(row[0]))  # refuses a short count or a second completion
                window["n"] += int(row[0])
                window["loss"] += float(row[1])
                window["by"][f"rank/{i}"] = window["by"].get(f"rank/{i}", 0) + int(row[0])
            state["steps"] += round_steps(mine, batch_size)
            state["loss_sum"] = state.get("loss_sum", 0.0) + float(rows[:, 1].sum())
            state["ledger"] = ledger.to_json()
            if commit_due(state["steps"], last_commit, commit_every):  # the same rounds on every member
                commits.write([v.numpy() for v in variables], state)  # before the report: no step reported is lost
                last_commit = state["steps"]
            if chief and time.monotonic() - window["t"] >= 1.0:
                report(epoch, ledger)
            finishing = finishing or bool(rows[0][4])  # `tfhadoop stop`: every member ends after this epoch
            if rows[0][3] or rows[0][2]:  # the chief's flags, as every worker received them
                save()
            if rows[0][3]:
                if chief:
                    report(epoch, ledger)  # the steps reached, exact: the master sees nothing is redone
                print(f"gen {gen}: stopped at step {state['steps']} for a new ring (checkpoint saved)", flush=True)
                os._exit(protocol.STOP_EXIT)
        if window["n"] and chief:
            report(epoch, ledger)
        entry = {"epoch": epoch, "examples": ledger.examples, "expected": expected,
                 "mean_loss": state.pop("loss_sum", 0.0) / max(ledger.examples, 1), "steps": state["steps"]}
        state["epoch"], state["ledger"] = epoch + 1, None
        if finishing and not training_done(state, epochs, max_steps):
            state["stopped"] = {**(job_stop or {}), "after_epoch": epoch}
            print(f"gen {gen}: stop requested: training ends after epoch {epoch}", flush=True)
        evaluation = None  # the chief's (the others wait in the next round meanwhile); not after the last epoch
        if chief and eval_due(job, manifest, epoch, training_done(state, epochs, max_steps)):
            evaluation = evaluate(plain_copy(build, model), manifest, job)
            touch(beat)
        epoch_end(state, entry, summaries, evaluation)
        print(f"epoch {epoch}: {ledger.examples} examples (expected {expected}), step {state['steps']}", flush=True)
        save()
    if not chief:
        return None
    touch(beat)
    return finish(job, build, model, manifest, state, summaries, checkpoints.url, progress, app, workers,
                  t_start, first_step_at, lambda: touch(beat), input_report(indexes))


def optimizer_variables(optimizer) -> list:
    """The optimizer's variables (iterations, slots): a property of tf-keras's optimizer, a method of the legacy one."""
    v = optimizer.variables
    return v if isinstance(v, list) else v()  # tf-keras's list is also callable (CallableList)


def restore_commit(tf, strategy, per_worker: int, rank: int, commits, variables: list, checkpoint_steps: int):
    """Collectives every member of a new generation runs after restoring the HDFS checkpoint:
    gather each member's newest commit step; when one is newer than the checkpoint, its holder's
    values and training state reach every member through one all-reduce SUM (the others add
    zeros) and are assigned. Returns the committed state, or None (keep the checkpoint)."""
    import numpy as np

    mine = commits.state()
    payload = encode(mine) if mine is not None else np.zeros(0)
    info = tf.function(lambda t: strategy.gather(t, axis=0))(
        tf.constant([[float(commits.steps()), float(checkpoint_steps), float(len(payload))]], tf.float64))
    rows = info.numpy()[::per_worker]
    source, holder = choose([int(r[0]) for r in rows], int(rows[0][1]))  # the chief's checkpoint step
    if source != FROM_COMMIT or holder is None:  # choose gives a holder with every FROM_COMMIT
        return None
    if rank == holder:
        values = [np.asarray(v, np.float64) for v in commits.values()] + [payload]
    else:
        values = [np.zeros(v.shape, np.float64) for v in variables] + [np.zeros(int(rows[holder][2]))]
    if len(values) != len(variables) + 1:
        raise ValueError(f"the commit in {commits.dir} holds {len(values) - 1} variables, the model {len(variables)}")

    @tf.function
    def share(*vals):
        def fn(*vs):
            ctx = tf.distribute.get_replica_context()
            keep = tf.equal(ctx.replica_id_in_sync_group, holder * per_worker)
            return ctx.all_reduce(tf.distribute.ReduceOp.SUM, [tf.where(keep, v, tf.zeros_like(v)) for v in vs])
        return strategy.run(fn, args=vals)

    out = share(*[tf.constant(v, tf.float64) for v in values])
    out = [strategy.experimental_local_results(x)[0].numpy() for x in out]
    for var, value in zip(variables, out):
        var.assign(value.astype(var.dtype.as_numpy_dtype))
    return decode(out[-1])


def finish(job, build, model, manifest, state, summaries, ckpt_url, progress, app, workers, t_start, first_step_at,
           alive=lambda: None, input_info: dict | None = None):
    """The chief's end: evaluate a plain copy of the model on the eval split, publish the
    SavedModel and ``metrics.json`` (the same outputs as the PS mode's coordinator; ``input_info``:
    its ``input``, see training_common.input_report)."""
    from tfhadoop.connectors import hdfs
    from tfhadoop.trainer.training_common import evaluate, plain_copy

    plain = plain_copy(build, model)
    metrics = {"train_seconds": time.monotonic() - t_start,
               "first_step_s": (first_step_at - t_start) if first_step_at else None, "epochs": state["history"],
               "steps": state["steps"], "strategy": "allreduce", "workers": workers, "rejoins": [],
               "app": getattr(app, "id", None), "input": input_info, "stopped": state.get("stopped")}
    values = evaluate(plain, manifest, job)
    if values is not None:
        metrics["eval"] = values
        summaries.scalars("eval", state["steps"], values)
        alive()  # progress: the supervisor's round timeout covers evaluation and export separately
    hdfs.publish(lambda staged: plain.save(staged, save_format="tf"), job.export_dir)
    summaries.close()
    hdfs.write_bytes(protocol.job_file(ckpt_url, protocol.METRICS_FILE), json.dumps(metrics, indent=1).encode())
    progress.put(protocol.KV_METRICS, metrics)
    return metrics


def train_main(gen: int) -> int:
    """``allreduce train GEN``: the training process; ``error.json`` in its work dir on failure."""
    work = os.getcwd()
    job = JobSettings.load(protocol.JOB_FILE)
    config = json.loads(os.environ["TF_CONFIG"])
    rank, workers = config["task"]["index"], len(config["cluster"]["worker"])
    app = None
    if os.environ.get("SKEIN_APPMASTER_ADDRESS") or os.environ.get("SKEIN_APPLICATION_ID"):
        import skein

        app = skein.ApplicationClient.from_current()
    try:
        metrics = train(job, gen, rank, workers, work, app)
    except BaseException as exc:
        with open(os.path.join(work, protocol.ring_error_file(gen)), "w") as f:
            json.dump({"type": type(exc).__name__, "message": str(exc)[:4000],
                       "traceback": traceback.format_exc()[-8000:]}, f)
        raise
    print("training done:", json.dumps(metrics) if metrics else f"rank {rank}", flush=True)
    os._exit(0)  # MWMS's threads hold collective handles; do not wait for them


def main() -> int:
    """``python -m tfhadoop.trainer.allreduce train GEN``: what ring_member.Supervisor starts."""
    protocol.tf_environment()
    children.die_with_parent()
    return train_main(int(sys.argv[2]))


if __name__ == "__main__":
    sys.exit(main())
