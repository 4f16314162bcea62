"""Names shared by the client, the job master, the coordinator and the role containers: the one
place for the files of a job directory on HDFS and of the master's work dir, the Skein key-value
keys, the exit codes, the environment variables and the event kinds (a test,
tests/trainer/test_protocol_literals.py, fails when one of them is written as a literal elsewhere).

The job directory is ``--checkpoint-dir``. What must outlive the application master (Skein's
key-value store dies with it) is a file there, written before the master shuts down:

- ``job.json``      the job spec, written by the client at submit (checked when a job resumes)
- ``events.jsonl``  the event log, one JSON object a line, appended as events happen
- ``metrics.json``  final metrics, written by the coordinator before it exits
- ``result.json``   final status and diagnostics, written by the master before ``shutdown``
- ``progress.jsonl`` progress samples (time, epoch, step, loss, examples/s, workers alive), appended

Each user's jobs are listed in ``/user/<user>/.tfhadoop/jobs/<application id>.json`` (the job
directory and the spec), so that ``status``, ``follow`` and ``jobs`` find a finished job's files.
"""
from __future__ import annotations

import getpass
import os

from tfhadoop.hadoop import LEAN_JVM_FLAGS

# -- files in the job directory ----------------------------------------------------------------
JOB_FILE = "job.json"
EVENTS_FILE = "events.jsonl"
METRICS_FILE = "metrics.json"
RESULT_FILE = "result.json"
PROGRESS_FILE = "progress.jsonl"  # progress samples over time (loss, examples/s, workers) for the plots
APPENDED_FILES = (EVENTS_FILE, PROGRESS_FILE)  # appended to by the master: a killed one may leave them open
LATEST_STATE = "latest/state.json"  # the newest complete checkpoint's training state
TENSORBOARD_DIR = "tensorboard"

# -- files in the master's work dir (the application master container's working directory) ------
# JOB_FILE is also shipped there and to every role container; the coordinator process reads it.
CLUSTER_FILE = "cluster.json"  # the spec the waiting coordinator begins with (written whole, last)
WORKER_SLOTS_FILE = "worker_slots.json"  # the spec's worker slots in task-index order
ERROR_FILE = "error.json"  # {"type", "message"} of a coordinator (or training process) that failed
RESCALE_FILE = "rescale"  # created by the master: the coordinator checkpoints, then exits RESCALE_EXIT

# -- exit codes --------------------------------------------------------------------------------
# A coordinator asked to rescale, and a ring's training process asked to stop (KV_RING_STOP), exit
# with this after their checkpoint: a planned stop, never a failure. (EX_TEMPFAIL of sysexits.h.)
RESCALE_EXIT = 75
STOP_EXIT = RESCALE_EXIT

# -- Skein key-value store (live while the application runs) ----------------------------------
KV_PROGRESS = "progress"
KV_WORKERS_ALIVE = "workers_alive"
KV_EVENTS = "events"  # the recent tail of the event log (a JSON list); the full log is EVENTS_FILE
EVENTS_TAIL = 200  # at most this many newest events under KV_EVENTS (a gRPC message is at most 4 MB)
EVENTS_TAIL_BYTES = 1 << 20  # ... and at most this many bytes of JSON: older ones are dropped first
KV_METRICS = "metrics"
KV_RESULT = "result"
# {"time", "user"}, set by `tfhadoop stop`: training ends after the epoch in progress (checkpoint,
# evaluation, export as at the last epoch) and the job succeeds; metrics.json says "stopped".
KV_STOP = "stop"
KV_REJOINS = "rejoins"
KV_HDFS_RETRIES = "hdfs_retries"  # the coordinator's retried HDFS operations (a JSON list); the master logs them
KV_CLUSTER = "cluster"
KV_PAGE = "page"  # the job page's address through the ResourceManager proxy
# --tensorboard: the URL TensorBoard serves at, published by its container (tensorboard_service.py)
KV_TENSORBOARD = "tensorboard"
KV_ADDR = "addr/"  # addr/<role>/<slot>: host:port a server listens on (kv_addr)
KV_UP = "up/"  # up/<role>/<slot>: the server serves (kv_up)
KV_HEARTBEAT = "hb/"  # hb/<role>/<slot>: "<container id> <count>", bumped every HEARTBEAT_S by the role (kv_heartbeat)
HEARTBEAT_S = 2.0  # a role that stops bumping its heartbeat for --hang-timeout s is killed and replaced
# error/<role>/<slot>: {"container", "error"}, the exception that ended a role process (role.py), so the
# master says why a container failed instead of YARN's "Container failed during execution" (kv_role_error)
KV_ROLE_ERROR = "error/"
KV_RESOURCES = "res/"  # res/<role>/<slot>: {"container", "rss_mb", "peak_rss_mb", ...} every HEARTBEAT_S (resources.py)
# The coordinator's watchdog report: {"pid", "phase", "mark", "beat"} (trainer/python/tfhadoop/trainer/phases.py).
# "beat" is bumped every HEARTBEAT_S by a thread (silent for --hang-timeout s: hung); "mark" when it
# enters a phase or makes progress in it (one phase longer than its --phase-timeouts limit: stuck).
KV_COORDINATOR = "coordinator"
PHASE_STARTING = "starting"  # imports TensorFlow and the model, waits for the cluster spec
PHASE_CONNECTING = "connecting"  # connects to the servers, builds the model, restores the checkpoint
PHASE_TRAINING = "training"  # dispatches closures; each completed closure is progress
PHASE_CHECKPOINTING = "checkpointing"  # saves a checkpoint to HDFS
PHASE_HDFS_RETRY = "hdfs_retry"  # waits out an HDFS outage (hdfs.retry) before trying again
PHASE_EVALUATING = "evaluating"  # evaluates the trained model on the eval split
PHASE_EXPORTING = "exporting"  # publishes the SavedModel and the metrics
PHASES = (PHASE_STARTING, PHASE_CONNECTING, PHASE_TRAINING, PHASE_CHECKPOINTING, PHASE_HDFS_RETRY,
          PHASE_EVALUATING, PHASE_EXPORTING)
# --strategy allreduce (trainer/python/tfhadoop/trainer/allreduce.py, ring_master.py)
KV_RING = "ring"  # {"gen": g, "worker": [host:port, ...], "slots": [...]}: the ring generation to train in
KV_RING_STOP = "ring_stop"  # g: the ring of generation g checkpoints after its current round and exits 75
KV_RING_EXIT = "ring_exit/"  # ring_exit/<slot>: {"gen", "rc", "error"} of the slot's last training process
RING_HANG_ERROR = "TrainingHang"  # the error type of a training process its supervisor killed for making no progress
NATIVE_CRASH_ERROR = "NativeCrash"  # the error type of a coordinator or training process killed by SIGSEGV and kin


def ring_beat_file(gen: int) -> str:
    """In a ring member's working directory: touched by generation ``gen``'s training process
    whenever it makes progress (ring_member.Supervisor watches it)."""
    return f"beat-{gen}"


def ring_error_file(gen: int) -> str:
    """In a ring member's working directory: {"type", "message", "traceback"} of generation
    ``gen``'s training process that failed."""
    return f"error-{gen}.json"

# -- YARN's preemption warnings (yarn/am-agent, watchdogs.PreemptionWarnings) ------------------------
# The Java agent (jars/AM_AGENT_JAR, shipped in the master's files) runs in Skein's application
# master JVM, loaded by ENV_JAVA_TOOL_OPTIONS; it appends each container that an AllocateResponse's
# PreemptionMessage names to PREEMPTION_WARNINGS_FILE in the AM container's working directory (the
# master's work dir), one JSON object a line: {"time": ms, "container": yarn container id,
# "contract": "strict" | "negotiable"}.
AM_AGENT_JAR = "am-agent.jar"
ENV_JAVA_TOOL_OPTIONS = "JAVA_TOOL_OPTIONS"  # am_java_tool_options() (AM JVM only)
PREEMPTION_WARNINGS_FILE = "preemption_warnings.jsonl"
AM_AGENT_OPTION = f"-javaagent:./{AM_AGENT_JAR}={PREEMPTION_WARNINGS_FILE}"


# Skein's application master relays RPCs and heartbeats: a lean JVM.
AM_JVM_FLAGS = " ".join(LEAN_JVM_FLAGS)


def am_java_tool_options() -> str:
    """The AM JVM's JAVA_TOOL_OPTIONS where the agent is shipped: its flags, then the agent's option,
    which must stay last: a Kerberized NodeManager glues its own options on after a ':', and the
    agent applies what was glued to its argument (without the agent, they would be lost)."""
    return f"{AM_JVM_FLAGS} {AM_AGENT_OPTION}"


def without_am_agent(java_tool_options: str) -> str:
    """JAVA_TOOL_OPTIONS less what :func:`am_java_tool_options` set: what a NodeManager's admin
    environment set (a Kerberized cluster's -Djava.security.krb5.conf=...), which YARN appends after a ':'."""
    for ours in (am_java_tool_options(), AM_AGENT_OPTION):
        if java_tool_options.startswith(ours):
            return java_tool_options[len(ours):].lstrip(":").strip()
    return java_tool_options.strip()
# The master's reaction, to the coordinator (files in the work dir, written whole then renamed):
AVOID_WORKERS_FILE = "avoid_workers.json"  # [task index, ...]: hand these workers no new closure
CHECKPOINT_SOON_FILE = "checkpoint_soon.json"  # {"reason", "within_s", "id"}: checkpoint now if one is
# due within within_s s ("ps": now, whatever is due); the coordinator removes the file when done

# -- the TensorBoard container (--tensorboard): a Skein service of its own, not a training role --
TENSORBOARD_SERVICE = "tensorboard"  # also its role name in res/<role>/<slot> (slot 0)

# -- environment of the role containers -------------------------------------------------------
ENV_ROLE = "TFH_ROLE"
ENV_SLOT = "TFH_SLOT"
ENV_PORT = "TFH_PORT"
ENV_GPUS = "TFH_GPUS"
ENV_THREADS = "TFH_THREADS"  # a server's inter-op threads (default 2)
ENV_PARENT_PID = "TFH_PARENT_PID"  # a child process's parent, which it dies with (children.py)

ENV_CONTAINER_ID = "CONTAINER_ID"  # YARN's id of the container a process runs in (the AM's: its attempt)
ENV_SKEIN_CONTAINER_ID = "SKEIN_CONTAINER_ID"  # Skein's id of a service container (service_n)
ENV_HADOOP_USER_NAME = "HADOOP_USER_NAME"
# What every TensorFlow process of a job runs with (the role containers get it from the client's
# Skein spec; processes started by hand call tf_environment first). Fail fast on a lost peer, the
# Keras 2 API the trainer is written for, and INFO logs off.
TF_ENVIRONMENT = {"GRPC_FAIL_FAST": "use_caller", "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "1"}
# gRPC's at-fork handlers off, in every process of ours that holds gRPC threads and starts children
# (job containers, the test suite): a child forked while another thread is inside gRPC is aborted
# before its exec ("Epoll1Poller ... epoll_wait error"). None of them forks and goes on using gRPC.
NO_GRPC_FORK_HANDLERS = {"GRPC_ENABLE_FORK_SUPPORT": "0"}


def tf_environment() -> None:
    """Set TF_ENVIRONMENT's variables not set yet: called by a process's ``main`` before it imports
    TensorFlow, never at import time (importing a name from a module must not change the
    environment of the process that imports it)."""
    for name, value in TF_ENVIRONMENT.items():
        os.environ.setdefault(name, value)


def kv_addr(role: str, slot: int) -> str:
    return f"{KV_ADDR}{role}/{slot}"


def kv_up(role: str, slot: int) -> str:
    return f"{KV_UP}{role}/{slot}"


def kv_heartbeat(role: str, slot: int) -> str:
    return f"{KV_HEARTBEAT}{role}/{slot}"


def kv_resources(role: str, slot: int) -> str:
    return f"{KV_RESOURCES}{role}/{slot}"


def kv_role_error(role: str, slot: int) -> str:
    return f"{KV_ROLE_ERROR}{role}/{slot}"


def kv_ring_exit(slot: int) -> str:
    return f"{KV_RING_EXIT}{slot}"


class EventKind:
    """The ``event`` of each line of the event log (``EVENTS_FILE``), as the masters write them
    and the console, the report, the benches and the tests read them."""

    # the job as a whole
    AM_RESTARTED = "am_restarted"  # an application master attempt >= 2 took over
    CLUSTER_UP = "cluster_up"  # the first spec (PS) or the first ring's workers (allreduce) are up
    FINISHED = "finished"  # the master's last event: status and diagnostics
    SUCCEEDED = "succeeded"  # training, evaluation and export done
    HDFS_RETRY = "hdfs_retry"  # the coordinator waited out an HDFS outage
    TENSORBOARD_UP = "tensorboard_up"  # --tensorboard: its container serves (the URL)
    TENSORBOARD_LOST = "tensorboard_lost"  # ... ended while the job runs: training goes on without it
    MLFLOW_LOGGED = "mlflow_logged"  # the ended job is an MLflow run (--mlflow-tracking-uri): its id and URL
    MLFLOW_FAILED = "mlflow_failed"  # ... could not be logged: why (the job's outcome stands)
    # containers and slots
    CONTAINER_LOST = "container_lost"  # preempted, node lost, killed, failed or hung (the fields say which)
    HANG_DETECTED = "hang_detected"  # a role's heartbeat stopped: its container is killed
    REPLACEMENT_REQUESTED = "replacement_requested"
    REPLACEMENT_UP = "replacement_up"  # a lost slot serves again
    SLOT_ABANDONED = "slot_abandoned"  # after max_worker_restarts failures the slot stays empty
    SLOT_REOPENED = "slot_reopened"  # a new coordinator needs the abandoned slot's worker again
    WORKER_MOVED = "worker_moved"  # a replacement came back at another address
    PS_MOVED = "ps_moved"
    WORKERS_ADDED = "workers_added"  # late workers joined the spec
    PREEMPTION_WARNED = "preemption_warned"  # YARN announced it will take a container back
    PREEMPTION_WITHDRAWN = "preemption_withdrawn"  # ... and still had not after PREEMPTION_WITHDRAWN_S
    # the coordinator (PS strategy)
    COORDINATOR_STARTED = "coordinator_started"  # a coordinator was handed the spec
    FIRST_PROGRESS = "first_progress"  # its first progress: how long a start or restart took
    COORDINATOR_FAILED = "coordinator_failed"
    COORDINATOR_HUNG = "coordinator_hung"
    RESCALE_REQUESTED = "rescale_requested"
    RESCALED = "rescaled"
    # the ring (allreduce strategy)
    GANG_TIMEOUT = "gang_timeout"
    RING_FORMED = "ring_formed"
    RING_REFORMED = "ring_reformed"  # after a member's loss
    RING_GROWN = "ring_grown"
    RING_SHRUNK = "ring_shrunk"  # a warned member left out
    RING_RESTARTED = "ring_restarted"
    RING_STOP_REQUESTED = "ring_stop_requested"
    FIRST_ROUND = "first_round"  # a generation's first round
    TRAINING_HANG = "training_hang"
    TRAINING_PROCESS_FAILED = "training_process_failed"


EVENT_KINDS = frozenset(v for k, v in vars(EventKind).items() if k.isupper())


def moved_event(role: str) -> str:
    """``worker_moved`` or ``ps_moved``."""
    return EventKind.PS_MOVED if role == "ps" else EventKind.WORKER_MOVED


FINAL_STATES = ("FINISHED", "FAILED", "KILLED")
PAGE_ROUTE = "job"  # Skein web UI route of the job page


def job_file(job_dir: str, name: str) -> str:
    return f"{job_dir.rstrip('/')}/{name}"


def user() -> str:
    return os.environ.get(ENV_HADOOP_USER_NAME) or getpass.getuser()


def registry_dir(default_fs: str) -> str:
    """Where this user's training jobs are listed (one small JSON per application)."""
    return f"{default_fs.rstrip('/')}/user/{user()}/.tfhadoop/jobs"
