"""Extra NodeManagers for a running embedded cluster, each in its own JVM on a loopback address of
its own (127.0.0.2, ...): the tests and benches of a lost node need a second "host" whose
containers can be killed at once, as when a machine loses power."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tfhadoop.errors import CommandError
from tfhadoop.hadoop import LEAN_JVM_FLAGS, java_executable, java_home
from tfhadoop.yarn.embedded_commands import LOG4J, read_classpath
from tfhadoop.yarn.embedded_processes import pids_under

NM_MAIN_CLASS = "tfhadoop.cluster.ExtraNodeManager"


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
        return pids_under(str(self.work / "local"))

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


def start_node_manager(state_dir: Path, conf_dir: Path, host: str, memory_mb: int, vcores: int, gpus: int,
                       timeout: float) -> NodeManagerProcess:
    """A NodeManager JVM bound to ``host`` for the cluster whose client configuration is ``conf_dir``,
    its work dir under ``state_dir/target/`` (so ``down`` kills its leftover containers); returns
    once it has registered with the ResourceManager, else one error with the tail of its output."""
    work = state_dir / "target" / f"extra-nm-{host}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    ready = work / "nm.json"
    cmd = [java_executable(), "-Xmx384m", *LEAN_JVM_FLAGS,
           f"-Dlog4j.configuration=file:{_nm_log4j(work)}",
           "-cp", os.pathsep.join([str(conf_dir), *read_classpath("cluster-classpath.txt")]),
           NM_MAIN_CLASS, "--conf-dir", str(conf_dir), "--dir", str(work), "--host", host,
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


def _nm_log4j(work: Path) -> Path:
    path = work / "log4j.properties"
    path.write_text(LOG4J.format(log=work / "nm.log"))
    return path
