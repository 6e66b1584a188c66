"""A candidate's lineage drawn as SVG on the server: raw events on the left, the artifact
(and the parent artifact it read, if any) on the right, one edge per derivation."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

from memlineage.model import Artifact, Event

ROW, BOX_W, GAP = 34, 300, 140


def lineage_svg(artifact: Artifact, events: Mapping[str, Event]) -> str:
    inputs = list(artifact.manifest.input_ids)
    parents = (
        [artifact.manifest.derived_from_artifact] if artifact.manifest.derived_from_artifact else []
    )
    rows = max(len(inputs), 1)
    height = ROW * rows + 20
    width = 2 * BOX_W + GAP + 20
    target_y = height / 2
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="lineage" width="{width}" height="{height}"'
        f' viewBox="0 0 {width} {height}" role="img" aria-label="lineage of {escape(artifact.id)}">'
    ]
    right = 10 + BOX_W + GAP
    for index, event_id in enumerate(inputs):
        y = 10 + index * ROW
        event = events.get(event_id)
        label = f"{event_id}: {event.text if event else ''}"
        label = label if len(label) <= 44 else label[:43] + "…"
        edge = f'x1="{10 + BOX_W}" y1="{y + 12}" x2="{right}" y2="{target_y}"'
        box = f'x="10" y="{y}" width="{BOX_W}" height="24" rx="4"'
        parts.append(
            f'<line {edge} stroke="#90a4ae"/><g class="event">'
            f'<rect {box} fill="#e3f2fd" stroke="#1565c0"/>'
            f'<text x="16" y="{y + 16}" font-size="11">{escape(label)}</text>'
            f"<title>{escape(event.text if event else event_id)}</title></g>"
        )
    box = f'x="{right}" y="{target_y - 14}" width="{BOX_W}" height="28" rx="4"'
    parts.append(
        f'<g class="artifact"><rect {box} fill="#fff3e0" stroke="#ef6c00"/>'
        f'<text x="{right + 6}" y="{target_y + 4}" font-size="11">'
        f"{escape(artifact.id)} ({escape(str(artifact.status))})</text></g>"
    )
    for parent in parents:
        parts.append(
            f'<text x="{right}" y="{target_y + 30}" font-size="10" fill="#555">read parent'
            f" {escape(parent)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)
