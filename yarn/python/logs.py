"""Aggregated logs of a YARN application through Hadoop's own log reader (``yarn logs``).

Skein's built-in log reader predates Hadoop 3's bucketed aggregation layout and cannot find the
logs of Hadoop 3.3+; ``yarn logs`` (LogsCLI) reads every layout the NodeManagers write.
"""
from __future__ import annotations

import shutil
import subprocess
import time

from tfhadoop import hadoop
from tfhadoop.errors import CommandError


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
    deadline = time.monotonic() + wait
    while True:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode == 0 and "LogContents:" in proc.stdout:
            return proc.stdout
        if time.monotonic() > deadline:
            raise CommandError(f"no aggregated logs for {app_id} after {wait:.0f} s: "
                               f"{(proc.stderr or proc.stdout).strip().splitlines()[-1:] or ['(no output)']}")
        time.sleep(2)
