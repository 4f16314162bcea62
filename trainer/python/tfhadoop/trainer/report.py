"""The job page: spec, state, progress, containers, the event timeline and plots of loss,
examples/s and workers over time (container losses marked). The job master serves it live
through Skein's web UI (so through the ResourceManager's proxy, at the tracking URL), and
``tfhadoop status APP --html FILE`` renders the same page from the job directory afterwards.
Plain HTML with inline SVG: no scripts, nothing fetched."""
from __future__ import annotations

import html
import json
import time

from tfhadoop.trainer import protocol
from tfhadoop.trainer.resources import latest_resources

K = protocol.EventKind
LOST = (K.CONTAINER_LOST,)
MARKED = {K.CONTAINER_LOST: "#d62728", K.REPLACEMENT_UP: "#2ca02c", K.COORDINATOR_STARTED: "#1f77b4",
          K.RESCALED: "#9467bd"}


def _esc(value) -> str:
    return html.escape(str(value))


def plot(samples: list, key: str, title: str, events: list, width: int = 640, height: int = 160) -> str:
    """One time series as an inline SVG line chart, with vertical marks at the marked events."""
    points = [(s["time"], s[key]) for s in samples if s.get(key) is not None]
    if len(points) < 2:
        return f'<div class="plot"><h3>{_esc(title)}</h3><p>not enough samples yet</p></div>'
    t0, t1 = points[0][0], max(points[-1][0], points[0][0] + 1)
    lo, hi = min(v for _, v in points), max(v for _, v in points)
    hi = hi if hi > lo else lo + 1
    pad = 30

    def x(t):
        return pad + (t - t0) / (t1 - t0) * (width - 2 * pad)

    def y(v):
        return height - pad - (v - lo) / (hi - lo) * (height - 2 * pad)

    line = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in points)
    marks = "".join(
        f'<line x1="{x(e["time"]):.1f}" x2="{x(e["time"]):.1f}" y1="{pad}" y2="{height - pad}" '
        f'stroke="{MARKED[e["event"]]}" stroke-dasharray="3,3"><title>{_esc(e["event"])}</title></line>'
        for e in events if e.get("event") in MARKED and t0 <= e.get("time", 0) <= t1)
    return (f'<div class="plot"><h3>{_esc(title)}</h3><svg width="{width}" height="{height}" '
            f'xmlns="http://www.w3.org/2000/svg" class="{_esc(key)}">'
            f'<rect x="{pad}" y="{pad}" width="{width - 2 * pad}" height="{height - 2 * pad}" fill="#fafafa" '
            f'stroke="#ccc"/>{marks}<polyline fill="none" stroke="#333" stroke-width="1.5" points="{line}"/>'
            f'<text x="2" y="{pad + 4}" font-size="10">{hi:.4g}</text>'
            f'<text x="2" y="{height - pad}" font-size="10">{lo:.4g}</text>'
            f'<text x="{width - pad}" y="{height - 8}" font-size="10" text-anchor="end">{t1 - t0:.0f} s</text>'
            f'</svg></div>')


def _table(rows: list, headers: list) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def render(st: dict, live: bool = False) -> str:
    """The page for a job status dict (``jobs_cli.job_status`` or the master's live one)."""
    job, events, samples = st.get("job") or {}, st.get("events") or [], st.get("samples") or []
    p = st.get("progress") or {}
    spec_rows = [(k, v) for k, v in job.items() if v not in (None, [], "")]
    progress = (f"epoch {p.get('epoch')} &middot; step {p.get('steps')} &middot; "
                f"{_esc(p.get('examples', ''))}/{_esc(p.get('expected', ''))} examples of the epoch &middot; "
                f"{_esc(p.get('examples_per_s', ''))} examples/s") if p else "no progress yet"
    if p.get("checkpoint"):  # a finished job: what its last checkpoint holds
        progress = f"last checkpoint: epoch {_esc(p.get('epoch'))} &middot; step {_esc(p.get('steps'))}"
    containers = _table([(c.get("service"), c.get("id"), c.get("state"), c.get("yarn"), c.get("host"))
                         for c in st.get("containers") or []], ["role", "container", "state", "YARN container", "node"])
    used = latest_resources(samples)
    asked = {role: job.get(f"{role}_memory") for role in ("ps", "worker")}
    resources = _table([(k.replace("/", ":"), r.get("container", ""), f"{r['peak_rss_mb']:.0f} MB",
                         asked.get(k.split("/")[0]) or "", f"{r['avg_rss_mb']:.0f} MB", f"{r['avg_cpu_pct']:.0f} %")
                        for k, r in sorted(used.items())],
                       ["role", "container", "peak memory", "asked", "average memory", "average CPU (of a core)"])
    timeline = _table([(time.strftime("%H:%M:%S", time.localtime(e.get("time", 0))), e.get("event"), e.get("role", ""),
                        e.get("slot", ""), json.dumps({k: v for k, v in e.items()
                                                       if k not in ("time", "event", "role", "slot", "cluster", "app")})[:300])
                       for e in events], ["time", "event", "role", "slot", "details"])
    metrics = st.get("metrics") or {}
    final = _table(list((metrics.get("eval") or {}).items()), ["eval metric", "value"]) if metrics.get("eval") else ""
    result = st.get("result") or {}
    refresh = '<meta http-equiv="refresh" content="5">' if live else ""
    return f"""<!doctype html>
<html><head><meta charset="utf-8">{refresh}<title>{_esc(st.get('app'))} {_esc(st.get('name', ''))}</title>
<style>body{{font-family:sans-serif;margin:1.5em;color:#222}} table{{border-collapse:collapse;margin:.5em 0}}
td,th{{border:1px solid #ddd;padding:2px 8px;font-size:13px;text-align:left}} .plot{{display:inline-block;margin-right:1em}}
h3{{margin:.3em 0;font-size:14px}} #state{{font-weight:bold}}</style></head><body>
<h1>{_esc(st.get('name', 'training job'))} <small>{_esc(st.get('app'))}</small></h1>
<p>state: <span id="state">{_esc(st.get('state'))} {_esc(st.get('final_status') or '')}</span>
{('&middot; ' + _esc(result.get('diagnostics', ''))[:500]) if result else ''}</p>
<p id="progress">{progress}</p>
<h2>Plots</h2>
{plot(samples, 'loss', 'training loss (per progress report)', events)}
{plot(samples, 'examples_per_s', 'examples/s', events)}
{plot(samples, 'workers_alive', 'workers alive (dashed: losses red, replacements green)', events)}
<h2>Containers</h2>{containers}
<h2>Resources</h2><div id="resources">{resources if used else 'no samples yet'}</div>
<h2>Events</h2><div id="events">{timeline}</div>
{('<h2>Final metrics</h2>' + final) if final else ''}
<h2>Job</h2>{_table(spec_rows, ['setting', 'value'])}
<p>job directory: {_esc(st.get('job_dir', ''))}</p>
</body></html>
"""
