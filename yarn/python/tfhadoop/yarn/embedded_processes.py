"""Finding the embedded cluster's processes on this host through /proc: whether a pid is alive and
what it runs, the container processes under a NodeManager's work dir (for ``down`` and for a node
killed on purpose) and a Skein application master (for fault injection)."""
from __future__ import annotations

import os
from pathlib import Path


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def pids_under(work: str) -> list[int]:
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
