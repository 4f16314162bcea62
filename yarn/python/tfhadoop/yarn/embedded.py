"""Start, stop and inspect the embedded Hadoop cluster (one JVM: HDFS + YARN, see EmbeddedCluster.java).

The state dir holds everything: ``conf/`` (client configuration with the ports the daemons got),
``hdfs/`` (NameNode and DataNode storage, kept across restarts), ``target/`` (NodeManager work and
log dirs), ``logs/``, ``bin/`` (``yarn`` and ``hdfs`` commands for clients such as Skein),
``cluster.pid`` (written at launch) and ``cluster.json`` (written by the JVM once it is ready).
"""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tfhadoop.errors import CommandError
from tfhadoop.hadoop import HadoopConf, default_state_dir, jars_dir, java_executable, java_home
from tfhadoop.ports import free_port, port_is_free

log = logging.getLogger(__name__)

MAIN_CLASS = "tfhadoop.cluster.EmbeddedCluster"
NM_MAIN_CLASS = "tfhadoop.cluster.ExtraNodeManager"

LOG4J = """\
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.RollingFileAppender
log4j.appender.file.File={log}
log4j.appender.file.MaxFileSize=64MB
log4j.appender.file.MaxBackupIndex=2
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=%d{{ISO8601}} %-5p %c{{2}} - %m%n
log4j.logger.org.apache.hadoop.hdfs.StateChange=WARN
log4j.logger.org.apache.hadoop.hdfs.server.datanode.DataNode.clienttrace=WARN
log4j.logger.org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit=WARN
log4j.logger.org.apache.hadoop.yarn.server.resourcemanager.RMAuditLogger=WARN
log4j.logger.org.apache.hadoop.yarn.server.nodemanager.NMAuditLogger=WARN
"""

# `yarn` / `hdfs` for clients of the embedded cluster. `yarn classpath` is what Skein needs; the
# other subcommands run Hadoop's own CLI classes from the cluster's jars.
YARN_SHIM = """\
#!/bin/sh
# yarn command of the tfhadoop embedded cluster (written by `tfhadoop cluster up`).
CONF='{conf}'
CLIENT_CP='{client_cp}'
TOOLS_CP='{tools_cp}'
JAVA='{java}'
LOG="-Dlog4j.configuration=file:{log4j_cli}"
[ -n "$KRB5_CONFIG" ] && LOG="$LOG -Djava.security.krb5.conf=$KRB5_CONFIG"
cmd="$1"; [ $# -gt 0 ] && shift
case "$cmd" in
  classpath) echo "$CONF:$CLIENT_CP" ;;
  version) echo "Hadoop {hadoop_version} (tfhadoop embedded cluster)" ;;
  logs) exec "$JAVA" $LOG -cp "$CONF:$TOOLS_CP" org.apache.hadoop.yarn.client.cli.LogsCLI "$@" ;;
  application|applicationattempt|container)
    exec "$JAVA" $LOG -cp "$CONF:$TOOLS_CP" org.apache.hadoop.yarn.client.cli.ApplicationCLI "$cmd" "$@" ;;
  node) exec "$JAVA" $LOG -cp "$CONF:$TOOLS_CP" org.apache.hadoop.yarn.client.cli.NodeCLI "$@" ;;
  queue) exec "$JAVA" $LOG -cp "$CONF:$TOOLS_CP" org.apache.hadoop.yarn.client.cli.QueueCLI "$@" ;;
  *) echo "usage: yarn classpath|version|logs|application|applicationattempt|container|node|queue [ARGS]" >&2; exit 1 ;;
esac
"""

HDFS_SHIM = """\
#!/bin/sh
# hdfs command of the tfhadoop embedded cluster (written by `tfhadoop cluster up`).
cmd="$1"; [ $# -gt 0 ] && shift
LOG="-Dlog4j.configuration=file:{log4j_cli}"
[ -n "$KRB5_CONFIG" ] && LOG="$LOG -Djava.security.krb5.conf=$KRB5_CONFIG"
case "$cmd" in
  dfs) exec '{java}' $LOG -cp '{conf}:{tools_cp}' org.apache.hadoop.fs.FsShell "$@" ;;
  dfsadmin) exec '{java}' $LOG -cp '{conf}:{tools_cp}' org.apache.hadoop.hdfs.tools.DFSAdmin "$@" ;;
  classpath) echo '{conf}:{client_cp}' ;;
  *) echo "usage: hdfs dfs|dfsadmin|classpath [ARGS]" >&2; exit 1 ;;
esac
"""

LOG4J_CLI = "log4j.rootLogger=WARN, err\nlog4j.appender.err=org.apache.log4j.ConsoleAppender\n" \
    "log4j.appender.err.Target=System.err\nlog4j.appender.err.layout=org.apache.log4j.PatternLayout\n" \
    "log4j.appender.err.layout.ConversionPattern=%p %c{2}: %m%n\n"


@dataclass
class ClusterOptions:
    """Sizes and fixed ports of the embedded cluster (0 = a free port)."""

    node_managers: int = 2
    gpus_per_node: int = 2
    nm_memory_mb: int = 8192
    nm_vcores: int = 8
    namenode_port: int = 0
    jvm_heap: str = "1536m"
    secure: bool = False  # Kerberos: see tfhadoop.yarn.secure
    permissions: bool = False  # HDFS permission checks without Kerberos (always on with secure)
    token_renew_seconds: int = 120
    nm_expiry_s: float = 15  # a NodeManager silent this long is LOST (YARN's default: 600)
    # An HDFS file's close takes one NameNode call instead of ~0.5 s (docs/tfhdfs.md): with
    # dfs.namenode.file.close.num-committed-allowed 1 (Hadoop's default: 0), which HDFS applies
    # only to files replicated above its minimum (1), hence 2 DataNodes and 2 replicas.
    datanodes: int = 2  # also every file's replication
    close_committed_allowed: int = 1


def _read_classpath(name: str) -> list[str]:
    path = jars_dir() / name
    if not path.exists():
        raise CommandError(f"{path} is missing: build the JVM side first (`make setup` or `make jars`)")
    entries = [line.strip() for line in path.read_text().splitlines() if line.strip()]
    missing = [e for e in entries if not Path(e).exists()]
    if missing:
        raise CommandError(f"{len(missing)} jar(s) listed in {path} are missing (first: {missing[0]}); "
                           "rebuild with `make jars`")
    return entries


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _http_json(url: str, timeout: float = 5.0):
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.loads(resp.read().decode())


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
        if _pid_alive(pid) and MAIN_CLASS in _cmdline(pid) and str(self.state_dir) in _cmdline(pid):
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
        cluster_cp = _read_classpath("cluster-classpath.txt")
        namenode_port = self._namenode_port(options.namenode_port)
        # The client commands before the JVM: an `up` interrupted from here on (Ctrl-C) leaves a
        # cluster that the next `up` finds running, with nothing left to write.
        self._write_commands()
        cmd = [
            java, f"-Xmx{options.jvm_heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            f"-Dlog4j.configuration=file:{self.state_dir / 'log4j.properties'}",
            # jvm-conf/: configuration the JVM writes for its own Configurations (--secure: SecureSetup)
            "-cp", os.pathsep.join([str(self.state_dir / "jvm-conf"), *cluster_cp]), MAIN_CLASS,
            "--state-dir", str(self.state_dir), "--conf-dir", str(self.conf_dir),
            "--node-managers", str(options.node_managers), "--gpus-per-node", str(options.gpus_per_node),
            "--nm-memory-mb", str(options.nm_memory_mb), "--nm-vcores", str(options.nm_vcores),
            "--namenode-port", str(namenode_port), "--nm-expiry-ms", str(int(options.nm_expiry_s * 1000)),
            "--datanodes", str(options.datanodes), "--close-committed-allowed", str(options.close_committed_allowed),
            "--client-classpath", os.pathsep.join(_read_classpath("client-classpath.txt")),
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
            exited = proc.poll() is not None if proc is not None else not _pid_alive(pid)
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
        """``bin/yarn``, ``bin/hdfs`` and the log4j files they and the JVM use; each file replaced
        whole (a client running ``yarn classpath`` meanwhile reads the old or the new one)."""
        for d in (self.conf_dir, self.bin_dir, self.logs_dir, self.state_dir / "jvm-conf"):
            d.mkdir(parents=True, exist_ok=True)
        client_cp, cluster_cp = _read_classpath("client-classpath.txt"), _read_classpath("cluster-classpath.txt")
        fields = dict(
            conf=self.conf_dir, java=java_executable(), client_cp=os.pathsep.join(client_cp),
            tools_cp=os.pathsep.join(cluster_cp), hadoop_version=_hadoop_version(client_cp),
            log4j_cli=self.state_dir / "log4j-cli.properties",
        )
        files = [(self.state_dir / "log4j.properties", LOG4J.format(log=self.logs_dir / "hadoop.log"), 0o644),
                 (self.state_dir / "log4j-cli.properties", LOG4J_CLI, 0o644),
                 (self.bin_dir / "yarn", YARN_SHIM.format(**fields), 0o755),
                 (self.bin_dir / "hdfs", HDFS_SHIM.format(**fields), 0o755)]
        for path, text, mode in files:
            tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
            tmp.write_text(text)
            tmp.chmod(mode)
            os.replace(tmp, path)

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
        work = self.state_dir / "target" / f"extra-nm-{host}"
        if work.exists():
            import shutil

            shutil.rmtree(work)
        work.mkdir(parents=True)
        ready = work / "nm.json"
        cmd = [java_executable(), "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               f"-Dlog4j.configuration=file:{self._nm_log4j(work)}",
               "-cp", os.pathsep.join([str(self.conf_dir), *_read_classpath("cluster-classpath.txt")]),
               NM_MAIN_CLASS, "--conf-dir", str(self.conf_dir), "--dir", str(work), "--host", host,
               "--memory-mb", str(memory_mb), "--vcores", str(vcores), "--gpus", str(gpus)]
        env = dict(os.environ)
        env.pop("HADOOP_CONF_DIR", None)
        env["JAVA_HOME"] = java_home() or ""
        with open(work / "nm.out", "ab") as out:
            proc = subprocess.Popen(cmd, cwd=work, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        while not ready.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                tail = (work / "nm.out").read_text(errors="replace").splitlines()[-20:]
                raise CommandError(f"the NodeManager on {host} did not register within {timeout:.0f} s; "
                                   f"{work / 'nm.out'}:\n" + "\n".join(tail))
            time.sleep(0.25)
        return NodeManagerProcess(host, json.loads(ready.read_text())["node_id"], proc, work)

    @staticmethod
    def _nm_log4j(work: Path) -> Path:
        path = work / "log4j.properties"
        path.write_text(LOG4J.format(log=work / "nm.log"))
        return path

    # -- down --------------------------------------------------------------------------------
    def down(self, timeout: float = 60.0) -> bool:
        """Stop the JVM this state dir started, and any container it left. False if none ran."""
        pid = self.pid()
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
        while time.monotonic() < deadline and _pid_alive(pid):
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.2)
        if _pid_alive(pid):
            log.warning("cluster JVM %s did not stop in %.0f s; killing it", pid, timeout)
            os.kill(pid, signal.SIGKILL)

    def _kill_orphans(self) -> int:
        """Container processes still running out of this state dir's NodeManager work dirs."""
        killed = 0
        for pid in _pids_under(str(self.state_dir / "target")):
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


@dataclass
class NodeManagerProcess:
    """An extra NodeManager (``EmbeddedCluster.start_node_manager``): its node id (host:port), its
    JVM and its work dir."""

    host: str
    node_id: str
    proc: subprocess.Popen
    work: Path

    def container_pids(self) -> list[int]:
        """Processes running out of this node's container work dirs."""
        return _pids_under(str(self.work / "local"))

    def kill(self) -> int:
        """The node is lost, as when its machine loses power: SIGKILL to the NodeManager's JVM and
        every container process it started, with no word to the ResourceManager, which declares the
        node LOST after ``nm_expiry_s``. Returns how many container processes were killed."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        killed = 0
        for pid in self.container_pids():
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
        return killed


def _pids_under(work: str) -> list[int]:
    """Processes (other than this one) whose working directory is under ``work``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd.startswith(work):
            pids.append(int(entry.name))
    return pids


def application_master_pid(app_id: str) -> int | None:
    """The local process of ``app_id``'s Skein application master (its working directory is the AM
    container's), for fault injection on a single-host cluster; None when it is not running here."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            if b"com.anaconda.skein.ApplicationMaster" in cmd and app_id in os.readlink(f"/proc/{pid}/cwd"):
                return int(pid)
        except OSError:
            continue
    return None


def cluster_health(conf: HadoopConf) -> dict:
    """NameNode and ResourceManager health as their own web services report it."""
    out: dict = {}
    try:
        beans = _http_json(conf.webhdfs_url + "/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState")["beans"]
        nn = beans[0] if beans else {}
        out["namenode"] = {"state": nn.get("FSState"), "live_datanodes": nn.get("NumLiveDataNodes"),
                           "capacity_bytes": nn.get("CapacityTotal"), "used_bytes": nn.get("CapacityUsed")}
    except (urllib.error.URLError, OSError, ValueError) as exc:
        out["namenode"] = {"state": "UNREACHABLE", "error": str(exc)}
    rm = conf.rm_webapp_url
    try:
        cinfo = _http_json(rm + "/ws/v1/cluster/info")["clusterInfo"]
        out["resourcemanager"] = {"state": cinfo.get("state"), "ha_state": cinfo.get("haState"),
                                  "version": cinfo.get("resourceManagerVersion")}
        nodes = (_http_json(rm + "/ws/v1/cluster/nodes").get("nodes") or {}).get("node", [])
        out["nodes"] = [{"id": n["id"], "state": n["state"], **_resources(n.get("availableResource") or {}, "available_"),
                         **_resources(n.get("usedResource") or {}, "used_")} for n in nodes]
        sched = _http_json(rm + "/ws/v1/cluster/scheduler")["scheduler"]["schedulerInfo"]
        out["queues"] = [{"name": q["queueName"], "capacity": q.get("capacity"),
                          "max_capacity": q.get("maxCapacity"), "used_capacity": q.get("usedCapacity"),
                          "running_apps": q.get("numApplications")}
                         for q in (sched.get("queues") or {}).get("queue", [])]
    except (urllib.error.URLError, OSError, ValueError, KeyError) as exc:
        out["resourcemanager"] = {"state": "UNREACHABLE", "error": str(exc)}
    return out


def _resources(res: dict, prefix: str) -> dict:
    out = {f"{prefix}memory_mb": res.get("memory", 0), f"{prefix}vcores": res.get("vCores", 0)}
    for ri in (res.get("resourceInformations") or {}).get("resourceInformation", []):
        if ri.get("name") == "yarn.io/gpu":
            out[f"{prefix}gpus"] = ri.get("value")
    return out


def _hadoop_version(classpath: list[str]) -> str:
    for entry in classpath:
        name = Path(entry).name
        if name.startswith("hadoop-client-api-"):
            return name[len("hadoop-client-api-"):-len(".jar")]
    return "unknown"
