"""A training job: its spec (CLI flags, YAML file or Python), the Skein application that runs it,
and the client that submits it and follows it to the end.

Containers run ``python -m tfhadoop.trainer.{master,role}`` with the ``python`` of the job spec:
on the embedded cluster the driver's venv (every container is on this host); on a real cluster a
packed environment shipped as a YARN archive (docs/design/trainer.md, "Python environment").
"""
from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
from dataclasses import MISSING, asdict, dataclass, field, fields

from tfhadoop.errors import CommandError
from tfhadoop.trainer import protocol


def mebibytes(value) -> int:
    """``4g``, ``512m``, ``2 GiB`` or a number of MiB -> MiB."""
    if isinstance(value, int):
        return value
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", str(value).lower())
    if not m:
        raise CommandError(f"bad memory size {value!r}: use e.g. 512m or 4g")
    scale = {"": 1, "k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}[m.group(2)]
    return int(float(m.group(1)) * scale)


# A checkpoint costs an upload of the model from the parameter servers to HDFS (seconds on a busy
# cluster): taking one per wave made the coordinator spend most of its time checkpointing
# (BENCHMARKS.md); a time interval bounds the work redone after a PS loss instead.
DEFAULT_CHECKPOINT_SECS = 60
MAX_AM_ATTEMPTS = 2  # YARN caps it by yarn.resourcemanager.am.max-attempts (default 2)
STRATEGIES = ("ps", "allreduce")  # --strategy: docs/design/trainer.md
# The coordinator's watchdog: the longest time (s) in one phase without progress before the master
# kills and restarts it (protocol.PHASES; a phase not named here has no limit). "training" counts
# from the last completed closure, and not while no worker is alive (waiting for --min-workers).
# An evaluation or an HDFS outage waited out (hdfs.RETRY_BUDGET_S) is long, not hung.
DEFAULT_PHASE_TIMEOUTS = {"connecting": 600, "training": 600, "checkpointing": 600, "hdfs_retry": 600,
                          "evaluating": 7200, "exporting": 1800}


@dataclass
class JobSpec:
    model: str
    data: str
    checkpoint_dir: str
    export_dir: str
    label: str | list = "label"  # several columns ("a,b" or a YAML list): one per model output, by name
    sample_weight: str | None = None  # numeric column passed to the loss as Keras's sample_weight
    train_split: str | None = "train"  # None: every record (a dataset exported without --split)
    eval_split: str | None = "eval"  # None: no evaluation at the end
    workers: int = 2
    min_workers: int = 1
    ps: int = 1
    worker_gpus: int = 0
    worker_memory: str = "2g"
    worker_vcores: int = 1
    ps_memory: str = "1g"
    master_memory: str = "2g"
    queue: str = "default"
    epochs: int | None = None  # default 1; exclusive with steps
    steps: int | None = None  # train this many steps (batches) in all, then stop
    batch_size: int = 64
    task_records: int = 1000
    steps_per_execution: int | str = "auto"  # steps per closure (whole tasks); auto: closures of ~0.25 s
    checkpoint_tasks: int = 8  # unused since the coordinator runs no waves; kept so older job specs load
    checkpoint_steps: int | None = None  # a checkpoint once this many steps passed since the last
    checkpoint_secs: float | None = None  # ... or seconds; neither given: every 60 s
    keep_checkpoints: int = 5  # latest + this many - 1 older ones on HDFS
    max_worker_restarts: int = 5
    max_ps_restarts: int = 3
    max_coordinator_restarts: int = 3
    startup_timeout: int = 300
    startup_wait: int = 60  # then start with >= min_workers and scale up as the rest arrive
    hang_timeout: float = 120  # a worker, PS or coordinator whose heartbeat stops this long is killed and replaced
    # a coordinator in one phase without progress longer than this is killed and restarted (seconds
    # per phase, over DEFAULT_PHASE_TIMEOUTS; "phase=s,phase=s" on the command line)
    phase_timeouts: dict | str = field(default_factory=lambda: dict(DEFAULT_PHASE_TIMEOUTS))
    name: str = "tfhadoop-train"
    python: str | None = None  # default: ./env/bin/python with python_archive, else this interpreter
    python_archive: str | None = None  # hdfs:// URL of a packed environment (venv-pack/conda-pack .tar.gz)
    python_path: list = field(default_factory=list)  # extra PYTHONPATH entries (the model's code)
    seed: int = 0
    strategy: str = "ps"  # "ps": parameter servers + coordinator; "allreduce": MWMS ring (allreduce.py)
    gang_timeout: float = 300  # allreduce: seconds to get >= min_workers workers before failing and releasing them
    round_timeout: float = 300  # allreduce: a training process that completes no round in this long is killed (0: off)
    commit_every_steps: int = 20  # allreduce: in-memory commit (outside the training process) this often (0: off)
    # act on YARN's preemption warnings (PreemptionMessage, seen through yarn/am-agent): keep new work
    # off a warned worker, checkpoint early (PS mode), shrink the ring at a round boundary (allreduce);
    # False: only the preemption_warned events
    preemption_warnings: bool = True

    def validate(self) -> JobSpec:
        if self.epochs is not None and self.steps is not None:
            raise CommandError("--epochs and --steps are exclusive: give one")
        if self.epochs is None and self.steps is None:
            self.epochs = 1
        if self.checkpoint_steps is None and self.checkpoint_secs is None:
            self.checkpoint_secs = DEFAULT_CHECKPOINT_SECS
        for name in ("epochs", "steps", "checkpoint_steps", "checkpoint_secs", "checkpoint_tasks", "batch_size",
                     "task_records", "keep_checkpoints", "hang_timeout"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise CommandError(f"--{name.replace('_', '-')} must be positive, got {value}")
        self.phase_timeouts = phase_timeouts(self.phase_timeouts)
        spe = self.steps_per_execution
        if isinstance(spe, str) and spe.strip().isdigit():
            spe = self.steps_per_execution = int(spe)
        if spe != "auto" and (not isinstance(spe, int) or isinstance(spe, bool) or spe <= 0):
            raise CommandError(f"--steps-per-execution must be a positive number of steps or auto, got {spe!r}")
        if self.python is None:
            self.python = "./env/bin/python" if self.python_archive else sys.executable
        if self.python_archive and not str(self.python_archive).startswith(("hdfs:", "viewfs:", "s3a:", "/")):
            raise CommandError(f"--python-archive must be a URL on the cluster's file system (hdfs://...), "
                               f"got {self.python_archive!r}")
        if not 1 <= self.min_workers <= self.workers:
            raise CommandError(f"--min-workers must be between 1 and --workers ({self.workers})")
        if self.strategy not in STRATEGIES:
            raise CommandError(f"--strategy must be one of {', '.join(STRATEGIES)}, got {self.strategy!r}")
        if self.strategy == "allreduce":
            self.ps = 0  # no parameter servers: every worker holds the model
        elif self.ps < 1:
            raise CommandError("--ps must be at least 1")
        if self.gang_timeout <= 0:
            raise CommandError(f"--gang-timeout must be positive, got {self.gang_timeout}")
        if self.commit_every_steps < 0:
            raise CommandError(f"--commit-every-steps must be positive (or 0: off), got {self.commit_every_steps}")
        if not isinstance(self.preemption_warnings, bool):
            raise CommandError(f"preemption_warnings must be true or false, got {self.preemption_warnings!r}")
        if self.round_timeout < 0:
            raise CommandError(f"--round-timeout must be positive (or 0: off), got {self.round_timeout}")
        for name in ("checkpoint_dir", "export_dir"):  # hdfs:///x, /x and x are qualified at submit
            if re.match(r"[a-z][a-z0-9+.-]*:", str(getattr(self, name))) and \
                    not str(getattr(self, name)).startswith(("hdfs:", "viewfs:")):
                raise CommandError(f"--{name.replace('_', '-')} must be on HDFS (hdfs://..., /path or path), "
                                   f"got {getattr(self, name)!r}")
        if ":" not in self.model:
            raise CommandError(f"--model must be MODULE:FUNCTION, got {self.model!r}")
        return self

    @classmethod
    def from_dict(cls, data: dict) -> JobSpec:
        known = {f.name for f in fields(cls)}
        data = {k.replace("-", "_"): v for k, v in data.items()}
        unknown = sorted(set(data) - known)
        if unknown:
            raise CommandError(f"unknown job spec keys: {', '.join(unknown)}")
        if data.get("strategy") == "allreduce" and data.get("ps") not in (None, 0):
            raise CommandError("--ps is not allowed with --strategy allreduce (the workers hold the model; "
                               "no parameter servers)")
        return cls(**data).validate()

    @classmethod
    def from_yaml(cls, path: str) -> JobSpec:
        import yaml

        with open(path) as f:
            return cls.from_dict(yaml.safe_load(f) or {})


def phase_timeouts(value) -> dict:
    """``--phase-timeouts`` (``"evaluating=7200,training=900"`` or a mapping) over the defaults."""
    from tfhadoop.trainer.protocol import PHASES

    if isinstance(value, str):
        pairs = [p.partition("=") for p in value.split(",") if p.strip()]
        if any(not sep for _, sep, _ in pairs):
            raise CommandError(f"--phase-timeouts must be PHASE=SECONDS,..., got {value!r}")
        value = {k.strip(): v.strip() for k, _, v in pairs}
    out: dict[str, float] = dict(DEFAULT_PHASE_TIMEOUTS)
    for phase, seconds in (value or {}).items():
        if phase not in PHASES:
            raise CommandError(f"--phase-timeouts: unknown phase {phase!r} (phases: {', '.join(PHASES)})")
        try:
            seconds = float(seconds)
        except (TypeError, ValueError):
            raise CommandError(f"--phase-timeouts: {phase}={seconds!r} is not a number of seconds") from None
        if seconds <= 0:
            raise CommandError(f"--phase-timeouts: {phase} must be positive, got {seconds:g}")
        out[phase] = seconds
    return out


def job_settings(job: dict) -> dict:
    """``job.json`` over the JobSpec's defaults, the one place they live: a key it lacks (a spec
    written by an older client, a test) gets the same value as a spec built by ``JobSpec``."""
    defaults = {}
    for f in fields(JobSpec):
        if f.default is not MISSING:
            defaults[f.name] = f.default
        elif f.default_factory is not MISSING:
            defaults[f.name] = f.default_factory()
    return {**defaults, **job}


def pack_python_path(entries: list, folder: str) -> dict:
    """Each ``--python-path`` directory (the model's code) as a tar.gz in ``folder``, keyed by the
    name YARN unpacks it under in every container (``pythonpath-<i>``, put on PYTHONPATH): the
    code reaches containers on any cluster, not only on the host that submits."""
    import tarfile

    packed = {}
    for i, entry in enumerate(entries):
        if not os.path.isdir(entry):
            raise CommandError(f"--python-path {entry!r} is not a directory")
        archive = os.path.join(folder, f"pythonpath-{i}.tar.gz")
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(entry, arcname=".", filter=lambda t: None if "__pycache__" in t.name else t)
        packed[f"pythonpath-{i}"] = archive
    return packed


def _env(job: JobSpec, code: dict) -> dict:
    env = {"TF_USE_LEGACY_KERAS": "1", "GRPC_FAIL_FAST": "use_caller", "TF_CPP_MIN_LOG_LEVEL": "1",
           "PYTHONUNBUFFERED": "1",
           # our processes start children only by exec (children.py), never fork and go on using gRPC
           "GRPC_ENABLE_FORK_SUPPORT": "0"}
    paths = [f"./{name}" for name in code] + [p for p in os.environ.get("PYTHONPATH", "").split(":") if p]
    if paths:
        env["PYTHONPATH"] = ":".join(paths)
    for var in ("HADOOP_CONF_DIR", "TFHADOOP_STATE_DIR", "JAVA_HOME", "PATH", "HOME"):
        if os.environ.get(var):
            env[var] = os.environ[var]
    return env


def am_agent_jar() -> str | None:
    """The application master agent (yarn/am-agent, built into jars/ by ``make jars``), or None."""
    from tfhadoop.hadoop import jars_dir

    path = jars_dir() / protocol.AM_AGENT_JAR
    return str(path) if path.is_file() else None


def master_agent(env: dict, files: dict, agent: str | None) -> None:
    """Ship the AM agent with the master and load it into Skein's application master JVM: Skein
    puts the master's files in the AM container's working directory (and ``./*`` on the JVM's
    classpath) and gives the JVM the master's environment. The agent appends YARN's preemption
    warnings to ``protocol.PREEMPTION_WARNINGS_FILE`` there, for the job master."""
    import skein

    if agent:
        files[protocol.AM_AGENT_JAR] = skein.File(source=agent, type="file")
        env[protocol.ENV_JAVA_TOOL_OPTIONS] = protocol.AM_AGENT_OPTION


def application_spec(job: JobSpec, manifest, job_file: str, code: dict | None = None):
    """The Skein application: the job master in the AM container, ``ps`` and ``worker`` services
    with no instances (the master adds each container with its slot and port). No dataset shard
    is localized: workers and the coordinator open the shards' hdfs:// URLs through TensorFlow
    (tfhdfs plugin), so a dataset larger than a node trains and a replacement starts at once.
    ``code`` (from :func:`pack_python_path`) and the packed environment are unpacked into every
    container."""
    import skein

    code = code or {}
    env = _env(job, code)
    role = f"{job.python} -m tfhadoop.trainer.role"
    worker_files = {}
    if job.strategy == "allreduce":  # the workers train themselves: each reads the job spec
        role = f"{job.python} -m tfhadoop.trainer.allreduce"
        worker_files = {"job.json": skein.File(source=job_file, type="file")}
    # A packed environment is unpacked by YARN into ./env of every container (one download per node).
    packed = {"env": skein.File(source=job.python_archive, type="archive")} if job.python_archive else {}
    packed.update({name: skein.File(source=path, type="archive") for name, path in code.items()})
    master_env, master_files = dict(env), {"job.json": skein.File(source=job_file, type="file"), **packed}
    master_agent(master_env, master_files, am_agent_jar())
    return skein.ApplicationSpec(
        # A second application attempt when the AM container is lost: its master finds the job's
        # state in the job directory and restarts the roles from the latest checkpoint (Skein does
        # not keep containers across attempts). An attempt-1 FAILED is repeated at once by attempt 2.
        name=job.name, queue=job.queue, max_attempts=MAX_AM_ATTEMPTS,
        master=skein.Master(resources=skein.Resources(memory=mebibytes(job.master_memory), vcores=1),
                            script=f"{job.python} -m tfhadoop.trainer.master",
                            files=master_files, env=master_env),
        services={
            "ps": skein.Service(instances=0, max_restarts=0, allow_failures=True, script=role, env=env, files=packed,
                                resources=skein.Resources(memory=mebibytes(job.ps_memory), vcores=1)),
            "worker": skein.Service(instances=0, max_restarts=0, allow_failures=True, script=role, env=env,
                                    files={**packed, **worker_files},
                                    resources=skein.Resources(memory=mebibytes(job.worker_memory),
                                                              vcores=job.worker_vcores, gpus=job.worker_gpus)),
        })


def submit(job: JobSpec, client=None, validate_model: bool = True, notice=print, manifest=None) -> str:
    """Check ``job`` (``validate``: paths, dataset, outputs and, unless ``validate_model`` is
    False, the model on one batch), then submit it; returns the YARN application id.
    ``manifest``: the job was checked already (``validate.validate_job`` returned it)."""
    from tfhadoop import hadoop
    from tfhadoop.trainer.validate import validate_job
    from tfhadoop.yarn.client import require_yarn_command, skein_client

    conf = hadoop.use_cluster()
    if client is None:
        require_yarn_command()  # before the checks, which take a while
    if manifest is None:
        manifest = validate_job(job, conf, model=validate_model, notice=notice)
    if am_agent_jar() is None:
        notice(f"note: {protocol.AM_AGENT_JAR} is not in jars/ (make jars): the job master will not see YARN's "
               f"preemption warnings")
    folder = tempfile.mkdtemp(prefix="tfhadoop-job-")
    job_file = os.path.join(folder, "job.json")
    with open(job_file, "w") as f:
        json.dump(asdict(job), f)
    spec = application_spec(job, manifest, job_file, pack_python_path(job.python_path, folder))
    own = client is None
    client = client or skein_client()
    try:
        app_id = client.submit(spec)
    finally:
        if own:
            client.close()
    try:
        record_submission(conf, app_id, job)
    except Exception as exc:  # noqa: BLE001 - the job runs anyway; only status/follow after its end need these
        print(f"warning: {app_id} submitted, but its job files could not be written: {exc}", file=sys.stderr)
    return app_id


def record_submission(conf, app_id: str, job: JobSpec) -> None:
    """The job's spec in its directory (what a later run of the same directory must match to
    resume) and the user's registry entry (how ``status``/``follow`` find the directory)."""
    from tfhadoop.connectors import hdfs
    from tfhadoop.trainer import jobdir

    spec = {**asdict(job), "app": app_id}
    hdfs.write_bytes(protocol.job_file(job.checkpoint_dir, protocol.JOB_FILE), json.dumps(spec).encode())
    jobdir.register(conf.default_fs, app_id, asdict(job))


def _kv(app, key):
    try:
        value = app.kv.get(key)
    except Exception:  # noqa: BLE001 - the application may be gone
        return None
    return json.loads(value.decode()) if value else None


def _show_new_events(display, tail: list[dict], shown: int, job_dir: str, app_id: str) -> int:
    """Display the events of the key-value store's recent ``tail`` numbered after ``shown``; the
    ones that left the tail before this poll saw them come from the durable log. Returns the
    number of the last event shown."""
    from tfhadoop.trainer import jobdir

    new = jobdir.newer(tail, shown)
    if new and jobdir.seq(new[0], shown + 1) > shown + 1:  # a gap: more events than the tail holds
        new = jobdir.merged(jobdir.newer(jobdir.events(job_dir, app_id), shown), new)
    for e in new:
        display.event(e)
        shown = max(shown, jobdir.seq(e, shown + 1))
    return shown


def follow(app_id: str, job_dir: str, out=sys.stdout, poll: float = 2.0, client=None, display=None) -> dict:
    """Show progress and events (``display``: a :class:`console.Display`) until the application
    ends. While it runs they come from the key-value store; once it ended, the events, metrics
    and result come from the job directory on HDFS (``protocol``), where the master wrote them
    before it shut down, so nothing depends on catching the master before it exits."""
    import contextlib

    from tfhadoop.trainer import jobdir
    from tfhadoop.trainer.console import Display
    from tfhadoop.yarn.client import skein_client

    display = display or Display({}, out)
    last, shown, page_shown = None, -1, False  # shown: ``seq`` of the last event displayed
    master_at = None  # (host, port) of the application master followed
    try:
        with (contextlib.nullcontext(client) if client else skein_client()) as client:
            app = None
            while True:
                report = client.application_report(app_id)
                if str(report.state) in protocol.FINAL_STATES:
                    break
                if str(report.state) != "RUNNING" or (getattr(report, "host", None), getattr(report, "port", None)) != master_at:
                    app, master_at = None, (getattr(report, "host", None), getattr(report, "port", None))
                if str(report.state) == "RUNNING":
                    if app is None:
                        try:
                            app = client.connect(app_id, wait=False)
                        except Exception:  # noqa: BLE001 - AM not reachable yet
                            app = None
                    if app is not None:
                        try:
                            if not page_shown and (page := app.kv.get(protocol.KV_PAGE)):
                                display.note(f"job page {page.decode()}")
                                page_shown = True
                        except Exception:  # noqa: BLE001 - the master is gone (next attempt): reconnect
                            app = None
                    if app is not None:
                        progress = _kv(app, protocol.KV_PROGRESS)
                        shown = _show_new_events(display, _kv(app, protocol.KV_EVENTS) or [], shown, job_dir, app_id)
                        if progress and progress != last:
                            display.progress(progress, _kv(app, protocol.KV_WORKERS_ALIVE))
                            last = progress
                time.sleep(poll)
        events = jobdir.events(job_dir, app_id)
        for e in jobdir.newer(events, shown):
            display.event(e)
    finally:
        display.close()
    metrics = jobdir.metrics(job_dir)
    if metrics and metrics.get("app") not in (None, app_id):
        metrics = None  # another run's
    return {"events": events, "metrics": metrics, "result": jobdir.result(job_dir, app_id),
            "state": str(report.state), "final_status": str(report.final_status), "diagnostics": report.diagnostics}


def tracking_url(client, conf, app_id: str) -> str:
    """The application's page: the AM's own UI when it has one, else the ResourceManager's page
    of the application (Skein's application master serves no UI)."""
    url = client.application_report(app_id).tracking_url
    if url and not url.split("//", 1)[-1].split("/", 1)[0].endswith(":0"):
        return url
    return f"{conf.rm_webapp_url.rstrip('/')}/cluster/app/{app_id}"
