"""Logs of a YARN application: aggregated logs through Hadoop's own log reader (``yarn logs``), or,
on the Kerberized embedded cluster, the NodeManagers' local log dirs.

Skein's built-in log reader predates Hadoop 3's bucketed aggregation layout and cannot find the
logs of Hadoop 3.3+; ``yarn logs`` (LogsCLI) reads every layout the NodeManagers write. With
Kerberos on, a NodeManager reads container logs for aggregation through Hadoop's SecureIOUtils,
which refuses to run without the native libhadoop; Maven Central's Hadoop artifacts (what the
embedded cluster runs) have none, so the secure embedded cluster aggregates nothing and keeps the
logs in its NodeManagers' log dirs on this host. A real Kerberized cluster ships libhadoop and
aggregates as usual.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tfhadoop import hadoop
from tfhadoop.errors import CommandError
from tfhadoop.yarn.client import require_yarn_command


def application_logs(app_id: str, container_id: str | None = None, wait: float = 60.0) -> str:
    """The logs of a finished application (waits up to ``wait`` s for aggregation to finish)."""
    local = _secure_embedded_state_dir()
    if local is not None:
        text = local_container_logs(local, app_id, container_id)
        print(f"(the Kerberized embedded cluster aggregates no logs without libhadoop: {app_id}'s logs "
              f"read from its NodeManagers' log dirs under {local})", file=sys.stderr)
        return text
    env = hadoop.client_env()
    yarn = require_yarn_command(env)
    cmd = [yarn, "logs", "-applicationId", app_id]
    if container_id:
        cmd += ["-containerId", container_id]
    deadline = time.monotonic() + wait
    # Each NodeManager uploads its containers' logs on its own; `yarn logs` prints whatever has
    # arrived, so reading before the RM says aggregation is over can miss a whole node's containers.
    while aggregation_status(app_id) in _AGGREGATION_PENDING and time.monotonic() < deadline:
        time.sleep(1)
    while True:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode == 0 and "LogContents:" in proc.stdout:
            return proc.stdout
        if time.monotonic() > deadline:
            raise CommandError(f"no aggregated logs for {app_id} after {wait:.0f} s: "
                               f"{(proc.stderr or proc.stdout).strip().splitlines()[-1:] or ['(no output)']}")
        time.sleep(2)


# YARN's LogAggregationStatus values before every NodeManager has reported its upload.
_AGGREGATION_PENDING = ("NOT_START", "RUNNING", "RUNNING_WITH_FAILURE")


def aggregation_status(app_id: str) -> str | None:
    """The RM's log aggregation status of ``app_id`` (SUCCEEDED, RUNNING, ...), or None where the RM's
    REST API cannot say (no such field, or an RM web UI behind SPNEGO)."""
    try:
        url = f"{hadoop.load_conf().rm_webapp_url}/ws/v1/cluster/apps/{app_id}"
        with urllib.request.urlopen(url, timeout=10) as resp:
            return json.load(resp)["app"].get("logAggregationStatus")
    except (OSError, KeyError, ValueError, urllib.error.URLError, CommandError):
        return None


def _secure_embedded_state_dir() -> Path | None:
    """The state dir of the embedded cluster in use when it runs with Kerberos, else None."""
    state = hadoop.embedded_state_dir()
    try:
        info = json.loads((state / "cluster.json").read_text()) if state is not None else {}
    except (OSError, ValueError):
        return None
    return state if info.get("secure") else None


def local_container_logs(state_dir: Path, app_id: str, container_id: str | None = None) -> str:
    """The application's container logs from the embedded NodeManagers' log dirs
    (``<log dir>/<app id>/<container id>/<file>``), laid out as ``yarn logs`` prints them."""
    containers = sorted({d for d in Path(state_dir).glob(f"target/**/*logDir*/{app_id}/container_*") if d.is_dir()},
                        key=lambda d: d.name)
    if container_id:
        containers = [d for d in containers if d.name == container_id]
    if not containers:
        raise CommandError(f"no logs of {app_id}{' container ' + container_id if container_id else ''} in the "
                           f"embedded cluster's NodeManager log dirs under {state_dir}/target")
    parts = []
    for d in containers:
        parts.append(f"Container: {d.name} in {d.parent.parent}\nLogAggregationType: LOCAL\n"
                     + "=" * 60 + "\n")
        for f in sorted(p for p in d.iterdir() if p.is_file()):
            data = f.read_text(errors="replace")
            parts.append(f"LogType:{f.name}\nLogLength:{len(data)}\nLogContents:\n{data}\n"
                         f"End of LogType:{f.name}\n\n")
    return "".join(parts)
