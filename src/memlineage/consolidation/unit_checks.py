"""The gate's checks that the event is the unit (DESIGN.md, "The fidelity gate"). Pure.

A statement never shows an unmarked piece of an event, never merges different
events' words in one line, and an event shown in numbered parts shows all of
them or is cold. ``gate.check`` runs these beside its other checks.
"""

from __future__ import annotations

from collections.abc import Sequence

from memlineage.consolidation.parts import event_parts, part_mark, shown_text
from memlineage.model import Event, GateFailure, Output, Statement

STATEMENT_PART_UNMARKED = "statement_part_unmarked"
STATEMENT_EVENTS_MERGED = "statement_events_merged"
EVENT_PARTS_INCOMPLETE = "event_parts_incomplete"


def quote(text: str, limit: int = 60) -> str:
    """A statement's text as a failure's detail quotes it: one line, at most ``limit``."""
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def check_event_units(output: Output, events: dict[str, Event]) -> list[GateFailure]:
    """No statement shows an unmarked piece of an event or merges different events' words;
    an event shown in numbered parts shows all of them, or is cold.

    The checks read verbatim text: a statement an LLM reworded is neither a piece
    nor a merge of event text, and the gate's value checks still hold it.
    """
    failures: list[GateFailure] = []
    parts_shown: dict[str, set[int]] = {}
    wholes: dict[str, str] = {}
    for index, statement in enumerate(output.statements):
        sources = [events[s] for s in dict.fromkeys(statement.derived_from) if s in events]
        if not sources:
            continue  # the lineage check names it
        name = f"statements[{index}]"
        if statement.part is not None:
            failure = _check_part(name, statement, sources)
            if failure is None:
                parts_shown.setdefault(sources[0].id, set()).add(statement.part[0])
            else:
                failures.append(failure)
            continue
        for source in sources:
            if source.id not in wholes:
                wholes[source.id] = shown_text(source.text)
        failure = _check_verbatim(name, statement, [(e.id, wholes[e.id]) for e in sources])
        if failure is not None:
            failures.append(failure)
    cold = set(output.cold)
    for event_id, shown in parts_shown.items():
        total = len(event_parts(events[event_id].text))
        if len(shown) < total and event_id not in cold:
            missing = sorted(set(range(1, total + 1)) - shown)
            detail = f"parts {', '.join(map(str, missing))} of {total} are not shown, not in cold"
            failures.append(GateFailure(EVENT_PARTS_INCOMPLETE, event_id, detail))
    return failures


def _check_part(name: str, statement: Statement, sources: Sequence[Event]) -> GateFailure | None:
    """A statement marked part k/n cites one event and shows exactly its k-th of n parts."""
    assert statement.part is not None
    index, total = statement.part
    if len(sources) > 1:
        detail = f"{quote(statement.text)} is marked as a part but cites {len(sources)} events"
        return GateFailure(STATEMENT_EVENTS_MERGED, name, detail)
    event = sources[0]
    parts = event_parts(event.text)
    if len(parts) != total or parts[index - 1] != shown_text(statement.text):
        detail = f"{quote(statement.text)} is not {part_mark(index, total, event.id)}"
        return GateFailure(STATEMENT_PART_UNMARKED, name, detail)
    return None


def _check_verbatim(
    name: str, statement: Statement, wholes: Sequence[tuple[str, str]]
) -> GateFailure | None:
    """A verbatim statement is one event's whole text, or that of events saying the same."""
    text = f" {shown_text(statement.text)} "
    if not text.strip():
        return None
    texts = {whole for _, whole in wholes}
    inside = [event_id for event_id, whole in wholes if text in f" {whole} "]
    holds = [event_id for event_id, whole in wholes if f" {whole} " in text]
    if len(texts) > 1 and (inside or holds):
        detail = (
            f"{quote(statement.text)} puts the words of different events"
            f" ({', '.join(event_id for event_id, _ in wholes)}) in one line"
        )
        return GateFailure(STATEMENT_EVENTS_MERGED, name, detail)
    for event_id, whole in wholes:
        if event_id in inside and f" {whole} " != text:
            detail = f"{quote(statement.text)} shows part of {event_id} without a part mark"
            return GateFailure(STATEMENT_PART_UNMARKED, name, detail)
    return None
