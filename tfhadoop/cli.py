"""The ``tfhadoop`` command: one entry point whose subcommands live in their areas.

Each area registers its subcommands through a ``register(subparsers)`` function that
``COMMANDS`` names as ``module:function``; modules are imported only when their command runs (or for ``--help``), so
``tfhadoop records ...`` never pays for importing Spark or TensorFlow.
"""
from __future__ import annotations

import argparse
import atexit
import importlib
import logging
import os
import sys
import threading
import traceback
from typing import NoReturn

from tfhadoop.errors import CommandError, TfhadoopError

__all__ = ["CommandError", "main", "run"]  # CommandError lives in tfhadoop.errors; re-exported for callers of the CLI

# subcommand -> ("module:function", one-line help). The function takes the subparsers and adds the
# subcommand with its own arguments and ``set_defaults(func=...)``.
COMMANDS = {
    "cluster": ("tfhadoop.yarn.cluster_cli:register", "run the embedded single-host Hadoop cluster (HDFS + YARN)"),
    "records": ("tfhadoop.connectors.records_cli:register", "read, inspect and verify TFRecord files"),
    "export": ("tfhadoop.spark.export:register", "export a Hive table, query or files as a sharded TFRecord dataset"),
    "predict": ("tfhadoop.spark.predict:register", "score a Hive table or files with a SavedModel on Spark executors"),
    "demo": ("tfhadoop.demo:register", "run the main job end to end on the embedded cluster"),
    "train": ("tfhadoop.trainer.train_cli:register", "train a model on YARN: parameter servers + workers, survives preemption"),
    "status": ("tfhadoop.trainer.jobs_cli:register_status", "state, progress and events of a training application"),
    "logs": ("tfhadoop.trainer.jobs_cli:register_logs", "logs of a training application (--role worker:1)"),
    "kill": ("tfhadoop.trainer.jobs_cli:register_kill", "kill a training application"),
    "stop": ("tfhadoop.trainer.jobs_cli:register_stop", "end a training job after the epoch in progress, keeping its model"),
    "follow": ("tfhadoop.trainer.jobs_cli:register_follow", "follow a training job to its end (Ctrl-C detaches)"),
    "jobs": ("tfhadoop.trainer.jobs_cli:register_jobs", "this user's training jobs"),
    "tensorboard": ("tfhadoop.trainer.tensorboard_cli:register", "TensorBoard on a training job's event files on HDFS"),
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tfhadoop",
        description="Hadoop-resident data into TensorFlow models, on the same cluster.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (target, help_text) in COMMANDS.items():
        if only is not None and name != only:
            sub.add_parser(name, help=help_text, add_help=False)
            continue
        module, _, function = target.partition(":")
        getattr(importlib.import_module(module), function)(sub)
        if name in KERBEROS_COMMANDS:
            kerberos_options(sub.choices[name])
    return parser


# Commands that reach HDFS or YARN: on a Kerberized cluster they log in from --keytab, or need a
# ticket. train/status/logs/kill/follow/jobs always talk to YARN; the others check when they
# first reach HDFS (tfhadoop.connectors.hdfs).
KERBEROS_COMMANDS = {"records", "export", "demo", "train", "status", "logs", "kill", "stop", "follow", "jobs",
                     "tensorboard"}
YARN_COMMANDS = {"train", "status", "logs", "kill", "stop", "follow", "jobs"}


def kerberos_options(p: argparse.ArgumentParser) -> None:
    """On the command's own parser, or on each of its actions (`records count`, ...)."""
    subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    if subs:
        for child in subs[0].choices.values():
            kerberos_options(child)
        return
    g = p.add_argument_group("Kerberos (clusters with hadoop.security.authentication=kerberos)")
    g.add_argument("--principal", help="log in as this principal from --keytab (default: the kinit ticket cache)")
    g.add_argument("--keytab", help="keytab file of --principal")


def _kerberos_login(args) -> None:
    """--principal/--keytab: kinit into a private cache; a YARN command without them needs a ticket."""
    from tfhadoop import kerberos

    principal, keytab = getattr(args, "principal", None), getattr(args, "keytab", None)
    if bool(principal) != bool(keytab):
        raise CommandError("--principal and --keytab go together")
    if args.command not in KERBEROS_COMMANDS or not kerberos.security_enabled():
        return
    kerberos.prepare_skein_env()
    if keytab and principal:  # both or neither: checked above
        kerberos.login_from_keytab(principal, keytab)
    elif args.command in YARN_COMMANDS or args.command == "export":
        # export: Spark's driver JVM would fail later with a stack trace (Hive warehouse, output on
        # the cluster, or executors on YARN); checked here so it fails in one line like the rest.
        from tfhadoop import hadoop

        conf = hadoop.load_conf()
        yarn = f"YARN at {conf.get('yarn.resourcemanager.address') or conf.default_fs}"
        if args.command in YARN_COMMANDS or getattr(args, "master", None) == "yarn":
            kerberos.require_ticket(yarn)
        elif not str(getattr(args, "output", "") or "").startswith("file:"):
            kerberos.require_ticket(conf.default_fs)


def _version() -> str:
    """The installed distribution's version (setup.py's, the one place it is written)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"tfhadoop {version('tfhadoop')}"
    except PackageNotFoundError:
        return "tfhadoop (not installed: running from a source tree)"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # Import only the area the user asked for; all of them for a bare `tfhadoop --help`.
    first = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(first if first in COMMANDS else None)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        _kerberos_login(args)
        result = args.func(args)
    except TfhadoopError as exc:  # errors the user can act on: their message, no traceback unless -v
        if args.verbose:
            traceback.print_exc()
        print(f"tfhadoop {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return int(result or 0)


def run() -> NoReturn:
    """The ``tfhadoop`` process: :func:`main`, then its exit. A command that loaded TensorFlow
    (train's model check, predict) would spend ~1 s more after its last line in Python's teardown
    of TensorFlow's thousands of modules (0.8-1.0 s on a 2-core host, 2026-11-28); such a process
    ends without it once its exit handlers (a keytab login's ticket cache, temporary directories),
    logs and output are done. With a thread of ours still running it waits for it, as usual."""
    code = main()
    if "tensorflow" in sys.modules and threading.active_count() == 1:
        atexit._run_exitfuncs()  # what the interpreter's own exit runs first (logging's flush included)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe: nothing more can be said there
                pass
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    run()
