"""User-facing errors, raised by library code and mapped to messages and exit codes by
``tfhadoop.cli`` only (``-v`` adds the traceback). Library modules import from here, never from
the CLI, so that they stay usable without it."""
from __future__ import annotations


class TfhadoopError(Exception):
    """An error the user can act on: the CLI prints it as one or two lines, no traceback."""

    exit_code = 1


class CommandError(TfhadoopError):
    """Bad input to a command: a flag, a path, a setting."""


class ValidationError(CommandError):
    """A training job that would fail on the cluster, caught before it is submitted."""


class ClusterError(TfhadoopError):
    """The cluster (HDFS, YARN, Java) is not reachable or not usable."""
