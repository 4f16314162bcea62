"""Start, stop and inspect the embedded Hadoop cluster (one JVM: HDFS + YARN, see EmbeddedCluster.java).

The state dir holds everything: ``conf/`` (client configuration with the ports the daemons got),
``hdfs/`` (NameNode and DataNode storage, kept across restarts), ``target/`` (NodeManager work and
log dirs), ``logs/``, ``bin/`` (``yarn`` and ``hdfs`` commands for clients such as Skein),
``cluster.pid`` (written at launch), ``cluster.json`` (written by the JVM once it is ready) and
``skein/`` (the Skein driver its clients share, tfhadoop.yarn.warm_driver).

This module runs the cluster's JVM (up, down, status); the other roles have a module each:
``embedded_options`` (what ``up`` takes), ``embedded_commands`` (the files written before the JVM
starts), ``embedded_processes`` (/proc), ``embedded_health`` (status queries) and
``embedded_nodemanager`` (extra NodeManagers). Callers keep importing from here.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import time
from pathlib import Path

from tfhadoop.errors import CommandError
from tfhadoop.hadoop import LEAN_JVM_FLAGS, HadoopConf, default_state_dir, java_executable, java_home
from tfhadoop.ports import free_port, port_is_free
from tfhadoop.yarn import warm_driver
from tfhadoop.yarn.embedded_commands import read_classpath, write_commands
from tfhadoop.yarn.embedded_health import cluster_health
from tfhadoop.yarn.embedded_nodemanager import NodeManagerProcess, start_node_manager
from tfhadoop.yarn.embedded_options import ClusterOptions
from tfhadoop.yarn.embedded_processes import application_master_pid, cmdline, pid_alive, pids_under

# Callers import these from here (tfhadoop.yarn.embedded), wherever each one lives.
__all__ = ["ClusterOptions", "EmbeddedCluster", "NodeManagerProcess", "application_master_pid", "cluster_health"]

log = logging.getLogger(__name__)

MAIN_CLASS = "tfhadoop.cluster.EmbeddedCluster"


class EmbeddedCluster:
    """One embedded cluster, identified by its state dir."""

    def __init__(self, state_dir: str | os.PathLike | None = None):
        self.state_dir = Path(state_dir).expanduser().resolve() if state_dir else default_state_dir().resolve()
        self.conf_dir = self.state_dir / "conf"
        self.bin_dir = self.state_dir / "bin"
        self.logs_dir = self.state_dir / "logs"
        self.pid_file = self.state_dir / "cluster.pid"
        self.info_file = self.state_dir / "cluster.json"

    # -- process identity --------------------------------------------------------------------
    def pid(self) -> int | None:
        """The pid of this state dir's cluster JVM if it is alive (and really is ours)."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        if pid_alive(pid) and MAIN_CLASS in cmdline(pid) and str(self.state_dir) in cmdline(pid):
            return pid
        return None

    def info(self) -> dict | None:
        """cluster.json of a running cluster, else None."""
        if self.pid() is None or not self.info_file.exists():
            return None
        return json.loads(self.info_file.read_text())

    def is_running(self) -> bool:
        return self.info() is not None

    # -- up ----------------------------------------------------------------------------------
    def up(self, options: ClusterOptions | None = None, timeout: float = 180.0, format_hdfs: bool = False) -> dict:
        """Start the cluster unless it already runs; returns cluster.json. Idempotent."""
        options = options or ClusterOptions()
        if options.secure:  # its clients log in with kinit (`cluster env --secure` runs it): first
            from tfhadoop.yarn.secure import ensure_kerberos_tools

            ensure_kerberos_tools()
        info = self.info()
        if info is not None:
            log.info("embedded cluster already running (pid %s) in %s", info["pid"], self.state_dir)
            self._write_commands()  # a start interrupted by an older version may not have written them
            return info
        starting = self.pid()
        if starting is not None:
            log.info("embedded cluster pid %s is still starting; waiting", starting)
            info = self._wait_ready(starting, time.monotonic(), timeout, None)
            self._write_commands()
            return info
        self._recover_stale_state(format_hdfs)
        java = java_executable()
        cluster_cp = read_classpath("cluster-classpath.txt")
        namenode_port = self._namenode_port(options.namenode_port)
        # The client commands before the JVM: an `up` interrupted from here on (Ctrl-C) leaves a
        # cluster that the next `up` finds running, with nothing left to write.
        self._write_commands()
        cmd = [
            java, f"-Xmx{options.jvm_heap}", *LEAN_JVM_FLAGS,
            f"-Dlog4j.configuration=file:{self.state_dir / 'log4j.properties'}",
            # jvm-conf/: configuration the JVM writes for its own Configurations (--secure: SecureSetup)
            "-cp", os.pathsep.join([str(self.state_dir / "jvm-conf"), *cluster_cp]), MAIN_CLASS,
            "--state-dir", str(self.state_dir), "--conf-dir", str(self.conf_dir),
            "--node-managers", str(options.node_managers), "--gpus-per-node", str(options.gpus_per_node),
            "--nm-memory-mb", str(options.nm_memory_mb), "--nm-vcores", str(options.nm_vcores),
            "--namenode-port", str(namenode_port), "--nm-expiry-ms", str(int(options.nm_expiry_s * 1000)),
            "--datanodes", str(options.datanodes), "--close-committed-allowed", str(options.close_committed_allowed),
            "--client-classpath", os.pathsep.join(read_classpath("client-classpath.txt")),
        ]
        if options.permissions:
            cmd += ["--permissions", "true"]
        if options.secure:
            from tfhadoop.yarn import secure

            cmd += secure.jvm_args(options.token_renew_seconds)
        env = dict(os.environ)
        env.pop("HADOOP_CONF_DIR", None)
        env["JAVA_HOME"] = java_home() or ""
        out = open(self.logs_dir / "cluster.out", "ab")
        t0 = time.monotonic()
        log.info("starting embedded Hadoop cluster in %s", self.state_dir)
        proc = subprocess.Popen(cmd, cwd=self.state_dir, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        out.close()
        self.pid_file.write_text(f"{proc.pid}\n")
        return self._wait_ready(proc.pid, t0, timeout, proc)

    def _namenode_port(self, requested: int) -> int:
        """The NameNode keeps its port across restarts of a state dir: hdfs:// URLs stored in the
        Hive metastore, manifests and user configs stay valid. The first start picks a free one."""
        saved_file = self.state_dir / "namenode.port"
        saved = int(saved_file.read_text()) if saved_file.exists() and not requested else 0
        port = requested or saved
        if port and saved and not requested:  # a just-killed JVM may still be closing its sockets
            deadline = time.monotonic() + 10
            while not port_is_free(port, "127.0.0.1") and time.monotonic() < deadline:
                time.sleep(0.2)
        if port and not port_is_free(port, "127.0.0.1"):
            what = "--namenode-port" if requested else f"the NameNode port of this state dir ({saved_file})"
            raise CommandError(f"port {port} ({what}) is in use by another process; stop it, or "
                               + ("choose another port or 0 for a free one" if requested else
                                  f"remove {saved_file} to take a new port (hdfs:// URLs stored under the old one break)"))
        if not port:
            port = free_port("127.0.0.1")
        self.state_dir.mkdir(parents=True, exist_ok=True)
        saved_file.write_text(f"{port}\n")
        return port

    def _wait_ready(self, pid: int, t0: float, timeout: float, proc) -> dict:
        while time.monotonic() - t0 < timeout:
            if self.info_file.exists():
                info = json.loads(self.info_file.read_text())
                if info.get("pid") == pid:
                    info["ready_seconds"] = round(time.monotonic() - t0, 1)
                    return info
            exited = proc.poll() is not None if proc is not None else not pid_alive(pid)
            if exited:
                raise CommandError(f"the cluster JVM exited during start-up; last lines of "
                                   f"{self.logs_dir / 'cluster.out'}:\n{self._tail('cluster.out')}")
            time.sleep(0.25)
        self._terminate(pid)
        raise CommandError(f"the cluster did not become ready in {timeout:.0f} s (stopped it); see "
                           f"{self.logs_dir / 'hadoop.log'}:\n{self._tail('cluster.out')}")

    def _tail(self, name: str, lines: int = 25) -> str:
        try:
            text = (self.logs_dir / name).read_text(errors="replace").splitlines()
        except OSError:
            return "(no output)"
        keep = [line for line in text if not line.lstrip().startswith("at ")]
        return "\n".join(keep[-lines:])

    def _recover_stale_state(self, format_hdfs: bool) -> None:
        """A pid file without a live JVM means the last run crashed or was killed."""
        warm_driver.stop(self.state_dir)  # bound to the JVM that is gone, and to its ports
        if self.pid_file.exists():
            log.warning("state dir %s is left from a run that did not stop cleanly (pid %s is gone); "
                        "recovering: HDFS data is kept, YARN work dirs are reset",
                        self.state_dir, self.pid_file.read_text().strip())
            self._kill_orphans()
            self.pid_file.unlink(missing_ok=True)
        self.info_file.unlink(missing_ok=True)
        import shutil

        shutil.rmtree(self.state_dir / "target", ignore_errors=True)
        if format_hdfs:
            # the metastore's tables point at the wiped HDFS data: wipe it too
            for name in ("hdfs", "metastore", "namenode.port"):
                path = self.state_dir / name
                shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)

    def _write_commands(self) -> None:
        """``bin/yarn``, ``bin/hdfs`` and the log4j files (tfhadoop.yarn.embedded_commands)."""
        write_commands(self.state_dir, self.conf_dir, self.bin_dir, self.logs_dir)

    # -- NameNode outages ------------------------------------------------------------------
    def stop_namenode(self, timeout: float = 60.0) -> None:
        """Stop the NameNode of the running cluster (HDFS clients get connection refused) until
        :meth:`start_namenode`; the DataNode and YARN keep running."""
        self._control("namenode-stop", timeout)

    def start_namenode(self, timeout: float = 180.0) -> None:
        """Start the NameNode again on its ports and storage; returns once it left safe mode."""
        self._control("namenode-start", timeout)

    def _control(self, request: str, timeout: float) -> None:
        """A request to the cluster JVM (a file in ``control/``), answered in ``<request>.done``."""
        if self.info() is None:
            raise CommandError(f"no embedded cluster runs in {self.state_dir}")
        control = self.state_dir / "control"
        done = control / f"{request}.done"
        done.unlink(missing_ok=True)
        (control / request).write_text("")
        deadline = time.monotonic() + timeout
        while not done.exists():
            if time.monotonic() > deadline:
                raise CommandError(f"the cluster did not answer {request} within {timeout:.0f} s; see "
                                   f"{self.logs_dir / 'cluster.out'}")
            time.sleep(0.2)
        answer = done.read_text().strip()
        done.unlink()
        if answer != "ok":
            raise CommandError(f"{request}: {answer}")

    # -- extra NodeManagers (another host each) ---------------------------------------------
    def start_node_manager(self, host: str, memory_mb: int = 4096, vcores: int = 4, gpus: int = 0,
                           timeout: float = 120.0) -> NodeManagerProcess:
        """One more NodeManager for the running cluster, in its own JVM and bound to ``host``, a
        loopback address such as 127.0.0.2: YARN sees another node, so containers replacing its
        containers land on another host. Returns once it has registered with the ResourceManager.
        Its work dirs are under ``target/`` (``down`` kills its leftover containers)."""
        if self.info() is None:
            raise CommandError(f"no embedded cluster runs in {self.state_dir}")
        return start_node_manager(self.state_dir, self.conf_dir, host, memory_mb, vcores, gpus, timeout)

    # -- down --------------------------------------------------------------------------------
    def down(self, timeout: float = 60.0) -> bool:
        """Stop the JVM this state dir started, and any container it left. False if none ran."""
        pid = self.pid()
        warm_driver.stop(self.state_dir)
        if pid is None:
            orphans = self._kill_orphans()
            self.pid_file.unlink(missing_ok=True)
            self.info_file.unlink(missing_ok=True)
            return orphans > 0
        self._terminate(pid, timeout)
        self._kill_orphans()
        self.pid_file.unlink(missing_ok=True)
        self.info_file.unlink(missing_ok=True)
        return True

    def _terminate(self, pid: int, timeout: float = 60.0) -> None:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and pid_alive(pid):
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.2)
        if pid_alive(pid):
            log.warning("cluster JVM %s did not stop in %.0f s; killing it", pid, timeout)
            os.kill(pid, signal.SIGKILL)

    def _kill_orphans(self) -> int:
        """Container processes still running out of this state dir's NodeManager work dirs."""
        killed = 0
        for pid in pids_under(str(self.state_dir / "target")):
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
        if killed:
            log.info("killed %d leftover container process(es) of %s", killed, self.state_dir)
        return killed

    # -- status / env ------------------------------------------------------------------------
    def env_lines(self) -> list[str]:
        lines = [f"export HADOOP_CONF_DIR={self.conf_dir}", f"export PATH={self.bin_dir}:$PATH"]
        if java_home():
            lines.append(f"export JAVA_HOME={java_home()}")
        info = self.info() or {}
        if info.get("secure"):
            from tfhadoop.yarn import secure

            lines += secure.env_lines(self.state_dir, info)
        return lines

    def status(self) -> dict:
        """Health of the NameNode and ResourceManager, nodes, queues and resources (live queries)."""
        info = self.info()
        if info is None:
            return {"running": False, "state_dir": str(self.state_dir)}
        conf = HadoopConf.load(self.conf_dir)
        result = {"running": True, "state_dir": str(self.state_dir), "pid": info["pid"],
                  "fs_default": conf.default_fs, "webhdfs": conf.webhdfs_url, "rm_web_ui": conf.rm_webapp_url}
        result.update(cluster_health(conf))
        return result
