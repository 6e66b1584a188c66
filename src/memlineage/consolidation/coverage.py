"""The gate's coverage: nothing vanishes silently, and what binds is shown. Pure.

Every selected event is shown by a statement or listed in ``cold``; an event
that binds (meaning/binding.py) is shown and hot, judged over the history (a
rule a later event updates binds no more; that update must be shown in its
place), and a long document binding by its rule-like parts may be ``cold``
for the rest when every part that binds is shown (consolidation/parts.py).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Protocol

from memlineage.consolidation.parts import binding_parts, event_parts
from memlineage.meaning.updates import Update
from memlineage.model import Conflict, Event, GateFailure, Output, Statement


class _Carried(Protocol):
    """What coverage asks of the gate's view of the claims (gate._Carried)."""

    @property
    def cited(self) -> Collection[str]: ...

    def binding(self, event: Event, open_items: set[str]) -> tuple[str, ...]: ...


EVENT_DROPPED = "event_dropped"
STATEMENT_MISSING = "statement_missing"


def check_coverage(
    carried: _Carried,
    unresolved: Sequence[Conflict],
    open_items: Sequence[str],
    output: Output,
    selection: Sequence[Event],
    updates: Mapping[str, Update],
) -> list[GateFailure]:
    """Every selected event is shown or cold; a binding event is shown and hot.

    An event without text has nothing to show: its claims may stand for it.
    """
    stated: set[str] = set()
    parts: dict[str, set[int]] = {}
    for statement in output.statements:  # one walk for both
        stated.update(statement.derived_from)
        _add_part(parts, statement)
    sides = {side for conflict in unresolved for side in (conflict.a, conflict.b)}
    cold = set(output.cold)
    return coverage_failures(carried, sides, open_items, stated, cold, selection, updates, parts)


def parts_shown(statements: Iterable[Statement]) -> dict[str, set[int]]:
    """Per event shown in numbered parts, the part numbers (1-based) the statements show."""
    shown: dict[str, set[int]] = {}
    for statement in statements:
        _add_part(shown, statement)
    return shown


def _add_part(shown: dict[str, set[int]], statement: Statement) -> None:
    if statement.part is not None and statement.derived_from:
        shown.setdefault(statement.derived_from[0], set()).add(statement.part[0])


def coverage_failures(
    carried: _Carried,
    sides: Collection[str],
    open_items: Sequence[str],
    stated: Collection[str],
    cold: Collection[str],
    selection: Sequence[Event],
    updates: Mapping[str, Update],
    parts: Mapping[str, set[int]],
) -> list[GateFailure]:
    """``_check_coverage`` of ``selection`` given the events the statements cite, the
    cold ids and the unresolved conflicts' sides (the gate on a delta has them).

    A long document binds by its rule-like parts (consolidation/parts.py): one whose
    every binding part is shown may be in ``cold`` for the rest (``parts``: the part
    numbers shown per event).

    Binding is judged over the history: a rule a later event updates (``updates``,
    meaning/updates.py) binds no more, and that update must be shown in its place.
    """
    opened = set(open_items)
    failures = []
    for event in selection:
        has_text = bool(event.text.strip())
        shown = event.id in stated or (not has_text and event.id in carried.cited)
        if not shown and event.id not in cold:
            detail = "shown by no statement, not in cold"
            failures.append(GateFailure(EVENT_DROPPED, event.id, detail))
        # a conflict side binds; otherwise the event's own reasons (binding.is_binding)
        if not has_text or not (event.id in sides or carried.binding(event, opened)):
            continue
        update = updates.get(event.id) if event.id not in sides else None
        if update is not None:  # lifted: its update binds in its place
            if update.newer not in stated or update.newer in cold:
                detail = f"updates binding {event.id} but no statement shows it"
                failures.append(GateFailure(STATEMENT_MISSING, update.newer, detail))
            continue
        if event.id not in stated:
            failures.append(
                GateFailure(STATEMENT_MISSING, event.id, "binding but no statement shows it")
            )
        elif event.id in cold and not _binding_parts_shown(event, parts, opened, sides):
            failures.append(
                GateFailure(STATEMENT_MISSING, event.id, "binding but is moved to cold")
            )
    return failures


def _binding_parts_shown(
    event: Event, parts: Mapping[str, set[int]], opened: set[str], sides: Collection[str]
) -> bool:
    """Whether a binding event shown in parts shows every part that binds (an open item
    or a conflict side binds whole: then every part)."""
    shown = parts.get(event.id)
    if not shown or event.id in opened or event.id in sides:
        return False
    numbered = event_parts(event.text)
    return {n + 1 for n in binding_parts(event, numbered)} <= shown
