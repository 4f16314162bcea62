"""HDFS refusing `tfhadoop export` or `tfhadoop records` is one line on stderr (the path, the
user, the reason), not pages of Java stack; `-v` keeps the stack. Against a cluster of its own
with HDFS permission checks on (`cluster up --permissions`), the client acting as another user
than the HDFS superuser that started it."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tfhadoop.yarn.embedded import ClusterOptions, EmbeddedCluster

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

USER = "alice"  # not the superuser (the user running the cluster JVM)


@pytest.fixture(scope="module")
def strict_cluster(tmp_path_factory):
    """A small cluster with permissions on, /locked (hadoop:hadoop, 555), /q (namespace quota 1)
    and /afile (a file), made by the superuser; the envs of a client acting as USER and as the superuser."""
    cluster = EmbeddedCluster(tmp_path_factory.mktemp("strict") / "state")
    cluster.up(ClusterOptions(node_managers=1, nm_memory_mb=2048, nm_vcores=2, permissions=True))
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("HADOOP_USER_NAME",)}
        env.update(HADOOP_CONF_DIR=str(cluster.conf_dir), TFHADOOP_STATE_DIR=str(cluster.state_dir),
                   PATH=f"{cluster.bin_dir}{os.pathsep}{env['PATH']}")
        hdfs = str(cluster.bin_dir / "hdfs")
        for argv in (["dfs", "-mkdir", "-p", "/locked", "/q", f"/user/{USER}"],
                     ["dfs", "-chown", "hadoop:hadoop", "/locked"], ["dfs", "-chmod", "555", "/locked"],
                     ["dfs", "-chown", f"{USER}:{USER}", "/q", f"/user/{USER}"], ["dfsadmin", "-setQuota", "1", "/q"],
                     ["dfs", "-touchz", "/afile"], ["dfs", "-chmod", "777", "/afile"]):
            subprocess.run([hdfs, *argv], env=env, check=True, capture_output=True, timeout=120)
        yield cluster, {**env, "HADOOP_USER_NAME": USER}, env
    finally:
        cluster.down()


def _tfh(env, *argv, timeout=600):
    return subprocess.run([sys.executable, "-m", "tfhadoop", *argv], env=env, capture_output=True, text=True,
                          timeout=timeout)


def _the_error_line(proc, command: str) -> str:
    """The one line that says what went wrong; nothing else on stderr looks like an error or a stack."""
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    lines = proc.stderr.splitlines()
    errors = [line for line in lines if line.startswith(f"tfhadoop {command}: error: ")]
    assert len(errors) == 1, proc.stderr[-3000:]
    noise = [line for line in lines if line.lstrip().startswith("at ") or "Exception" in line or "Traceback" in line]
    assert noise == [] or noise == errors, proc.stderr[-3000:]
    return errors[0]


@pytest.fixture(scope="module")
def csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("csv") / "in.csv"
    path.write_text("id,score\n" + "".join(f"{i},{i / 8}\n" for i in range(50)))
    return f"file://{path}"


def test_export_to_a_directory_the_user_may_not_write(strict_cluster, csv):
    _, env, _ = strict_cluster
    argv = ["export", "--input", csv, "--input-format", "csv", "--output", "hdfs:///locked/x", "--shards", "1"]
    line = _the_error_line(_tfh(env, *argv), "export")
    assert "export to hdfs:///locked/x: Permission denied: " in line, line
    assert f'user={USER}, access=WRITE, inode="/locked":hadoop:hadoop:dr-xr-xr-x' in line, line
    verbose = _tfh(env, "-v", *argv)
    assert verbose.returncode == 1
    assert "org.apache.hadoop.security.AccessControlException" in verbose.stderr
    assert "\tat org.apache.hadoop" in verbose.stderr and "Traceback" in verbose.stderr  # the stack, with -v


def test_records_writes_refused_by_hdfs_are_one_line(strict_cluster, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    cluster, env, admin = strict_cluster
    parquet = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3]}), parquet)

    def write(url):
        return _the_error_line(_tfh(env, "records", "from-parquet", str(parquet), "-o", url, timeout=120), "records")

    line = write("hdfs:///locked/x.tfrecord")
    assert f'Permission denied: user={USER}, access=WRITE, inode="/locked":hadoop:hadoop:dr-xr-xr-x' in line, line
    line = write("hdfs:///q/x.tfrecord")
    assert "HDFS quota exceeded: The NameSpace quota (directories and files) of directory /q is exceeded" in line, line
    line = write("hdfs:///afile/x.tfrecord")
    assert "/afile (is not a directory)" in line, line
    hdfs = str(cluster.bin_dir / "hdfs")
    subprocess.run([hdfs, "dfsadmin", "-safemode", "enter"], env=admin, check=True,
                   capture_output=True, timeout=120)
    try:
        line = write(f"hdfs:///user/{USER}/x.tfrecord")
        assert "the NameNode is read-only until it leaves safe mode" in line, line
    finally:
        subprocess.run([hdfs, "dfsadmin", "-safemode", "leave"], env=admin, check=True,
                       capture_output=True, timeout=120)
    cluster.stop_namenode()
    try:
        line = _the_error_line(_tfh(env, "records", "count", f"hdfs:///user/{USER}", timeout=120), "records")
        assert "cannot reach HDFS at" in line and "Connection refused" in line, line
    finally:
        cluster.start_namenode()
