"""The client's view of a job's durable files (see ``protocol``): the per-user registry that maps
an application id to its job directory, and readers of the event log, metrics and result there.
What a finished job reports comes from here, not from the key-value store that died with it."""
from __future__ import annotations

import json
import time

from tfhadoop.connectors import hdfs
from tfhadoop.trainer import protocol


def register(default_fs: str, app_id: str, job: dict) -> None:
    """Remember ``app_id`` -> job directory and spec, for ``status``/``follow``/``jobs``."""
    entry = {"app": app_id, "job_dir": job["checkpoint_dir"], "submitted": time.time(), "job": job}
    hdfs.write_bytes(f"{protocol.registry_dir(default_fs)}/{app_id}.json", json.dumps(entry).encode())


def lookup(default_fs: str, app_id: str) -> dict | None:
    """The registry entry of ``app_id``; None if this user did not submit it from tfhadoop."""
    try:
        return json.loads(hdfs.read_bytes(f"{protocol.registry_dir(default_fs)}/{app_id}.json"))
    except (FileNotFoundError, ValueError):
        return None


def find(default_fs: str, app: str) -> dict | None:
    """The registry entry of ``app``: an application id, or else the newest job named ``app``
    (``--name``); None when neither is this user's."""
    entry = lookup(default_fs, app) if app.startswith("application_") else None
    return entry or next((e for e in entries(default_fs) if (e.get("job") or {}).get("name") == app), None)


def entries(default_fs: str) -> list[dict]:
    """All of this user's registered jobs, newest first."""
    out = []
    for name in hdfs.list_names(protocol.registry_dir(default_fs)):
        if name.endswith(".json"):
            entry = lookup(default_fs, name[:-len(".json")])
            if entry:
                out.append(entry)
    return sorted(out, key=lambda e: e.get("submitted", 0), reverse=True)


def _json(job_dir: str, name: str):
    try:
        return json.loads(hdfs.read_bytes(protocol.job_file(job_dir, name)))
    except (FileNotFoundError, ValueError):
        return None


def events(job_dir: str, app_id: str | None = None) -> list[dict]:
    """The event log; only ``app_id``'s events when given (a resumed job shares the log)."""
    try:
        text = hdfs.read_bytes(protocol.job_file(job_dir, protocol.EVENTS_FILE)).decode()
    except FileNotFoundError:
        return []
    out = []
    for line in text.splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue  # a line cut by a master that died while appending
        if app_id is None or e.get("app") in (None, app_id):
            out.append(e)
    return out


def close_left_open(job_dir: str) -> None:
    """Close the job files a master may have left open (``protocol.APPENDED_FILES``): one killed
    while appending in place (tfhadoop before 2026-11-29; ``hdfs.append_bytes`` now rewrites the
    file and renames it over, which leaves only a temporary file open). Until HDFS recovers such a
    file's lease no one can read it or add to it. Called where no master of the job runs any
    more: by a later attempt's master before it reads the event log, by a client whose job ended
    before it reads the job's records (two NameNode calls when nothing was left open)."""
    if not job_dir.startswith("hdfs://"):
        return
    for name in protocol.APPENDED_FILES:
        try:
            hdfs.close_left_open(protocol.job_file(job_dir, name))
        except OSError as exc:  # said; the reads and appends that follow say what it costs
            print(f"cannot close {protocol.job_file(job_dir, name)} left open: {exc}", flush=True)


def seq(event: dict, index: int) -> int:
    """An event's number among its application's events (``index`` for a log older than ``seq``)."""
    return event.get("seq", index)


def newer(events: list[dict], after: int) -> list[dict]:
    """The events numbered after ``after`` (the last one shown; -1: none yet)."""
    return [e for i, e in enumerate(events) if seq(e, i) > after]


def merged(durable: list[dict], tail: list[dict]) -> list[dict]:
    """The full log of a running job: its durable events, then those of the key-value store's
    recent ``tail`` that the file lacks yet (each event once, whichever holds it)."""
    last = max((seq(e, i) for i, e in enumerate(durable)), default=-1)
    return durable + newer(tail, last)


def samples(job_dir: str, app_id: str | None = None) -> list[dict]:
    """Progress samples over time (for the job page's plots)."""
    try:
        text = hdfs.read_bytes(protocol.job_file(job_dir, protocol.PROGRESS_FILE)).decode()
    except FileNotFoundError:
        return []
    out = []
    for line in text.splitlines():
        try:
            s = json.loads(line)
        except ValueError:
            continue
        if app_id is None or s.get("app") in (None, app_id):
            out.append(s)
    return out


def metrics(job_dir: str) -> dict | None:
    return _json(job_dir, protocol.METRICS_FILE)


def result(job_dir: str, app_id: str | None = None) -> dict | None:
    """``result.json`` if it is ``app_id``'s (a later run of the same directory overwrites it)."""
    r = _json(job_dir, protocol.RESULT_FILE)
    return r if r and (app_id is None or r.get("app") == app_id) else None


def latest_state(job_dir: str) -> dict | None:
    """The training state of the newest complete checkpoint (epoch, steps, ...), or None."""
    return _json(job_dir, protocol.LATEST_STATE)
