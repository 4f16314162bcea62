"""One Skein driver per embedded cluster, kept running beside it, for every client to share.

A Skein client starts a driver JVM of its own unless given an address: ~2.5 s and ~2.5 CPU-s on
2 cores before its first call, paid by every `tfhadoop train`, `status`, `logs` and `kill`. On
the embedded cluster the first client starts one driver with Skein's own global-driver mechanism,
pointed (SKEIN_CONFIG) at the state dir's ``skein/`` instead of ``~/.skein``, and later clients
connect to it. The driver is bound to the cluster JVM it was started for: after a restart or a
crash of the cluster (new ports) it is retired and a new one started; ``cluster down`` stops it.
It is bound to a Hadoop user too (``HADOOP_USER_NAME``, as which an insecure cluster takes its
requests): a client acting as another user starts a driver of its own.
A Kerberized cluster keeps one driver per client: each logs in with its own ticket or keytab."""
from __future__ import annotations

import contextlib
import fcntl
import getpass
import json
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

from tfhadoop.yarn.embedded_processes import cmdline, pid_alive

log = logging.getLogger(__name__)

DIR = "skein"  # in the state dir: Skein's config dir for this driver (credentials, its `driver` file)
DRIVER_FILE = "driver"  # Skein's own name: {"address", "pid"} of its global driver
BOUND_FILE = "bound.json"  # the cluster JVM the driver was started for, and the Hadoop user it acts as
LOG_FILE = "skein-driver.log"  # in the state dir's logs/
DRIVER_MAIN = "com.anaconda.skein.Driver"
START_TIMEOUT_S = 180  # a driver takes ~3 s on an idle host; a loaded one, a lot longer

# Run with SKEIN_CONFIG set: Skein reads it once, at import.
_START = ("import sys, skein; skein.Client.start_global_driver("
          "log=sys.argv[1], log_level='warn', java_options=sys.argv[2:])")


def client(state_dir: Path, cluster_pid: int, java_options: list[str]):
    """A Skein client of the shared driver of the cluster ``cluster_pid`` in ``state_dir``, started
    now if none runs; None when it cannot be started, or when it acts as another Hadoop user (the
    caller then starts a driver of its own)."""
    folder = state_dir / DIR
    found = _connect(folder, cluster_pid)
    if found is not None or _serves_another_user(folder, cluster_pid):
        return found
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "lock", "w") as lock:  # one start when several clients come at once
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = _connect(folder, cluster_pid)
        if found is None and not _serves_another_user(folder, cluster_pid) \
                and _start(state_dir, cluster_pid, java_options):
            found = _connect(folder, cluster_pid)
    return found


def hadoop_user() -> str:
    """Who a driver started now acts as on a cluster without Kerberos."""
    return os.environ.get("HADOOP_USER_NAME") or getpass.getuser()


def stop(state_dir: Path) -> bool:
    """Stop the state dir's shared driver, if one runs; True if one did."""
    folder = state_dir / DIR
    address, pid = _driver(folder)
    for name in (DRIVER_FILE, BOUND_FILE):
        (folder / name).unlink(missing_ok=True)
    if pid is None or not _is_driver(pid):
        return False
    os.kill(pid, signal.SIGTERM)
    log.info("stopped the shared Skein driver %s (pid %s)", address, pid)
    return True


def log_of(state_dir: Path, address: str) -> str | None:
    """The log file of the state dir's shared driver if it listens at ``address``."""
    return str(state_dir / "logs" / LOG_FILE) if _driver(state_dir / DIR)[0] == address else None


def _start(state_dir: Path, cluster_pid: int, java_options: list[str]) -> bool:
    import skein

    folder = state_dir / DIR
    stop(state_dir)  # one left from an earlier start of the cluster
    skein.Security.from_default().to_directory(str(folder), force=True)  # the credentials clients use
    logs = state_dir / "logs"
    logs.mkdir(exist_ok=True)
    env = dict(os.environ, SKEIN_CONFIG=str(folder))
    try:
        done = subprocess.run([sys.executable, "-c", _START, str(logs / LOG_FILE), *java_options], env=env,
                              cwd=folder, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=START_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        log.warning("the shared Skein driver did not start in %s s; see %s", START_TIMEOUT_S, logs / LOG_FILE)
        return False
    if done.returncode != 0:
        log.warning("the shared Skein driver did not start (see %s): %s", logs / LOG_FILE,
                    (done.stderr.strip().splitlines() or ["no output"])[-1])
        return False
    (folder / BOUND_FILE).write_text(json.dumps({"cluster_pid": cluster_pid, "user": hadoop_user()}) + "\n")
    log.debug("started the shared Skein driver of the embedded cluster: %s", _driver(folder)[0])
    return True


def _connect(folder: Path, cluster_pid: int):
    import skein

    address, pid = _driver(folder)
    if address is None or pid is None or _binding(folder) != (cluster_pid, hadoop_user()) or not _is_driver(pid):
        return None
    try:
        return skein.Client(address=address, security=skein.Security.from_directory(str(folder)))
    except (skein.exceptions.ConnectionError, FileNotFoundError) as e:
        log.info("the shared Skein driver at %s does not answer (%s)", address, e)
        return None


def _serves_another_user(folder: Path, cluster_pid: int) -> bool:
    """A live shared driver of this cluster that acts as another user: left running for them."""
    bound = _binding(folder)
    pid = _driver(folder)[1]
    return bound is not None and bound[0] == cluster_pid and bound[1] != hadoop_user() \
        and pid is not None and _is_driver(pid)


def _binding(folder: Path) -> tuple[int, str] | None:
    """(cluster JVM pid, Hadoop user) the state dir's driver was started for."""
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        data = json.loads((folder / BOUND_FILE).read_text())
        return int(data["cluster_pid"]), str(data["user"])
    return None


def _driver(folder: Path) -> tuple[str | None, int | None]:
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        data = json.loads((folder / DRIVER_FILE).read_text())
        return str(data["address"]), int(data["pid"])
    return None, None


def _is_driver(pid: int) -> bool:
    return pid_alive(pid) and DRIVER_MAIN in cmdline(pid)
