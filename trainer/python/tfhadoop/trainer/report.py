"""The job page: spec, state, progress, containers, the event timeline and plots of loss,
examples/s and workers over time (container losses marked). The job master serves it live
through Skein's web UI (so through the ResourceManager's proxy, at the tracking URL), and
``tfhadoop status APP --html FILE`` renders the same page from the job directory afterwards.
Plain HTML with inline SVG: no scripts, nothing fetched."""
from __future__ import annotations

import html
import time

from tfhadoop.trainer import protocol
from tfhadoop.trainer.nvml import text as gpu_text
from tfhadoop.trainer.plots import EVAL, line_chart, series_of
from tfhadoop.trainer.resources import latest_resources

K = protocol.EventKind
LOST = (K.CONTAINER_LOST,)
# the events drawn as vertical marks on every plot: losses, replacements and restarts
MARKED = {K.CONTAINER_LOST: "#d62728", K.REPLACEMENT_UP: "#2ca02c", K.COORDINATOR_STARTED: "#1f77b4",
          K.RESCALED: "#9467bd", K.RING_REFORMED: "#17becf", K.RING_RESTARTED: "#8c564b", K.AM_RESTARTED: "#e377c2"}


def _esc(value) -> str:
    return html.escape(str(value))


def details(event: dict) -> str:
    """An event's fields as ``name value`` pairs a person reads (no JSON), the long ones cut."""
    parts = []
    for k, v in event.items():
        if k in ("time", "event", "role", "slot", "cluster", "app", "seq"):
            continue
        text = ", ".join(map(str, v)) if isinstance(v, list) else str(v)
        parts.append(f"{k.replace('_', ' ')} {text[:120]}")
    return "; ".join(parts)


def eval_curve(st: dict) -> list[tuple[float, float]]:
    """The eval loss per evaluated epoch (``--eval-every-epochs``), as (time, loss): from the
    history (a finished job's metrics or checkpoint) and the live progress samples, one per epoch."""
    by_epoch = {}
    for s in st.get("samples") or []:
        e = s.get("eval") or {}
        if e.get("loss") is not None and e.get("time") is not None:
            by_epoch[e.get("epoch")] = (e["time"], float(e["loss"]))
    for h in st.get("history") or []:
        if (h.get("eval") or {}).get("loss") is not None and h.get("time") is not None:
            by_epoch[h.get("epoch")] = (h["time"], float(h["eval"]["loss"]))
    return sorted(by_epoch.values())


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
    resources = _table([(k.replace("/", ":"), r.get("container", ""), f"{r['peak_rss_mb']:.0f} MB",
                         job.get(f"{k.split('/')[0]}_memory") or "", f"{r['avg_rss_mb']:.0f} MB",
                         f"{r['avg_cpu_pct']:.0f} %", gpu_text(r))
                        for k, r in sorted(used.items())],
                       ["role", "container", "peak memory", "asked", "average memory", "average CPU (of a core)",
                        "GPU (NVML)"])
    timeline = _table([(time.strftime("%H:%M:%S", time.localtime(e.get("time", 0))), e.get("event", ""),
                        e.get("role", ""), e.get("slot", ""), details(e)) for e in events],
                      ["time", "event", "role", "slot", "details"])
    metrics = st.get("metrics") or {}
    eval_loss = (metrics.get("eval") or {}).get("loss")
    final = _table(list((metrics.get("eval") or {}).items()), ["eval metric", "value"]) if metrics.get("eval") else ""
    result = st.get("result") or {}
    refresh = '<meta http-equiv="refresh" content="5">' if live else ""
    board = (f'<p id="tensorboard">TensorBoard: <a href="{_esc(st["tensorboard"])}">{_esc(st["tensorboard"])}</a> '
             f'(a container of the job)</p>') if st.get("tensorboard") else ""
    return f"""<!doctype html>
<html><head><meta charset="utf-8">{refresh}<title>{_esc(st.get('app'))} {_esc(st.get('name', ''))}</title>
<style>body{{font-family:sans-serif;margin:1.5em;color:#222}} table{{border-collapse:collapse;margin:.5em 0}}
td,th{{border:1px solid #ddd;padding:2px 8px;font-size:13px;text-align:left}} .plot{{display:inline-block;margin-right:1em}}
h3{{margin:.3em 0;font-size:14px}} #state{{font-weight:bold}} .legend{{max-width:680px;font-size:12px}}</style></head><body>
<h1>{_esc(st.get('name', 'training job'))} <small>{_esc(st.get('app'))}</small></h1>
<p>state: <span id="state">{_esc(st.get('state'))} {_esc(st.get('final_status') or '')}</span>
{('&middot; ' + _esc(result.get('diagnostics', ''))[:500]) if result else ''}</p>
<p id="progress">{progress}</p>
{board}
<h2>Plots</h2>
{line_chart(samples, 'loss', 'train and eval loss', 'loss', MARKED, events, eval_loss, 'eval loss (end of training)',
            extra={'eval loss (per epoch)': eval_curve(st)}, main_label='train loss (mean over each report)',
            colours={'eval loss (per epoch)': EVAL})}
{line_chart(samples, 'examples_per_s', 'training throughput, all and per worker', 'examples/s', MARKED, events,
            extra=series_of(samples, 'examples_per_s_by'), main_label='all workers')}
{line_chart(samples, 'workers_alive', 'workers alive', 'workers', MARKED, events, integer=True)}
<h2>Containers</h2>{containers}
<h2>Resources</h2><div id="resources">{resources if used else 'no samples yet'}</div>
<h2>Events</h2><div id="events">{timeline}</div>
{('<h2>Final metrics</h2>' + final) if final else ''}
<h2>Job</h2>{_table(spec_rows, ['setting', 'value'])}
<p>job directory: {_esc(st.get('job_dir', ''))}</p>
</body></html>
"""
