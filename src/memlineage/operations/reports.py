"""The evaluation report as one self-contained HTML page. Pure: runs in, text out.

Each metric gets a line chart over the stored runs, drawn here as inline SVG
(no script, no CDN, nothing fetched), so a regression shows at a glance; a
blocking run is drawn in red. Both axes are labelled (runs numbered oldest
first, the metric's unit); run labels are thinned so that none overlap. Below
the charts, the latest run's per-subject table and its blocking findings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

from memlineage.operations.evaluate import METRICS

WIDTH, HEIGHT = 380, 190
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 12, 44  # room for the tick labels and the axis titles
LABEL_PX = 36  # the widest x tick label ("#100") is about this wide at 10 px
UNITS = {"stale_visible": "artifacts", "token_reduction": "fraction of raw tokens"}
TITLES = {
    "key_fact_recall": "Key-fact recall (higher is better)",
    "erroneous_new_fact_rate": "Erroneous-new-fact rate (must be 0)",
    "conflict_retention_rate": "Conflict retention (higher is better)",
    "token_reduction": "Token reduction (higher is better)",
    "stale_visible": "Stale artifacts visible (must be 0)",
}


def render_html(runs: Sequence[Mapping[str, Any]]) -> str:
    """The page for ``runs`` (oldest first, each with ``run_id``, ``passed``, ``report``)."""
    charts = "\n".join(_chart(name, runs) for name in METRICS)
    latest = runs[-1]["report"] if runs else {}
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>memlineage evaluation</title>
<style>
body {{ font: 14px system-ui, sans-serif; margin: 2rem; color: #222; }}
.charts {{ display: flex; flex-wrap: wrap; gap: 1rem; }}
figure {{ margin: 0; border: 1px solid #ddd; padding: .5rem; }}
figcaption {{ font-weight: 600; margin-bottom: .25rem; }}
table {{ border-collapse: collapse; margin-top: 1rem; }}
td, th {{ border: 1px solid #ddd; padding: .25rem .5rem; text-align: right; }}
td:first-child, th:first-child {{ text-align: left; }}
.fail {{ color: #b00020; font-weight: 600; }} .pass {{ color: #1b5e20; font-weight: 600; }}
</style></head><body>
<h1>memlineage evaluation</h1>
<p>{len(runs)} stored run(s). Latest: {_verdict(runs[-1] if runs else None)}</p>
<div class="charts">
{charts}
</div>
{_blocking(latest)}
{_subject_table(latest)}
</body></html>
"""


def _verdict(run: Mapping[str, Any] | None) -> str:
    if run is None:
        return "none"
    word = (
        '<span class="pass">passed</span>' if run["passed"] else '<span class="fail">BLOCKED</span>'
    )
    return f"{escape(str(run['run_id']))} {word}"


def _chart(name: str, runs: Sequence[Mapping[str, Any]]) -> str:
    """One metric over the runs: a line through every run, oldest on the left, with
    labelled axes; x tick labels are thinned so that no two overlap."""
    values = [run["report"].get("metrics", {}).get(name) for run in runs]
    known = [v for v in values if v is not None]
    top = max([1.0, *known])
    bottom = min([0.0, *known])
    span = (top - bottom) or 1.0
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(i: int) -> float:
        return LEFT + inner_w * (i / max(1, len(runs) - 1))

    def y(v: float) -> float:
        return float(TOP + inner_h * (1 - (v - bottom) / span))

    points = [(x(i), y(v), v, runs[i]) for i, v in enumerate(values) if v is not None]
    path = " ".join(f"{px:.1f},{py:.1f}" for px, py, _, _ in points)
    dots = "".join(
        f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3.5" fill="{_colour(run)}">'
        f"<title>run {escape(str(run['run_id']))}: {value}</title></circle>"
        for px, py, value, run in points
    )
    last = f"{known[-1]:.3f}" if known else "n/a"
    unit = UNITS.get(name, "rate")
    return f"""<figure data-metric="{name}"><figcaption>{escape(TITLES[name])}: {last}</figcaption>
<svg width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img"
 aria-label="{escape(TITLES[name])}">
{_y_axis(bottom, top, y)}
{_x_axis(len(runs), x)}
<text class="axis-title" x="{LEFT + inner_w / 2:.1f}" y="{HEIGHT - 6}" font-size="11"
 text-anchor="middle">run (oldest to newest)</text>
<text class="axis-title" x="12" y="{TOP + inner_h / 2:.1f}" font-size="11" text-anchor="middle"
 transform="rotate(-90 12 {TOP + inner_h / 2:.1f})">{escape(unit)}</text>
<polyline fill="none" stroke="#1565c0" stroke-width="2" points="{path}"/>
{dots}
</svg></figure>"""


def _y_axis(bottom: float, top: float, y: Callable[[float], float]) -> str:
    """The value axis: three ticks (bottom, middle, top) with light grid lines."""
    parts = [f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}" stroke="#999"/>']
    for value in (bottom, (bottom + top) / 2, top):
        py = y(value)
        parts.append(
            f'<line x1="{LEFT}" y1="{py:.1f}" x2="{WIDTH - RIGHT}" y2="{py:.1f}" stroke="#eee"/>'
            f'<text class="tick" x="{LEFT - 6}" y="{py + 3.5:.1f}" font-size="10"'
            f' text-anchor="end">{value:.3g}</text>'
        )
    return "".join(parts)


def _x_axis(count: int, x: Callable[[int], float]) -> str:
    """The run axis: a tick per run, a label on every ``step``-th so that none overlap."""
    base = HEIGHT - BOTTOM
    parts = [f'<line x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}" stroke="#999"/>']
    gap = (WIDTH - LEFT - RIGHT) / max(1, count - 1)
    step = max(1, math.ceil(LABEL_PX / gap)) if count > 1 else 1
    for i in range(count):
        px = x(i)
        parts.append(
            f'<line x1="{px:.1f}" y1="{base}" x2="{px:.1f}" y2="{base + 4}" stroke="#999"/>'
        )
        if i % step == 0:
            parts.append(
                f'<text class="tick" x="{px:.1f}" y="{base + 15}" font-size="10"'
                f' text-anchor="middle">#{i + 1}</text>'
            )
    return "".join(parts)


def _colour(run: Mapping[str, Any]) -> str:
    return "#1565c0" if run["passed"] else "#b00020"


def _blocking(report: Mapping[str, Any]) -> str:
    found = report.get("blocking") or []
    if not found:
        return ""
    rows = "".join(
        f"<li>{escape(f['subject'])}: {escape(f['metric'])} — {escape(f['item'])}: "
        f"{escape(f['detail'])}</li>"
        for f in found
    )
    return f'<h2 class="fail">Blocking</h2><ul>{rows}</ul>'


def _subject_table(report: Mapping[str, Any]) -> str:
    subjects = report.get("subjects") or []
    if not subjects:
        return ""
    head = "".join(f"<th>{escape(m)}</th>" for m in METRICS[:4])
    rows = "".join(
        f"<tr><td>{escape(s['subject'])}</td>"
        + "".join(f"<td>{_cell(s['metrics'].get(m))}</td>" for m in METRICS[:4])
        + "</tr>"
        for s in subjects
    )
    return f"<h2>Latest run, per subject</h2><table><tr><th>subject</th>{head}</tr>{rows}</table>"


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"
