"""The application master's entry point: runs as Skein's ``master.script`` in the application
master container, builds the job master of the job's strategy (``ps_master.PsMaster`` or
``ring_master.RingMaster``), runs it, and writes the outcome where the client finds it after the
application is gone (``result.json``, the event log's last line, YARN's diagnostics).

Where to read on: ``ps_master`` and ``ring_master`` (each strategy's states, events, table and
handlers, docs/design/trainer.md shows both tables), ``master_core`` and ``slots`` (what both
share: a container's loss classified, started, replaced, backed off), ``watchdogs`` (heartbeats,
preemption warnings, the coordinator's report), ``event_log`` and ``state_table``.
"""
from __future__ import annotations

import json
import os
import sys
import time

from tfhadoop.trainer import protocol
from tfhadoop.trainer.event_log import EventLog
from tfhadoop.trainer.spec import JobSettings


def watch_application_master(period: float = 1.0) -> None:
    """Exit at once when Skein's Java application master (an ancestor of this process) dies: YARN
    then starts the next attempt, and an orphaned master must neither write the job's result nor
    keep a coordinator training (that one dies with this process: ``children.die_with_parent``)."""
    import threading

    def java_ancestor() -> int | None:
        pid = os.getppid()
        while pid > 1:
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() == "java":
                        return pid
                with open(f"/proc/{pid}/stat") as f:
                    pid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                return None
        return None

    am = java_ancestor()
    if am is None:
        print("no Java application master among this process's ancestors: not watching it", flush=True)
        return

    def watch():
        while os.path.exists(f"/proc/{am}"):
            time.sleep(period)
        print(f"the application master (pid {am}) is gone: exiting", flush=True)
        os._exit(3)

    threading.Thread(target=watch, name="am-watch", daemon=True).start()


def application_attempt() -> int:
    """This application master's attempt number (1, 2, ...), from YARN's CONTAINER_ID
    (container_[e<epoch>_]<cluster ts>_<app>_<attempt>_<n>)."""
    parts = os.environ.get(protocol.ENV_CONTAINER_ID, "").split("_")
    try:
        return int(parts[-2])
    except (IndexError, ValueError):
        return 1


def write_result(job_dir: str, app_id: str, status: str, diagnostics: str) -> None:
    """``result.json`` in the job directory, BEFORE the master shuts down: the client reads the
    outcome there once the application (and its key-value store) is gone."""
    from tfhadoop.connectors import hdfs

    result = {"app": app_id, "status": status, "diagnostics": diagnostics, "time": time.time()}
    try:  # an HDFS outage at the very end is waited out like a checkpoint's
        hdfs.retry(lambda: hdfs.write_bytes(protocol.job_file(job_dir, protocol.RESULT_FILE),
                                            json.dumps(result).encode()), protocol.RESULT_FILE)
    except Exception as exc:  # noqa: BLE001 - YARN's diagnostics still carry the outcome
        print(f"cannot write {protocol.RESULT_FILE}: {exc}", flush=True)


def enrich_exit_statuses(events: EventLog, app_id: str) -> bool:
    """Add YARN's exit status (-102 preempted, ...) to the container_lost events; True if any."""
    try:
        from tfhadoop.hadoop import load_conf
        from tfhadoop.yarn.history import container_exits

        exits = {e.container_id: e for e in container_exits(load_conf(), app_id)}
    except Exception as exc:  # noqa: BLE001 - statuses are extra detail
        print(f"no exit statuses from the timeline service: {exc}", flush=True)
        return False
    changed = False
    for e in events.events:
        if e.get("event") == protocol.EventKind.CONTAINER_LOST and e.get("yarn_container") in exits:
            e["exit_status"] = exits[e["yarn_container"]].exit_status
            changed = True
    return changed


def main() -> int:
    # The AM agent's -javaagent option is for Skein's JVM only (protocol.ENV_JAVA_TOOL_OPTIONS): no JVM
    # this process starts (libhdfs, a coordinator's) loads it; what the NodeManager added stays.
    rest = protocol.without_am_agent(os.environ.pop(protocol.ENV_JAVA_TOOL_OPTIONS, ""))
    if rest:
        os.environ[protocol.ENV_JAVA_TOOL_OPTIONS] = rest
    import skein

    work = os.getcwd()
    job = JobSettings.load(os.path.join(work, protocol.JOB_FILE))
    app = skein.ApplicationClient.from_current()
    if job.strategy == "allreduce":
        from tfhadoop.trainer.ring_master import RingMaster

        master = RingMaster(app, job, work, attempt=application_attempt())
    else:
        from tfhadoop.trainer.ps_master import PsMaster

        master = PsMaster(app, job, work, attempt=application_attempt())
    if master.attempt > 1:
        from tfhadoop.trainer import jobdir

        jobdir.close_left_open(job.checkpoint_dir)
        master.events.resume()
    watch_application_master()
    from tfhadoop.trainer.jobpage import serve

    serve(master)
    try:
        status, diagnostics = master.run()
    except Exception as exc:  # noqa: BLE001 - reported as the application's diagnostics
        status, diagnostics = "FAILED", f"{type(exc).__name__}: {exc}"
    master.stop_coordinator()
    if master.decided_before:  # attempt 1 ended the job (Skein retries a FAILED one): only say so again
        app.shutdown(status, diagnostics=diagnostics[:4000])
        return 0
    if enrich_exit_statuses(master.events, app.id):
        master.events.rewrite()
    if job.mlflow_tracking_uri:  # before the outcome is written: a client that sees it finds the run
        from tfhadoop.trainer.mlflow_run import log_job_bounded

        logged, fields = log_job_bounded(job, app.id, status, diagnostics)
        master.events.add(protocol.EventKind.MLFLOW_LOGGED if logged else protocol.EventKind.MLFLOW_FAILED, **fields)
    master.events.add(protocol.EventKind.FINISHED, status=status, diagnostics=diagnostics[:4000])
    master.events.flush_waiting()
    write_result(job.checkpoint_dir, app.id, status, diagnostics)
    app.kv[protocol.KV_RESULT] = json.dumps({"status": status, "diagnostics": diagnostics}).encode()
    app.shutdown(status, diagnostics=diagnostics[:4000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
