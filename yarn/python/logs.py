"""Aggregated logs of a YARN application through Hadoop's own log reader (``yarn logs``).

Skein's built-in log reader predates Hadoop 3's bucketed aggregation layout and cannot find the
logs of Hadoop 3.3+; ``yarn logs`` (LogsCLI) reads every layout the NodeManagers write.

One fallback, for the embedded cluster on this host only: its Kerberized NodeManagers cannot
aggregate (Hadoop's SecureIOUtils needs native libhadoop, which Maven Central does not ship), so
when aggregation gave nothing the logs are read from the NodeManagers' local log dirs under the
embedded cluster's state dir (kept after the application ends: yarn.nodemanager.delete.debug-delay-sec).
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import time
from pathlib import Path

from tfhadoop import hadoop
from tfhadoop.errors import CommandError

log = logging.getLogger(__name__)
# Folders of a NodeManager's state that hold no container logs (local dirs, HDFS storage).
_NOT_LOG_DIRS = {"usercache", "nmPrivate", "filecache", "hdfs", "control", "conf", "bin"}


def application_logs(app_id: str, container_id: str | None = None, wait: float = 60.0) -> str:
    """The logs of a finished application (waits up to ``wait`` s for aggregation to finish)."""
    env = hadoop.client_env()
    yarn = shutil.which("yarn", path=env["PATH"])
    if yarn is None:
        raise CommandError("no `yarn` command on PATH: export the embedded cluster's env "
                           "(`tfhadoop cluster env`) or install the Hadoop client of your cluster")
    cmd = [yarn, "logs", "-applicationId", app_id]
    if container_id:
        cmd += ["-containerId", container_id]
    state_dir = hadoop.embedded_state_dir()
    # The Kerberized embedded cluster never aggregates (no libhadoop): no point waiting for it.
    no_aggregation = state_dir is not None and _embedded_secure(state_dir)
    deadline = time.monotonic() + wait
    while True:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode == 0 and "LogContents:" in proc.stdout:
            return proc.stdout
        if state_dir is not None and (no_aggregation or time.monotonic() > deadline):
            text = embedded_local_logs(app_id, state_dir, container_id)
            if text:
                return text
        if time.monotonic() > deadline:
            raise CommandError(f"no aggregated logs for {app_id} after {wait:.0f} s: "
                               f"{(proc.stderr or proc.stdout).strip().splitlines()[-1:] or ['(no output)']}")
        time.sleep(2)


def _embedded_secure(state_dir: Path) -> bool:
    try:
        return bool(json.loads((Path(state_dir) / "cluster.json").read_text()).get("secure"))
    except (OSError, ValueError):
        return False


def embedded_local_logs(app_id: str, state_dir: str | os.PathLike, container_id: str | None = None) -> str:
    """The container logs of ``app_id`` read from the embedded cluster's NodeManager log dirs
    (``<log-dir>/<app_id>/<container_id>/<file>`` under ``state_dir``), in ``yarn logs``' layout;
    "" when there are none. Logs (a warning) where they were read from."""
    found: list[Path] = []
    for folder, dirs, _ in os.walk(state_dir):
        dirs[:] = [d for d in dirs if d not in _NOT_LOG_DIRS]
        if app_id in dirs:
            found.append(Path(folder) / app_id)
            dirs.remove(app_id)
    parts = []
    for app_dir in sorted(found):
        for container in sorted(p for p in app_dir.iterdir() if p.is_dir() and p.name.startswith("container_")):
            if container_id and container.name != container_id:
                continue
            parts.append(f"Container: {container.name} (local log dir {container})\n")
            for f in sorted(p for p in container.iterdir() if p.is_file()):
                body = f.read_text(errors="replace")
                parts.append(f"LogType:{f.name}\nLogLength:{len(body)}\nLogContents:\n{body}"
                             f"{'' if body.endswith(chr(10)) or not body else chr(10)}End of LogType:{f.name}\n\n")
    if not parts:
        return ""
    log.warning("no aggregated logs for %s: read the embedded NodeManagers' local log dirs %s",
             app_id, ", ".join(str(d) for d in sorted(found)))
    return "".join(parts)
