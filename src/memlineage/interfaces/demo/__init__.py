"""The guided demo: a realistic memory stream, consolidated, recalled, revoked and evaluated.

``memlineage demo`` runs it on a fresh SQLite file in seconds; ``make run``
runs the same. Every step calls the public API, so the demo is also a
walk-through of it.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from memlineage.api import Memory
from memlineage.operations.evaluate import REDUCTION_BLOCKS_FROM
from memlineage.recall.prompt import render

SUBJECT = "user-7"


def stream() -> list[dict[str, Any]]:
    """The bundled events: negations, close numbers, units, same-name entities, two
    projects, a change of preference and a conflict."""
    text = resources.files("memlineage.interfaces.demo").joinpath("stream.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def run(db: str | None = None, say: Callable[[str], None] = print) -> dict[str, Any]:
    """Run every step on ``db`` (default: a fresh file in a temporary folder)."""
    folder = None if db else tempfile.TemporaryDirectory(prefix="memlineage-demo-")
    path = db or str(Path(folder.name) / "demo.db")  # type: ignore[union-attr]
    try:
        with Memory(path, tenant="demo") as memory:
            return _steps(memory, say)
    finally:
        if folder is not None:
            folder.cleanup()


def _heading(say: Callable[[str], None], text: str) -> None:
    say("")
    say(f"== {text}")


def _steps(memory: Memory, say: Callable[[str], None]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    events = stream()
    _heading(say, f"1. Ingest {len(events)} memory events of {SUBJECT}")
    appended = memory.add(events)
    seen["appended"] = sum(a.created for a in appended)
    say(f"appended {seen['appended']} events (append-only; a retry would be a no-op)")
    conflict = memory.conflict("d-12", "d-13", key="office")
    say(f"declared {conflict.conflict_id}: 'My office is in Madrid.' vs 'My office is in Seville.'")
    for op in memory.audit(SUBJECT).doc.get("operations", []):
        if str(op.get("reason", "")).startswith("detected"):
            say(
                f"detected by the raw layer: {op['kind']} {op.get('target')} / {op.get('other')}"
                f" ({op['reason']})"
            )

    _heading(say, "2. Consolidate through the fidelity gate and the alias switch")
    result = memory.consolidate(SUBJECT)
    seen["first"] = result.to_json()
    say(f"{result.artifact.id}: {result.status}, gate passed={result.artifact.gate.passed}")
    recalled = memory.recall(SUBJECT)
    say("The rendered memory an agent reads (every line is a source sentence, with its date):")
    say(recalled.summary or "")
    seen["summary"] = recalled.summary

    _heading(say, "3. Recall for a task: a query within a 120-token budget")
    say("(constraints, negations, open items and conflicts are never cut for relevance)")
    focused = memory.recall(SUBJECT, query="deploy budget for ORION", budget=120)
    seen["query"] = {"tokens": focused.tokens, "over_budget": focused.over_budget}
    say(render(focused, "markdown"))

    _heading(say, "4. Which message produced this memory?")
    why = memory.why(SUBJECT, "4,500 EUR")
    seen["why"] = why.to_json()
    for match in why.matches[:1]:
        for link in match.get("chain", []):
            state = link.get("validity", "valid")
            say(f"  {link['event_id']} ({link['at']}, {state}): {link['text']}")

    _heading(say, "5. Revoke a source: the summary leaves recall at once")
    revoked = memory.revoke("d-05", reason="the budget line was a typo")
    say(f"revoked d-05; stale: {', '.join(revoked.stale)}")
    after = memory.recall(SUBJECT)
    seen["after_revoke"] = after.mode
    say(f"recall mode now: {after.mode} ({after.reason})")
    rebuilt = memory.consolidate(SUBJECT)
    seen["rebuilt"] = rebuilt.switched
    say(f"rebuilt from still-valid inputs: {rebuilt.artifact.id} switched={rebuilt.switched}")
    say(f"recall mode: {memory.recall(SUBJECT).mode}")

    _heading(say, "6. Evaluate: rebuild without switching and measure")
    report = memory.eval(save=True)
    metrics = report.overall()
    seen["eval"] = metrics
    for name, value in metrics.items():
        say(f"  {name:<26} {'n/a' if value is None else f'{value:.3f}'}")
    reduction = metrics.get("token_reduction")
    if reduction is not None and reduction < 0:
        # a newcomer reads a negative figure as a failure: say why it is not one here
        say(
            f"  (negative: the summary, with its headers and dates, is longer than these few"
            f" short events; it blocks past {REDUCTION_BLOCKS_FROM} events on a subject)"
        )
    say("passed" if report.passed else "BLOCKED")
    return seen
