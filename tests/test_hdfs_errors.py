"""The Java exceptions HDFS raises become one-line errors (tfhadoop.errors.hdfs_error); the texts
are those the NameNode and the Hadoop client write."""
from __future__ import annotations

import pytest

from tfhadoop import errors


@pytest.mark.parametrize("java_class, message, kind, expected", [
    ("org.apache.hadoop.security.AccessControlException",
     'Permission denied: user=root, access=WRITE, inode="/":hadoop:supergroup:drwxr-xr-x\n'
     "\tat org.apache.hadoop.hdfs.server.namenode.FSPermissionChecker.check(FSPermissionChecker.java:506)",
     errors.HdfsPermissionError,
     'writing hdfs:///x: Permission denied: user=root, access=WRITE, inode="/":hadoop:supergroup:drwxr-xr-x'),
    ("org.apache.hadoop.hdfs.protocol.NSQuotaExceededException",
     "The NameSpace quota (directories and files) of directory /q is exceeded: quota=1 file count=2",
     errors.HdfsQuotaError,
     "writing hdfs:///x: HDFS quota exceeded: The NameSpace quota (directories and files) of directory /q "
     "is exceeded: quota=1 file count=2"),
    ("DSQuotaExceededException",
     "The DiskSpace quota of /q is exceeded: quota = 1024 B = 1 KB but diskspace consumed = 402653184 B = 384 MB",
     errors.HdfsQuotaError,
     "writing hdfs:///x: HDFS quota exceeded: The DiskSpace quota of /q is exceeded: quota = 1024 B = 1 KB but "
     "diskspace consumed = 402653184 B = 384 MB"),
    ("org.apache.hadoop.hdfs.server.namenode.SafeModeException",
     "Cannot create directory /x. Name node is in safe mode.\nIt was turned on manually. "
     "Use \"hdfs dfsadmin -safemode leave\" to turn safe mode off. NamenodeHostName:localhost",
     errors.HdfsSafeModeError,
     "writing hdfs:///x: Cannot create directory /x: the NameNode is read-only until it leaves safe mode "
     "(`hdfs dfsadmin -safemode get` says when; an administrator can `-safemode leave`)"),
    ("org.apache.hadoop.fs.ParentNotDirectoryException",
     "/afile (is not a directory)\n\tat org.apache.hadoop.hdfs.server.namenode.FSDirectory.verifyParentDir",
     errors.HdfsParentError, "writing hdfs:///x: /afile (is not a directory)"),
    ("java.io.FileNotFoundException", "Parent directory doesn't exist: /missing",
     errors.HdfsParentError, "writing hdfs:///x: Parent directory doesn't exist: /missing"),
    ("java.net.ConnectException",
     "Call From host/10.0.0.1 to localhost:42587 failed on connection exception: java.net.ConnectException: "
     "Connection refused; For more details see:  http://wiki.apache.org/hadoop/ConnectionRefused",
     errors.HdfsUnreachableError,
     "writing hdfs:///x: nothing answers at localhost:42587 (connection refused): is the cluster's NameNode "
     "running? (`tfhadoop cluster status` for the embedded one)"),
])
def test_each_kind_is_one_line(java_class, message, kind, expected):
    err = errors.hdfs_error(java_class, message, "writing hdfs:///x")
    assert isinstance(err, kind) and isinstance(err, errors.CommandError)
    assert str(err) == expected


def test_other_exceptions_are_left_alone():
    assert errors.hdfs_error("java.lang.IllegalStateException", "a bug") is None
    assert errors.hdfs_error("java.io.FileNotFoundException", "File does not exist: /in") is None


class _Throwable:
    """A Java exception as Py4J shows it: getClass().getName(), getMessage(), getCause()."""

    def __init__(self, name, message, cause=None, remote=None):
        self.name, self.message, self.cause, self.remote = name, message, cause, remote

    def getClass(self):  # Java method names, as Py4J exposes them
        return self

    def getName(self):
        return self.name

    def getMessage(self):
        return self.message

    def getCause(self):
        return self.cause

    def getClassName(self):  # RemoteException: the server-side class
        return self.remote


def test_the_hdfs_exception_is_found_down_a_spark_cause_chain():
    from tfhadoop.spark.java_errors import hdfs_error_of

    remote = _Throwable("org.apache.hadoop.ipc.RemoteException", "The DiskSpace quota of /q is exceeded: quota = 1 B",
                        remote="org.apache.hadoop.hdfs.protocol.DSQuotaExceededException")
    job = _Throwable("org.apache.spark.SparkException", "Job aborted due to stage failure: ...",
                     _Throwable("org.apache.spark.SparkException", "Task failed while writing rows", remote))
    failure = Exception("An error occurred while calling o123.save.")
    failure.java_exception = job  # type: ignore[attr-defined] - as Py4JJavaError carries it
    err = hdfs_error_of(failure, "export to hdfs:///q/x")
    assert isinstance(err, errors.HdfsQuotaError)
    assert str(err) == "export to hdfs:///q/x: HDFS quota exceeded: The DiskSpace quota of /q is exceeded: quota = 1 B"
    failure.java_exception = _Throwable("java.lang.IllegalStateException", "a bug")  # type: ignore[attr-defined]
    assert hdfs_error_of(failure) is None
    assert hdfs_error_of(ValueError("not from Java")) is None
