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


class TrainingFailed(TfhadoopError):
    """A training job ended without success on YARN (``Trainer.fit``): its application id, final
    status, diagnostics and where to look."""

    def __init__(self, app_id: str, final_status: str, diagnostics, checkpoint_dir: str, log: str | None = None):
        self.app_id, self.final_status, self.diagnostics = app_id, final_status, diagnostics
        self.checkpoint_dir, self.log = checkpoint_dir, log
        super().__init__(f"training {app_id} ended {final_status}: {diagnostics}; events.jsonl in {checkpoint_dir}, "
                         f"container logs: tfhadoop logs {app_id}" + (f", client log: {log}" if log else ""))
