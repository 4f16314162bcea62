"""``tfhadoop tensorboard APP | --logdir URL``: TensorBoard on a job's event files on HDFS.

The coordinator writes the event files with ``tf.summary`` into ``<job dir>/tensorboard/{train,eval}``
(trainer/summaries.py). A stand-alone ``tensorboard --logdir hdfs://...`` cannot read them: with
TensorFlow installed, TensorBoard reads through ``tf.io.gfile``, and TensorFlow 2.21 has no
``hdfs://`` file system of its own. This command runs TensorBoard in its own process after
registering the tfhdfs plugin (:mod:`tfhadoop.tfhdfs`, hdfs-native: a Kerberos ticket on a client,
delegation tokens in a container), so TensorBoard's reads go through the same client as the
trainer's writes. TensorBoard's fast loader (a Rust data server of its own) reads only local and
``gs://`` paths, so the Python loader is asked for explicitly.
"""
from __future__ import annotations

import re
import socket
import sys
import threading

from tfhadoop.errors import CommandError

DEFAULT_HOST = "localhost"
DEFAULT_PORT = 6006  # TensorBoard's own default
EVENT_FILE = re.compile(r"(^|/)events\.out\.tfevents\.[^/]*$")
WILDCARD_HOSTS = ("0.0.0.0", "::")


def job_logdir(default_fs: str, app: str) -> str:
    """The TensorBoard folder of job ``app`` (an application id, or the newest job of that name)
    from this user's job registry, the one `status` and `follow` read."""
    from tfhadoop.trainer import jobdir, protocol

    entry = jobdir.find(default_fs, app)
    if not entry:
        raise CommandError(f"{app} is not a training job submitted by {protocol.user()} "
                           f"(neither an application id nor a job name in {protocol.registry_dir(default_fs)})")
    return protocol.job_file(entry["job_dir"], protocol.TENSORBOARD_DIR)


def logdir_of(args, default_fs: str) -> str:
    """The folder to serve: the job's, or ``--logdir`` qualified against fs.defaultFS."""
    from tfhadoop.trainer.validate import qualify

    if bool(args.app) == bool(args.logdir):
        raise CommandError("name a job (APP) or --logdir URL, not both" if args.app else
                           "name a job (APP: an application id or a job name) or --logdir URL")
    if args.app:
        return job_logdir(default_fs, args.app)
    return qualify(args.logdir, default_fs, "--logdir")


def event_files(logdir: str) -> list[str]:
    """The event files under ``logdir`` (any depth: one folder per run); an error in one line
    when there are none yet, naming where it looked."""
    from tfhadoop.connectors import hdfs

    try:
        files = [f for f in hdfs.filesystem(logdir).expand(logdir) if EVENT_FILE.search(f)]
    except FileNotFoundError:
        files = []
    except OSError as exc:  # HdfsError, PermissionError: one line of it
        raise CommandError(f"cannot list {logdir}: {exc}") from exc
    if not files:
        raise CommandError(f"no TensorBoard event files under {logdir} yet (a job writes them from its first "
                           "progress report, and makes them readable at each checkpoint)")
    return files


def start(logdir: str, host: str, port: int, public_host: str | None = None) -> str:
    """Start TensorBoard on ``logdir`` in this process (a daemon thread serves); its URL, which
    names a wildcard ``host`` by ``public_host`` (default this host's FQDN). Also the
    ``--tensorboard`` container's way to start it (tensorboard_service.py)."""
    from tfhadoop.trainer import protocol

    protocol.tf_environment()  # TensorFlow's INFO logs off, before it is imported
    import tfhadoop.tfhdfs  # noqa: F401 - registers hdfs:// in tf.io.gfile, which TensorBoard reads through

    try:
        from tensorboard import program
    except ImportError as exc:
        raise CommandError("TensorBoard is not installed: pip install 'tfhadoop[tensorboard]' "
                           "(make setup installs it)") from exc
    board = program.TensorBoard()
    board.configure(logdir=logdir, host=host, port=port, load_fast="false")
    try:
        url = board.launch()
    except program.TensorBoardServerException as exc:  # port in use, address not available, ...
        raise CommandError(f"cannot serve TensorBoard on {host}:{port}: {exc.msg}") from exc
    if host in WILDCARD_HOSTS:  # reachable by the host's name, not by the wildcard address
        name = public_host or socket.getfqdn()
        url = url.replace(f"//{host}:", f"//{name}:", 1).replace(f"//[{host}]:", f"//{name}:", 1)
    return url


def tensorboard(args) -> int:
    from tfhadoop import hadoop

    conf = hadoop.use_cluster()
    logdir = logdir_of(args, conf.default_fs)
    files = event_files(logdir)
    url = start(logdir, args.host, args.port)
    print(url, flush=True)
    print(f"TensorBoard of {logdir} ({len(files)} event files so far; new ones are read as they come). "
          "Ctrl-C stops it.", file=sys.stderr, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        return 0
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "tensorboard", help="TensorBoard on a training job's event files on HDFS",
        description="Run TensorBoard on the event files a training job writes to HDFS (train and eval "
                    "scalars and the workers in the cluster, by global step, across restarts). It reads "
                    "hdfs:// through tfhadoop's own HDFS client, with a Kerberos ticket where the cluster "
                    "needs one, prints its URL on one line and serves until Ctrl-C.")
    p.add_argument("app", nargs="?", metavar="APP",
                   help="the job: an application id, or a job name (--name; the newest job of that name)")
    p.add_argument("--logdir", metavar="URL",
                   help="a folder of event files instead: hdfs://nn:port/x, hdfs:///x or /x (on fs.defaultFS), "
                        "or x (under /user/<you>)")
    p.add_argument("--host", default=DEFAULT_HOST,
                   help=f"address to listen on (default {DEFAULT_HOST}; 0.0.0.0 for every interface)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"port to listen on (default {DEFAULT_PORT}; 0 picks a free one)")
    p.set_defaults(func=tensorboard)
