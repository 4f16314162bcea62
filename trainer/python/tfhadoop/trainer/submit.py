"""Submitting a checked job: the Skein application that runs it (the job master in the AM
container, ``ps`` and ``worker`` services), the code and environment it ships, and the records a
later ``status``/``follow``/resume finds in the job directory.

Containers run ``python -m tfhadoop.trainer.{master,role}`` with the ``python`` of the job spec:
on the embedded cluster the driver's venv (every container is on this host); on a real cluster a
packed environment shipped as a YARN archive (docs/design/trainer.md, "Python environment").
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from dataclasses import asdict

from tfhadoop.errors import CommandError
from tfhadoop.trainer import protocol
from tfhadoop.trainer.spec import MAX_AM_ATTEMPTS, JobSettings, mebibytes


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


def _env(job: JobSettings, code: dict) -> dict:
    env = {**protocol.TF_ENVIRONMENT, "PYTHONUNBUFFERED": "1", **protocol.NO_GRPC_FORK_HANDLERS}
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
    warnings to ``protocol.PREEMPTION_WARNINGS_FILE`` there, for the job master. The JVM also
    gets ``protocol.AM_JVM_FLAGS`` there."""
    import skein

    if agent:
        files[protocol.AM_AGENT_JAR] = skein.File(source=agent, type="file")
        env[protocol.ENV_JAVA_TOOL_OPTIONS] = protocol.am_java_tool_options()


def application_spec(job: JobSettings, manifest, job_file: str, code: dict | None = None):
    """The Skein application: the job master in the AM container, ``ps`` and ``worker`` services
    with no instances (the master adds each container with its slot and port) and, with
    ``--tensorboard``, the TensorBoard service (one instance, started with the application). No dataset shard
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
        role = f"{job.python} -m tfhadoop.trainer.ring_member"
        worker_files = {protocol.JOB_FILE: skein.File(source=job_file, type="file")}
    # A packed environment is unpacked by YARN into ./env of every container (one download per node).
    packed = {"env": skein.File(source=job.python_archive, type="archive")} if job.python_archive else {}
    packed.update({name: skein.File(source=path, type="archive") for name, path in code.items()})
    master_env, master_files = dict(env), {protocol.JOB_FILE: skein.File(source=job_file, type="file"), **packed}
    master_agent(master_env, master_files, am_agent_jar())
    services = {
        "ps": skein.Service(instances=0, max_restarts=0, allow_failures=True, script=role, env=env, files=packed,
                            resources=skein.Resources(memory=mebibytes(job.ps_memory), vcores=1)),
        "worker": skein.Service(instances=0, max_restarts=0, allow_failures=True, script=role, env=env,
                                files={**packed, **worker_files},
                                resources=skein.Resources(memory=mebibytes(job.worker_memory),
                                                          vcores=job.worker_vcores, gpus=job.worker_gpus)),
    }
    if job.tensorboard:  # not a training role: the masters never start, count or replace it
        from tfhadoop.trainer.tensorboard_service import service

        services[protocol.TENSORBOARD_SERVICE] = service(job, env, packed, job_file)
    return skein.ApplicationSpec(
        # A second application attempt when the AM container is lost: its master finds the job's
        # state in the job directory and restarts the roles from the latest checkpoint (Skein does
        # not keep containers across attempts). An attempt-1 FAILED is repeated at once by attempt 2.
        name=job.name, queue=job.queue, max_attempts=MAX_AM_ATTEMPTS,
        master=skein.Master(resources=skein.Resources(memory=mebibytes(job.master_memory), vcores=1),
                            script=f"{job.python} -m tfhadoop.trainer.master",
                            files=master_files, env=master_env),
        services=services)


def submit(job: JobSettings, client=None, validate_model: bool = True, notice=print, manifest=None) -> str:
    """Check ``job`` (``validate``: paths, dataset, outputs and, unless ``validate_model`` is
    False, the model on one batch), then submit it; returns the YARN application id.
    ``manifest``: ``job`` was checked already (both as ``validate.validate_job`` returned them:
    paths qualified, splits resolved); the job directory is then ``job.checkpoint_dir``."""
    from tfhadoop import hadoop
    from tfhadoop.trainer.validate import validate_job
    from tfhadoop.yarn.client import require_yarn_command, skein_client

    conf = hadoop.use_cluster()
    if client is None:
        require_yarn_command()  # before the checks, which take a while
    if manifest is None:
        job, manifest = validate_job(job, conf, model=validate_model, notice=notice)
    if am_agent_jar() is None:
        notice(f"note: {protocol.AM_AGENT_JAR} is not in jars/ (make jars): the job master will not see YARN's "
               f"preemption warnings")
    # The job's local files (its spec, the packed --python-path) live only until Skein has
    # uploaded them to the application's staging directory, which submit() does before it returns.
    folder = tempfile.mkdtemp(prefix="tfhadoop-job-")
    own = client is None
    try:
        job_file = os.path.join(folder, protocol.JOB_FILE)
        with open(job_file, "w") as f:
            json.dump(asdict(job), f)
        spec = application_spec(job, manifest, job_file, pack_python_path(job.python_path, folder))
        client = client or skein_client()
        app_id = client.submit(spec)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if own and client is not None:
            client.close()
    try:
        record_submission(conf, app_id, job)
    except Exception as exc:  # noqa: BLE001 - the job runs anyway; only status/follow after its end need these
        print(f"warning: {app_id} submitted, but its job files could not be written: {exc}", file=sys.stderr)
    return app_id


def record_submission(conf, app_id: str, job: JobSettings) -> None:
    """The job's spec in its directory (what a later run of the same directory must match to
    resume) and the user's registry entry (how ``status``/``follow`` find the directory)."""
    from tfhadoop.connectors import hdfs
    from tfhadoop.trainer import jobdir

    spec = {**asdict(job), "app": app_id}
    hdfs.write_bytes(protocol.job_file(job.checkpoint_dir, protocol.JOB_FILE), json.dumps(spec).encode())
    jobdir.register(conf.default_fs, app_id, asdict(job))


def tracking_url(client, conf, app_id: str) -> str:
    """The application's page: the AM's own UI when it has one, else the ResourceManager's page
    of the application (Skein's application master serves no UI)."""
    url = client.application_report(app_id).tracking_url
    if url and not url.split("//", 1)[-1].split("/", 1)[0].endswith(":0"):
        return url
    return f"{conf.rm_webapp_url.rstrip('/')}/cluster/app/{app_id}"
