"""Cluster lifecycle on a cluster of its own: bad states give clear errors, a crashed cluster is
recovered with its HDFS data, `down` ends exactly what `up` started."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.terminal import interruptible
from tests.waiting import wait_for
from tfhadoop.cli import CommandError, main
from tfhadoop.yarn.embedded import ClusterOptions, EmbeddedCluster


def test_help_on_every_cluster_action(capsys):
    for argv in (["--help"], ["cluster", "--help"], ["cluster", "up", "--help"], ["cluster", "down", "--help"],
                 ["cluster", "status", "--help"], ["cluster", "env", "--help"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 0
        assert "usage: tfhadoop" in capsys.readouterr().out


def test_down_when_nothing_runs(tmp_path, capsys):
    assert main(["cluster", "down", "--state-dir", str(tmp_path)]) == 0
    assert "nothing to stop" in capsys.readouterr().out


def test_status_and_env_when_nothing_runs(tmp_path, capsys):
    assert main(["cluster", "status", "--state-dir", str(tmp_path)]) == 3
    assert "not running" in capsys.readouterr().out
    assert main(["cluster", "env", "--state-dir", str(tmp_path)]) == 3


def test_port_in_use_is_a_clear_error(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(CommandError, match=f"port {port} \\(--namenode-port\\) is in use"):
            EmbeddedCluster(tmp_path).up(ClusterOptions(namenode_port=port))


def test_missing_java_is_a_clear_error(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = os.path.dirname(sys.executable)  # a PATH without java
    out = subprocess.run([sys.executable, "-m", "tfhadoop", "cluster", "up", "--state-dir", str(tmp_path)],
                         env=env, capture_output=True, text=True)
    assert out.returncode == 1
    assert "Java not found" in out.stderr


def test_hadoop_conf_dir_selects_a_real_cluster(tmp_path, monkeypatch):
    from tfhadoop import hadoop

    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "core-site.xml").write_text(
        "<configuration><property><name>fs.defaultFS</name><value>hdfs://nn.example:8020</value>"
        "</property></configuration>")
    monkeypatch.setenv("HADOOP_CONF_DIR", str(conf))
    assert not hadoop.is_embedded()
    assert hadoop.load_conf().default_fs == "hdfs://nn.example:8020"
    monkeypatch.delenv("HADOOP_CONF_DIR")
    monkeypatch.setenv("TFHADOOP_STATE_DIR", str(tmp_path / "nothing-here"))
    with pytest.raises(CommandError, match="tfhadoop cluster up"):
        hadoop.load_conf()


@pytest.mark.slow
def _shared_driver(cluster: EmbeddedCluster) -> tuple[str, int]:
    """Two YARN clients of ``cluster`` share one driver (tfhadoop.yarn.warm_driver), which answers;
    its address and pid."""
    from tfhadoop.yarn import warm_driver
    from tfhadoop.yarn.client import skein_client

    with skein_client() as first, skein_client() as second:
        assert first.address == second.address  # a driver of its own each would listen on a port of its own
        first.get_applications()
    data = json.loads((cluster.state_dir / warm_driver.DIR / warm_driver.DRIVER_FILE).read_text())
    assert data["address"] == first.address and _alive(data["pid"]), data
    return data["address"], data["pid"]


def test_crashed_cluster_recovers_with_its_hdfs_data(tmp_path, monkeypatch):
    """... and its clients' shared Skein driver: one per cluster JVM, replaced when killed, retired
    with the JVM it served (a crash, `down`)."""
    from hdfs import InsecureClient

    from tfhadoop.hadoop import HadoopConf

    cluster = EmbeddedCluster(tmp_path / "state")
    small = ClusterOptions(node_managers=1, nm_memory_mb=2048, nm_vcores=2)
    info = cluster.up(small)
    assert info["start_seconds"] < 180  # started, with margin for a slow host
    monkeypatch.setenv("HADOOP_CONF_DIR", str(cluster.conf_dir))
    monkeypatch.setenv("PATH", f"{cluster.bin_dir}{os.pathsep}{os.environ['PATH']}")
    try:
        conf = HadoopConf.load(cluster.conf_dir)
        InsecureClient(conf.webhdfs_url, user="root").write("/keep/me.txt", b"survives a crash")
        _, killed = _shared_driver(cluster)
        os.kill(killed, signal.SIGKILL)  # a driver that died: the next client starts another
        wait_for(lambda: not _alive(killed), 30, "the killed driver to go")
        shared, first_driver = _shared_driver(cluster)
        assert first_driver != killed
        with monkeypatch.context() as other_user:  # the shared driver acts as its user: not shared with another
            other_user.setenv("HADOOP_USER_NAME", "someone-else")
            from tfhadoop.yarn.client import skein_client

            with skein_client() as theirs:
                assert theirs.address != shared
                theirs.get_applications()
        assert _shared_driver(cluster) == (shared, first_driver)  # still there for its user
        os.kill(info["pid"], signal.SIGKILL)  # a crash: no shutdown hook, pid file left behind
        deadline = time.monotonic() + 30
        while cluster.pid() is not None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert cluster.pid_file.exists() and not cluster.is_running()
        again = cluster.up(small)
        assert again["pid"] != info["pid"]
        assert again["fs_default"] == info["fs_default"]  # same NameNode port: stored URLs stay valid
        conf = HadoopConf.load(cluster.conf_dir)
        with InsecureClient(conf.webhdfs_url, user="root").read("/keep/me.txt") as reader:
            assert reader.read() == b"survives a crash"  # pyright: ignore[reportAttributeAccessIssue] - hdfs's read() yields a generator only when given chunk_size or delimiter: a file object here
        assert not _alive(first_driver)  # retired with the JVM it was bound to (its ResourceManager's ports)
        _, driver = _shared_driver(cluster)  # a new one, for the new JVM
    finally:
        pid = cluster.pid()
        assert cluster.down()
    assert pid is not None and not _alive(pid)
    assert not cluster.pid_file.exists()
    wait_for(lambda: not _alive(driver), 30, "`down` to stop the shared driver")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie of ours is not alive
    try:
        return open(f"/proc/{pid}/stat").read().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.slow
def test_interrupted_up_leaves_a_complete_state_dir(tmp_path):
    """Ctrl-C on `cluster up` once its JVM runs: the next `up` answers with a state dir whose
    client commands (bin/yarn, bin/hdfs) work, and so does an `up` of a running cluster whose
    commands were lost."""
    cluster = EmbeddedCluster(tmp_path / "state")
    up = ["cluster", "up", "--state-dir", str(cluster.state_dir), "--node-managers", "1", "--nm-memory-mb", "2048",
          "--nm-vcores", "2"]
    argv = [sys.executable, "-m", "tfhadoop", *up]
    first = subprocess.Popen(interruptible("tfhadoop", *up), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: cluster.pid() is not None or first.poll() is not None, 120, "the cluster JVM to start",
                 interval=0.1, diagnose=lambda: first.communicate()[0] if first.poll() is not None else "up still runs")
        first.send_signal(signal.SIGINT)  # Ctrl-C while `up` waits for the daemons
        out, _ = first.communicate(timeout=60)
        assert first.returncode == 130 and not cluster.info_file.exists(), \
            f"`up` was to be interrupted while the daemons started, not end {first.returncode}: {out}"
        for attempt in ("after the interrupt", "after losing bin/"):
            again = subprocess.run(argv, capture_output=True, text=True, timeout=300)
            assert again.returncode == 0, f"{attempt}: {again.stdout}{again.stderr}"
            assert cluster.is_running(), attempt
            yarn = subprocess.run([str(cluster.bin_dir / "yarn"), "classpath"], capture_output=True, text=True)
            assert yarn.returncode == 0 and yarn.stdout.startswith(f"{cluster.conf_dir}:"), (attempt, yarn)
            hdfs = subprocess.run([str(cluster.bin_dir / "hdfs"), "classpath"], capture_output=True, text=True)
            assert hdfs.returncode == 0 and hdfs.stdout.startswith(f"{cluster.conf_dir}:"), (attempt, hdfs)
            for name in ("yarn", "hdfs"):
                (cluster.bin_dir / name).unlink()
    finally:
        if first.poll() is None:
            first.kill()
        cluster.down()
    assert not cluster.is_running()
