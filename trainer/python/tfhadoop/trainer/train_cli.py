"""``tfhadoop train``: submit a training job (flags or a YAML job spec) and follow it to the end."""
from __future__ import annotations

from tfhadoop.errors import CommandError

FLAGS = [  # (flag, type, help)
    ("--model", str, "MODULE:FUNCTION returning a compiled tf-keras model"),
    ("--data", str, "dataset directory with a _tfhadoop.json manifest (hdfs://...)"),
    ("--label", str, "label column (default: label); several, comma-separated, for a model with one output per "
                      "label column, named after it"),
    ("--sample-weight", str, "numeric column weighting each example's loss, as model.fit(sample_weight=...)"),
    ("--train-split", str, "split to train on (default: train; a dataset without splits: all records)"),
    ("--eval-split", str, "split evaluated at the end (default: eval, skipped with a notice if absent)"),
    ("--workers", int, "worker containers (default 2)"),
    ("--min-workers", int, "keep training while at least this many workers are alive (default 1)"),
    ("--ps", int, "parameter servers (default 1; not with --strategy allreduce)"),
    ("--strategy", str, "ps (parameter servers, default) or allreduce (synchronous MultiWorkerMirroredStrategy "
                        "ring, elastic through preemption)"),
    ("--gang-timeout", float, "allreduce: seconds to get --min-workers workers before the job gives up and "
                              "releases its containers (default 300)"),
    ("--round-timeout", float, "allreduce: seconds in which a training process must complete a round (or a start-up "
                               "stage); one that does not (stopped, or stuck in a collective) is killed and the "
                               "ring re-formed (default 300; 0: off)"),
    ("--commit-every-steps", int, "allreduce: each training process commits the model, optimizer and task ledger to "
                                  "its container (outside the process) once this many steps passed; a re-formed "
                                  "ring restores the newest commit when it is newer than the HDFS checkpoint "
                                  "(default 20; 0: off)"),
    ("--worker-gpus", int, "yarn.io/gpu per worker (default 0)"),
    ("--worker-memory", str, "memory per worker, e.g. 4g (default 2g)"),
    ("--worker-vcores", int, "vcores per worker (default 1)"),
    ("--ps-memory", str, "memory per parameter server (default 1g)"),
    ("--queue", str, "YARN queue (default: default)"),
    ("--epochs", int, "epochs over the train split (default 1; exclusive with --steps)"),
    ("--steps", int, "stop after this many steps (batches) in all, across epochs"),
    ("--batch-size", int, "batch size per step (default 64)"),
    ("--task-records", int, "records per scheduled task (default 1000)"),
    ("--steps-per-execution", str, "steps one scheduled closure trains, in whole tasks, as Keras compile("
                                   "steps_per_execution=...) (default auto: closures of about 0.25 s, from the "
                                   "measured step time)"),
    ("--checkpoint-dir", str, "hdfs:// directory for checkpoints, events.jsonl, metrics.json and tensorboard/"),
    ("--checkpoint-steps", int, "a checkpoint once this many steps passed since the last one"),
    ("--checkpoint-secs", float, "a checkpoint once this many seconds passed since the last one (default 60 "
                                 "unless --checkpoint-steps); always one at each epoch's end"),
    ("--checkpoint-tasks", int, "unused: the coordinator keeps 2 tasks per worker in flight (no waves); kept so older job specs load"),
    ("--keep-checkpoints", int, "checkpoints kept on HDFS, latest included (default 5)"),
    ("--export-dir", str, "hdfs:// directory the SavedModel is published to (must not exist)"),
    ("--max-worker-restarts", int, "failed containers per worker slot before it stays empty; preemptions "
                                   "do not count (default 5)"),
    ("--max-ps-restarts", int, "failed containers per parameter server before the job fails (default 3)"),
    ("--hang-timeout", float, "seconds without a heartbeat after which a worker, PS or the coordinator counts "
                              "as hung: it is killed and replaced (default 120)"),
    ("--phase-timeouts", str, "PHASE=SECONDS,...: the coordinator in one phase without progress this long is "
                              "killed and restarted from the checkpoint (defaults: connecting, training (since "
                              "the last closure), checkpointing, hdfs_retry 600, evaluating 7200, exporting 1800)"),
    ("--startup-wait", int, "seconds to wait for all workers before starting with --min-workers (default 60)"),
    ("--name", str, "YARN application name"),
    ("--python", str, "python interpreter in the containers (default: this one, or ./env/bin/python "
                      "with --python-archive)"),
    ("--python-archive", str, "hdfs:// URL of a packed environment (venv-pack/conda-pack .tar.gz) that YARN "
                              "unpacks into ./env of every container"),
]


def register(subparsers) -> None:
    p = subparsers.add_parser("train", help="train a model on YARN (parameter servers + workers)",
                              description=__doc__)
    p.add_argument("spec", nargs="?", help="YAML job spec; flags override its keys")
    for flag, kind, text in FLAGS:
        p.add_argument(flag, type=kind, help=text)
    p.add_argument("--python-path", action="append", default=None,
                   help="directory with the model's code, shipped to every container and put on PYTHONPATH (repeatable)")
    p.add_argument("--no-preemption-warnings", action="store_true",
                   help="do not act on YARN's preemption warnings (they are still logged as preemption_warned "
                        "events); by default a warned worker gets no new work, and a checkpoint due soon (a warned "
                        "PS: at once) is taken before the container goes; allreduce: the ring shrinks at a round "
                        "boundary")
    p.add_argument("--detach", action="store_true", help="print the application id and return")
    p.add_argument("--no-validate", action="store_true",
                   help="skip the submit-time model check (import, build, one forward pass on a batch)")
    p.set_defaults(func=run)


def job_from_args(args):
    from tfhadoop.trainer.job import JobSpec

    data = {}
    if args.spec:
        import yaml

        with open(args.spec) as f:
            data = {k.replace("-", "_"): v for k, v in (yaml.safe_load(f) or {}).items()}
    for flag, _, _ in FLAGS:
        key = flag[2:].replace("-", "_")
        if getattr(args, key) is not None:
            data[key] = getattr(args, key)
    if args.python_path:
        data["python_path"] = args.python_path
    if getattr(args, "no_preemption_warnings", False):
        data["preemption_warnings"] = False
    missing = [k for k in ("model", "data", "checkpoint_dir", "export_dir") if not data.get(k)]
    if missing:
        raise CommandError("missing " + ", ".join("--" + k.replace("_", "-") for k in missing))
    return JobSpec.from_dict(data)


def run(args) -> int:
    from dataclasses import asdict

    from tfhadoop import hadoop
    from tfhadoop.trainer import console
    from tfhadoop.trainer.job import submit, tracking_url
    from tfhadoop.trainer.validate import validate_job
    from tfhadoop.yarn.client import require_yarn_command

    job = job_from_args(args)
    conf = hadoop.use_cluster()
    require_yarn_command()  # the submit needs it: said before the checks, which take a while
    log = None if args.verbose else console.log_path()
    console.route_logging(args.verbose, log)
    with console.stderr_to(log):  # TensorFlow's and Java's start-up lines, unless -v
        # The checks first: a mistake is reported before the Skein driver (a JVM) even starts.
        manifest = validate_job(job, conf, model=not args.no_validate, notice=lambda text: print(text, flush=True))
        client = console.skein_client(args.verbose, log)
    with client:  # one driver for submit and follow
        with console.stderr_to(log):
            app_id = submit(job, client=client, manifest=manifest)
        print(f"application {app_id}\ntracking URL {tracking_url(client, conf, app_id)}", flush=True)
        if args.detach:
            print(f"detached: tfhadoop follow {app_id} | status {app_id} | kill {app_id}")
            return 0
        return follow_to_end(app_id, asdict(job), client, log)


def follow_to_end(app_id: str, job: dict, client, log: str | None) -> int:
    """Follow with the console display; Ctrl-C detaches (the job keeps running); the summary."""
    from tfhadoop.trainer import console
    from tfhadoop.trainer.job import follow

    display = console.Display(job)
    try:
        state = follow(app_id, job["checkpoint_dir"], client=client, display=display)
    except KeyboardInterrupt:
        display.close()
        print(f"\ndetached from {app_id}; it keeps running: tfhadoop follow {app_id} | kill {app_id}")
        return 0
    return console.summary(state, job, app_id, log)
