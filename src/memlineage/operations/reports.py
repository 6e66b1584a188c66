"""The evaluation report as one self-contained HTML page. Pure: runs in, text out.

Each metric gets a line chart over the stored runs, drawn here as inline SVG
(no script, no CDN, nothing fetched), so a regression shows at a glance; a
blocking run is drawn in red. Below the charts, the latest run's per-subject
table and its blocking findings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from memlineage.operations.evaluate import METRICS

WIDTH, HEIGHT, PAD = 360, 160, 28
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
    values = [run["report"].get("metrics", {}).get(name) for run in runs]
    known = [v for v in values if v is not None]
    top = max([1.0, *known]) if name == "stale_visible" else 1.0
    bottom = min([0.0, *known])
    span = (top - bottom) or 1.0

    def x(i: int) -> float:
        return float(PAD + (WIDTH - 2 * PAD) * (i / max(1, len(runs) - 1)))

    def y(v: float) -> float:
        return float(HEIGHT - PAD - (HEIGHT - 2 * PAD) * ((v - bottom) / span))

    points = [(x(i), y(v), v, runs[i]) for i, v in enumerate(values) if v is not None]
    path = " ".join(f"{px:.1f},{py:.1f}" for px, py, _, _ in points)
    dots = "".join(
        f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3.5" fill="{_colour(run)}">'
        f"<title>{escape(str(run['run_id']))}: {value}</title></circle>"
        for px, py, value, run in points
    )
    last = f"{known[-1]:.3f}" if known else "n/a"
    return f"""<figure data-metric="{name}"><figcaption>{escape(TITLES[name])}: {last}</figcaption>
<svg width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img"
 aria-label="{escape(TITLES[name])}">
<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" stroke="#999"/>
<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{HEIGHT - PAD}" stroke="#999"/>
<text x="4" y="{PAD + 4}" font-size="10">{top:g}</text>
<text x="4" y="{HEIGHT - PAD + 4}" font-size="10">{bottom:g}</text>
<polyline fill="none" stroke="#1565c0" stroke-width="2" points="{path}"/>
{dots}
</svg></figure>"""


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
