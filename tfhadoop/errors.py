"""User-facing errors, raised by library code and mapped to messages and exit codes by
``tfhadoop.cli`` only (``-v`` adds the traceback). Library modules import from here, never from
the CLI, so that they stay usable without it."""
from __future__ import annotations

import re


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


class HdfsAccessError(CommandError):
    """HDFS refused an operation or could not be reached, said in one line (the Java exception it
    came from, with its stack, is the ``__cause__``, shown with ``-v``)."""


class HdfsPermissionError(HdfsAccessError):
    """An AccessControlException: the user, the access wanted and the inode that refused it."""


class HdfsQuotaError(HdfsAccessError):
    """A namespace or space quota of a directory would be exceeded."""


class HdfsSafeModeError(HdfsAccessError):
    """The NameNode is in safe mode: read-only until it leaves."""


class HdfsParentError(HdfsAccessError):
    """The parent of the path written is missing or is a file."""


class HdfsUnreachableError(HdfsAccessError):
    """No NameNode answers at the configured address."""


# Java exception (simple class name) -> the error it becomes; subclasses of Hadoop's own
# exceptions are listed by name (NSQuotaExceededException, ...), as they cross Py4J and RPC as text.
_HDFS_ERRORS = {
    "AccessControlException": HdfsPermissionError,
    "SnapshotAccessControlException": HdfsPermissionError,
    "QuotaExceededException": HdfsQuotaError,
    "NSQuotaExceededException": HdfsQuotaError,
    "DSQuotaExceededException": HdfsQuotaError,
    "SafeModeException": HdfsSafeModeError,
    "ParentNotDirectoryException": HdfsParentError,
    "ConnectException": HdfsUnreachableError,
}


def hdfs_error(java_class: str, message: str | None, what: str = "") -> HdfsAccessError | None:
    """The one-line error for a Java exception that HDFS raised (``java_class`` with or without its
    package, ``message`` its getMessage()), or None when it is not one of those above. ``what``:
    the operation, e.g. ``writing hdfs:///x``, put in front."""
    kind = _HDFS_ERRORS.get(java_class.rsplit(".", 1)[-1])
    text = (message or "").strip()
    if kind is None and java_class.endswith("FileNotFoundException") and "parent" in text.lower():
        kind = HdfsParentError  # a create whose parent directory does not exist
    if kind is None:
        return None
    first = text.splitlines()[0].strip() if text else java_class  # the NameNode's reason, without its stack
    prefix = f"{what}: " if what else ""
    if kind is HdfsSafeModeError:
        sentence = re.split(r"\.(?:\s|$)", first)[0]
        return kind(f"{prefix}{sentence}: the NameNode is read-only until it leaves safe mode "
                    "(`hdfs dfsadmin -safemode get` says when; an administrator can `-safemode leave`)")
    if kind is HdfsUnreachableError:
        addr = re.search(r"to (\S+:\d+) failed on connection exception", text)
        where = f"at {addr.group(1)} " if addr else ""
        return kind(f"{prefix}nothing answers {where}(connection refused): is the cluster's NameNode running? "
                    "(`tfhadoop cluster status` for the embedded one)")
    if kind is HdfsQuotaError:
        return kind(f"{prefix}HDFS quota exceeded: {first}")
    return kind(f"{prefix}{first}")
