"""The HDFS error inside a failed Spark call, as one line (``tfhadoop.errors.hdfs_error``).

A Py4J ``Py4JJavaError`` (or PySpark's captured exception) carries the Java exception; the HDFS
one is somewhere down its cause chain (a SparkException "Job aborted" around the task's error,
around Hadoop's RemoteException, which names the NameNode's exception class as text)."""
from __future__ import annotations

from tfhadoop.errors import HdfsAccessError, hdfs_error


def hdfs_error_of(exc: BaseException, what: str = "") -> HdfsAccessError | None:
    """The one-line error for the first HDFS exception in ``exc``'s Java cause chain, else None."""
    throwable = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
    seen = 0
    while throwable is not None and seen < 20:  # a cause chain is short; a cycle must not hang us
        seen += 1
        try:
            name = throwable.getClass().getName()
            if name == "org.apache.hadoop.ipc.RemoteException":
                name = throwable.getClassName()  # the NameNode's exception, by name
            found = hdfs_error(name, throwable.getMessage(), what)
            if found is not None:
                return found
            throwable = throwable.getCause()
        except Exception:  # noqa: BLE001 - the JVM is gone or the object is not a Throwable
            return None
    return None
