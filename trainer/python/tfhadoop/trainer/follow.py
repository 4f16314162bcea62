"""Following a submitted job to its end: progress and events from the key-value store while it
runs, then the durable records of its job directory (``tfhadoop train``, ``follow``, ``Trainer``).
"""
from __future__ import annotations

import json
import sys
import time

from tfhadoop.trainer import protocol

# Seconds between two looks at a running job (an application report and a few key-value reads, a
# few ms of work each time): how late at most an epoch's progress line, an event or the job's end
# is shown. At 2 s, a short job's end showed ~0.2 s later on average (3 runs each, 2026-11-28).
POLL_S = 0.5


def kv_value(app, key):
    """The JSON value of ``key`` in the application's key-value store; None when absent or gone."""
    try:
        value = app.kv.get(key)
    except Exception:  # noqa: BLE001 - the application may be gone
        return None
    return json.loads(value.decode()) if value else None


def _show_new_events(display, tail: list[dict], shown: int, job_dir: str, app_id: str) -> int:
    """Display the events of the key-value store's recent ``tail`` numbered after ``shown``; the
    ones that left the tail before this poll saw them come from the durable log. Returns the
    number of the last event shown."""
    from tfhadoop.trainer import jobdir

    new = jobdir.newer(tail, shown)
    if new and jobdir.seq(new[0], shown + 1) > shown + 1:  # a gap: more events than the tail holds
        new = jobdir.merged(jobdir.newer(jobdir.events(job_dir, app_id), shown), new)
    for e in new:
        display.event(e)
        shown = max(shown, jobdir.seq(e, shown + 1))
    return shown


def follow(app_id: str, job_dir: str, out=sys.stdout, poll: float = POLL_S, client=None, display=None) -> dict:
    """Show progress and events (``display``: a :class:`console.Display`) until the application
    ends. While it runs they come from the key-value store; once it ended, the events, metrics
    and result come from the job directory on HDFS (``protocol``), where the master wrote them
    before it shut down, so nothing depends on catching the master before it exits."""
    import contextlib

    from tfhadoop.trainer import jobdir
    from tfhadoop.trainer.console import Display
    from tfhadoop.yarn.client import skein_client

    display = display or Display({}, out)
    last, shown, page_shown = None, -1, False  # shown: ``seq`` of the last event displayed
    master_at = None  # (host, port) of the application master followed
    try:
        with (contextlib.nullcontext(client) if client else skein_client()) as client:
            app = None
            while True:
                report = client.application_report(app_id)
                if str(report.state) in protocol.FINAL_STATES:
                    break
                if str(report.state) != "RUNNING" or (getattr(report, "host", None), getattr(report, "port", None)) != master_at:
                    app, master_at = None, (getattr(report, "host", None), getattr(report, "port", None))
                if str(report.state) == "RUNNING":
                    if app is None:
                        try:
                            app = client.connect(app_id, wait=False)
                        except Exception:  # noqa: BLE001 - AM not reachable yet
                            app = None
                    if app is not None:
                        try:
                            if not page_shown and (page := app.kv.get(protocol.KV_PAGE)):
                                display.note(f"job page {page.decode()}")
                                page_shown = True
                        except Exception:  # noqa: BLE001 - the master is gone (next attempt): reconnect
                            app = None
                    if app is not None:
                        progress = kv_value(app, protocol.KV_PROGRESS)
                        shown = _show_new_events(display, kv_value(app, protocol.KV_EVENTS) or [], shown, job_dir, app_id)
                        if progress and progress != last:
                            display.progress(progress, kv_value(app, protocol.KV_WORKERS_ALIVE))
                            last = progress
                time.sleep(poll)
        jobdir.close_left_open(job_dir)  # its master is gone: a file it left open is closed
        events = jobdir.events(job_dir, app_id)
        for e in jobdir.newer(events, shown):
            display.event(e)
    finally:
        display.close()
    metrics = jobdir.metrics(job_dir)
    if metrics and metrics.get("app") not in (None, app_id):
        metrics = None  # another run's
    return {"events": events, "metrics": metrics, "result": jobdir.result(job_dir, app_id),
            "state": str(report.state), "final_status": str(report.final_status), "diagnostics": report.diagnostics}


