"""This user's training jobs, running and finished (issue 31 §3): ``tfhadoop jobs --all`` and its
``--html`` page.

Each row joins the job registry (what was submitted, where its job directory is) with the job
directory's durable files (``result.json``, ``metrics.json``, the newest checkpoint's state) and
YARN's report while YARN still knows the application. The status is the one the master wrote in
``result.json`` once it has; YARN's only before that, so a finished job never shows as running,
also after the ResourceManager restarted and forgot it ("UNKNOWN" then, when no result is
there either: a master killed before it could write one).
"""
from __future__ import annotations

import html
import time
from dataclasses import dataclass

from tfhadoop.trainer import jobdir, protocol

FINISHED = ("SUCCEEDED", "FAILED", "KILLED", "UNKNOWN")  # a row's statuses once the job no longer runs


@dataclass(frozen=True)
class JobRow:
    app: str
    name: str
    status: str  # SUCCEEDED | FAILED | KILLED | RUNNING | ACCEPTED | ... | UNKNOWN
    submitted: float  # epoch seconds
    duration_s: float | None  # until its end, or until now while it runs (None: its end is unknown)
    epochs: int | None  # epochs completed (the newest checkpoint's, or the metrics')
    loss: float | None  # the last completed epoch's mean training loss
    eval: dict | None  # the eval split's metrics of a finished job
    data: str
    model: str
    job_dir: str
    tracking_url: str | None


def yarn_status(report) -> tuple[str | None, float | None]:
    """(YARN's status of the application, its end time) from a report; (None, None) without one."""
    if report is None:
        return None, None
    state = str(report.state)
    if state not in protocol.FINAL_STATES:
        return state, None
    final = str(report.final_status)
    ended = report.finish_time.timestamp() if report.finish_time else None
    return ("KILLED" if state == "KILLED" else final if final != "UNDEFINED" else state), ended


def job_row(entry: dict, report, now: float | None = None) -> JobRow:
    """One job's row: ``entry`` from the registry, ``report`` YARN's (None once YARN forgot it)."""
    now = time.time() if now is None else now
    app, job, job_dir = entry["app"], entry.get("job") or {}, entry.get("job_dir", "")
    submitted = float(entry.get("submitted", now))
    result = jobdir.result(job_dir, app) if job_dir else None
    status, ended = yarn_status(report)
    if result:
        status, ended = str(result.get("status")), float(result.get("time", now))
    elif status is None:
        status = "UNKNOWN"
    metrics = jobdir.metrics(job_dir) if job_dir else None
    if metrics and metrics.get("app") not in (None, app):
        metrics = None  # a later run of the same directory
    history = (metrics or {}).get("epochs") or ((jobdir.latest_state(job_dir) or {}).get("history") if job_dir else None)
    history = history or []
    end = ended if ended is not None else None if status == "UNKNOWN" else now
    return JobRow(app=app, name=str(job.get("name") or ""), status=status, submitted=submitted,
                  duration_s=None if end is None else max(end - submitted, 0.0), epochs=len(history) if history else None,
                  loss=history[-1].get("mean_loss") if history else None,
                  eval=(metrics or {}).get("eval"), data=str(job.get("data") or ""), model=str(job.get("model") or ""),
                  job_dir=job_dir, tracking_url=getattr(report, "tracking_url", None) or None)


def rows(default_fs: str, report_of) -> list[JobRow]:
    """Every registered job of this user, newest first; ``report_of(app)`` is YARN's report or None."""
    return [job_row(e, report_of(e["app"])) for e in jobdir.entries(default_fs)]


def finished(row: JobRow) -> bool:
    return row.status in FINISHED


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


def _metric(value) -> str:
    return "-" if value is None else f"{value:.4g}"


def _eval(row: JobRow) -> str:
    return ", ".join(f"{k} {v:.4g}" for k, v in sorted((row.eval or {}).items())) or "-"


def text_table(table: list[JobRow]) -> str:
    """The rows as a terminal table (what ``jobs --all`` prints)."""
    head = f"{'APPLICATION':32} {'STATUS':10} {'SUBMITTED':16} {'DURATION':>8} {'EPOCHS':>6} {'LOSS':>9}  EVAL / NAME / DATA"
    lines = [head]
    for r in table:
        submitted = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.submitted))
        lines.append(f"{r.app:32} {r.status:10} {submitted:16} {duration(r.duration_s):>8} "
                     f"{'-' if r.epochs is None else r.epochs:>6} {_metric(r.loss):>9}  "
                     f"{_eval(r)} / {r.name or '-'} / {r.data}")
    return "\n".join(lines)


def html_page(table: list[JobRow], title: str = "tfhadoop training jobs") -> str:
    """A self-contained page of the rows: each job linked to its YARN page, with the commands that
    show its report and logs."""
    e = html.escape
    body = []
    for r in table:
        link = f'<a href="{e(r.tracking_url)}">{e(r.app)}</a>' if r.tracking_url else e(r.app)
        body.append(
            f'<tr class="job {e(r.status.lower())}"><td>{link}</td><td class="status">{e(r.status)}</td>'
            f'<td>{e(time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.submitted)))}</td>'
            f'<td>{e(duration(r.duration_s))}</td><td>{"-" if r.epochs is None else r.epochs}</td>'
            f'<td>{e(_metric(r.loss))}</td><td>{e(_eval(r))}</td><td>{e(r.name)}</td><td>{e(r.model)}</td>'
            f'<td>{e(r.data)}</td><td><code>tfhadoop status {e(r.app)} --html {e(r.app)}.html</code><br>'
            f'<code>tfhadoop logs {e(r.app)}</code></td></tr>')
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{e(title)}</title><style>"
            "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
            "td,th{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}"
            ".succeeded .status{color:#1a7f37}.failed .status,.killed .status{color:#cf222e}"
            ".running .status{color:#0969da}</style></head><body>"
            f"<h1>{e(title)}</h1><p>{len(table)} jobs, newest first; generated "
            f"{e(time.strftime('%Y-%m-%d %H:%M:%S'))}</p><table><thead><tr><th>application</th><th>status</th>"
            "<th>submitted</th><th>duration</th><th>epochs</th><th>training loss</th><th>eval</th><th>name</th>"
            "<th>model</th><th>data</th><th>report and logs</th></tr></thead><tbody>"
            + "".join(body) + "</tbody></table></body></html>")
