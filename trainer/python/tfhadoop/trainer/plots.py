"""Line charts for the job page a person can read (issue 31 §4): inline SVG with axes, ticks and
units, time since the first sample on the x axis with the epochs marked, the final eval value as
a point, and the job's losses, replacements and restarts as labelled vertical marks. No scripts,
nothing fetched: the page works through the ResourceManager proxy and as a file."""
from __future__ import annotations

import html
import math

WIDTH, HEIGHT = 680, 200
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 14, 36  # room for the tick labels and the axis titles


def _esc(value) -> str:
    return html.escape(str(value))


def nice_ticks(lo: float, hi: float, count: int = 5, integer: bool = False) -> list[float]:
    """Round tick values covering ``lo``..``hi``: the finest step of 1, 2 or 5 times a power of ten
    that needs at most ``count + 1`` ticks (at least 1 for a count of things: ``integer``)."""
    if hi <= lo:
        hi = lo + 1
    power = 10 ** math.floor(math.log10((hi - lo) / count))
    power = max(power, 1) if integer else power
    for m in (1, 2, 5, 10, 20):
        step = m * power
        first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
        if last - first + 1 <= count + 1:
            return [round(i * step, 12) for i in range(first, last + 1)]
    raise AssertionError("unreachable: a step of 20 powers covers the range in 1 tick")


def number(v: float) -> str:
    """A tick label: thousands grouped, no exponent below a billion."""
    return f"{v:,.0f}" if 1000 <= abs(v) < 1e9 else f"{v:.4g}"


def clock(seconds: float) -> str:
    """``m:ss`` (or ``h:mm:ss``) for an axis label."""
    seconds = int(round(seconds))
    h, m, s = seconds // 3600, seconds % 3600 // 60, seconds % 60
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def epoch_starts(samples: list) -> list[tuple[float, int]]:
    """(time, epoch) where the samples' epoch changes: the epoch boundaries to mark."""
    out, last = [], None
    for s in samples:
        e = s.get("epoch")
        if e is not None and e != last and last is not None:
            out.append((s["time"], e))
        last = e if e is not None else last
    return out


# the curves' colours, none a mark's (report.MARKED): a dashed mark never reads as a worker's curve
PALETTE = ("#3366cc", "#e8710a", "#109618", "#990099", "#0099c6", "#dd4477", "#66aa00", "#b82e2e")
EVAL = "#e8710a"  # the eval loss: its curve and the final point


def series_of(samples: list, field: str) -> dict[str, list[tuple[float, float]]]:
    """``samples``' ``field`` mappings (``examples_per_s_by``: role -> value) as one series per
    key: ``{key: [(time, value)]}``, keys sorted."""
    out: dict[str, list] = {}
    for s in samples:
        for k, v in (s.get(field) or {}).items():
            if v is not None and s.get("time") is not None:
                out.setdefault(k, []).append((s["time"], float(v)))
    return dict(sorted(out.items()))


def _marks(events: list, marks: dict, t0: float, t1: float, x, top: float, bottom: float) -> tuple[list, dict]:
    """The vertical marks of the events in ``marks`` within t0..t1, and how many of each kind."""
    parts, seen = [], {}
    for e in events:
        kind = e.get("event")
        if kind in marks and t0 <= e.get("time", 0) <= t1:
            seen[kind] = seen.get(kind, 0) + 1
            who = " ".join(str(e[k]) for k in ("role", "slot") if e.get(k) is not None)
            parts.append(f'<line class="mark {_esc(kind)}" x1="{x(e["time"]):.1f}" x2="{x(e["time"]):.1f}" '
                         f'y1="{top}" y2="{bottom}" stroke="{marks[kind]}" stroke-width="1.5" stroke-dasharray="4,3">'
                         f'<title>{_esc(kind.replace("_", " "))} {_esc(who)}</title></line>')
    return parts, seen


def line_chart(samples: list, key: str, title: str, unit: str, marks: dict, events: list,
               final: float | None = None, final_label: str = "", integer: bool = False,
               extra: dict | None = None, main_label: str = "", colours: dict | None = None) -> str:
    """``samples``' ``key`` over time as an SVG chart titled ``title`` with a y axis in ``unit``;
    ``marks``: event kind -> colour of its vertical mark (those drawn are in the legend);
    ``final``: a value drawn as a point at the end (the eval loss of a finished job); ``extra``:
    more curves, label -> [(time, value)] (the eval loss per epoch, each worker's throughput),
    drawn with dots in their ``colours`` (label -> colour; else the palette's) and named in the
    legend, next to the main one (``main_label``)."""
    points = [(s["time"], float(s[key])) for s in samples if s.get(key) is not None and s.get("time") is not None]
    extra = {k: v for k, v in (extra or {}).items() if v}
    if len(points) < 2:
        return f'<div class="plot"><h3>{_esc(title)}</h3><p>not enough samples yet</p></div>'
    t0 = points[0][0]
    t_end = max([points[-1][0]] + [t for curve in extra.values() for t, _ in curve])  # where ``final`` is drawn
    t1 = max(t_end, t0 + 1)
    values = [v for _, v in points] + ([final] if final is not None else []) + \
        [v for curve in extra.values() for _, v in curve]
    yt = nice_ticks(min(values), max(values), integer=integer)
    lo, hi = yt[0], yt[-1]
    xt = nice_ticks(0, t1 - t0, 6)
    t1 = t0 + max(xt[-1], 1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(t):
        return LEFT + (t - t0) / (t1 - t0) * plot_w

    def y(v):
        return TOP + plot_h - (v - lo) / (hi - lo) * plot_h

    parts = [f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="#fafafa" stroke="#bbb"/>']
    for v in yt:
        parts.append(f'<line x1="{LEFT - 4}" x2="{LEFT + plot_w}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eee"/>'
                     f'<text class="ytick" x="{LEFT - 6}" y="{y(v) + 3:.1f}" font-size="10" text-anchor="end">'
                     f'{number(v)}</text>')
    for v in xt:
        if t0 + v <= t1:
            parts.append(f'<line x1="{x(t0 + v):.1f}" x2="{x(t0 + v):.1f}" y1="{TOP + plot_h}" '
                         f'y2="{TOP + plot_h + 4}" stroke="#888"/><text class="xtick" x="{x(t0 + v):.1f}" '
                         f'y="{TOP + plot_h + 15}" font-size="10" text-anchor="middle">{clock(v)}</text>')
    for t, epoch in epoch_starts(samples):
        parts.append(f'<line class="epoch" x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{TOP}" y2="{TOP + plot_h}" '
                     f'stroke="#999" stroke-dasharray="1,3"/><text x="{x(t) + 2:.1f}" y="{TOP + 9}" '
                     f'font-size="9" fill="#666">epoch {epoch}</text>')
    drawn, seen = _marks(events, marks, t0, t1, x, TOP, TOP + plot_h)
    parts += drawn
    line = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in points)
    parts.append(f'<polyline fill="none" stroke="#333" stroke-width="1.5" points="{line}"/>')
    legend = f'<span style="color:#333">&#9473; {_esc(main_label)}</span> ' if extra and main_label else ""
    for i, (label, curve) in enumerate(extra.items()):
        colour = (colours or {}).get(label) or PALETTE[i % len(PALETTE)]
        line = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in curve)
        dots = "".join(f'<circle cx="{x(t):.1f}" cy="{y(v):.1f}" r="2.5" fill="{colour}"><title>{_esc(label)} '
                       f'{v:.4g}</title></circle>' for t, v in curve)
        parts.append(f'<g class="series" data-label="{_esc(label)}"><polyline fill="none" stroke="{colour}" '
                     f'stroke-width="1.5" points="{line}"/>{dots}</g>')
        legend += f'<span style="color:{colour}">&#9473; {_esc(label)}</span> '
    if final is not None:
        parts.append(f'<circle class="final" cx="{x(t_end):.1f}" cy="{y(final):.1f}" r="4" fill="{EVAL}">'
                     f'<title>{_esc(final_label)} {final:.4g}</title></circle>')
    parts.append(f'<text x="{LEFT + plot_w / 2:.0f}" y="{HEIGHT - 4}" font-size="10" text-anchor="middle">'
                 f'time since the first sample (m:ss)</text>'
                 f'<text x="12" y="{TOP + plot_h / 2:.0f}" font-size="10" text-anchor="middle" '
                 f'transform="rotate(-90 12 {TOP + plot_h / 2:.0f})">{_esc(unit)}</text>')
    legend += "".join(f'<span class="legend-mark" style="color:{marks[k]}">&#9478; {_esc(k.replace("_", " "))}'
                      f'{f" &times;{n}" if n > 1 else ""}</span> ' for k, n in seen.items())
    if final is not None:
        legend += f'<span style="color:{EVAL}">&#9679; {_esc(final_label)}</span>'
    return (f'<div class="plot"><h3>{_esc(title)}</h3><svg width="{WIDTH}" height="{HEIGHT}" '
            f'xmlns="http://www.w3.org/2000/svg" class="{_esc(key)}">{"".join(parts)}</svg>'
            f'<div class="legend">{legend}</div></div>')
