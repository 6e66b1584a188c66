"""The summary a reader sees, rendered from statements. Pure: no I/O.

Layout (docs/concepts.md, "The rendered summary"):

- first, the statements of unresolved conflicts under ``Contested:``, the
  two sides of each conflict together (by conflict id), newest first, each
  line marked with the conflict id;
- then the other statements grouped by project (global first, then projects
  by name), then by kind, in a fixed order; newest first within a group,
  under one ``YYYY-MM-DD:`` line per day (``undated:`` last);
- each statement is one line: ``- `` + its speaker (when the event names one
  and the text does not already start with it) + its text verbatim + the mark
  of a part of a long event (``(part 2/3 of m-12)``); a contested one also
  `` (date)``, dated by the local date of its newest source as written in
  ``at``.
- a summary published over its budget (its binding events alone exceed it)
  ends with one line that says so (:func:`over_budget_line`).

Every line is a header, one statement or that notice; nothing else is
written, so every sentence a reader sees traces to raw events. Same
statements, same text.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from memlineage.consolidation.parts import laid_out, part_mark
from memlineage.meaning import caches
from memlineage.meaning.extract import ITEM_CACHE_SIZE
from memlineage.meaning.values import read_timestamp
from memlineage.model import Statement
from memlineage.tokens import Tokenizer, exceeds, exceeds_by_length

KIND_ORDER: tuple[str | None, ...] = (
    "constraint",
    "decision",
    "preference",
    "task",
    "fact",
    "observation",
    None,
)
KIND_LABELS: dict[str | None, str] = {
    "constraint": "Constraints",
    "decision": "Decisions",
    "preference": "Preferences",
    "task": "Tasks",
    "fact": "Facts",
    "observation": "Observations",
    None: "Other",
}
CONTESTED_HEADER = "Contested (unresolved, both sides shown):"
UNDATED = "undated"


@dataclass(frozen=True)
class Line:
    """One rendered line: a header (``statement`` None) or the statement at that index."""

    text: str
    statement: int | None = None


def render_summary(
    statements: Sequence[Statement], *, budget: int | None = None, over_budget: bool = False
) -> str:
    """The summary text: one header per group, one line per statement.

    ``over_budget`` (with its ``budget``) adds the last line that says so.
    """
    text = _rendered(tuple(statements))
    if over_budget:
        text += "\n" + over_budget_line(budget)
    return text


# the last statements rendered and their text: a budgeted run renders the same summary
# twice (the generator's fit, then the manifest's count of the parsed output)
_last: tuple[tuple[Statement, ...], str] | None = None


def _rendered(statements: tuple[Statement, ...]) -> str:
    global _last
    last = _last
    if last is not None and last[0] == statements:  # equal statements render the same
        return last[1]
    text = "\n".join(line.text for line in render_lines(statements))
    _last = (statements, text)
    return text


def exceeds_budget(statements: Sequence[Statement], budget: int, tokenizer: Tokenizer) -> bool:
    """Whether the summary of ``statements`` has more than ``budget`` tokens.

    Not rendered when its lines alone are too many: each is at least ``- `` and a
    newline, so a summary of tens of thousands of binding lines is over a budget of
    hundreds of tokens before any is written (``tokens.exceeds_by_length``)."""
    if exceeds_by_length(tokenizer, 3 * len(statements) - 1, budget):
        return True
    return exceeds(tokenizer, render_summary(statements), budget)


def over_budget_line(budget: int | None) -> str:
    """The visible notice of a summary whose binding events alone exceed its budget."""
    limit = f" of {budget} tokens" if budget is not None else ""
    return f"(over the budget{limit}: the binding items alone exceed it; nothing was cut)"


def render_lines(statements: Sequence[Statement]) -> list[Line]:
    """The rendered lines with the index of the statement each one shows."""
    contested: dict[str, list[int]] = {}
    groups: dict[tuple[str, str | None], list[int]] = {}
    for index, statement in enumerate(statements):
        if statement.contested is not None:
            contested.setdefault(statement.contested, []).append(index)
        else:
            kind = statement.kind if statement.kind in KIND_LABELS else None
            groups.setdefault((statement.project or "", kind), []).append(index)
    lines: list[Line] = []
    if contested:
        lines.append(Line(CONTESTED_HEADER))
        for conflict_id in sorted(contested):
            for index in _newest_first(statements, contested[conflict_id]):
                lines.append(Line(statement_line(statements[index]), index))
    rank = {kind: n for n, kind in enumerate(KIND_ORDER)}
    for project, kind in sorted(groups, key=lambda g: (g[0], rank[g[1]])):
        lines.append(Line(group_header(project or None, kind)))
        shown: str | None = ""
        for index in _newest_first(statements, groups[(project, kind)]):
            date = shown_date(statements[index].at)
            if date != shown:  # one date line per day of a group: a date costs tokens
                lines.append(Line(f"{date or UNDATED}:"))
                shown = date
            lines.append(Line(statement_line(statements[index], dated=False), index))
    return lines


def group_header(project: str | None, kind: str | None) -> str:
    label = KIND_LABELS[kind]
    return f"{label}:" if project is None else f"[{project}] {label}:"


def statement_line(statement: Statement, *, dated: bool = True) -> str:
    """``- speaker: text (part k/n of id) (date)``; a contested line starts with its conflict
    id, and names its project.

    In a kind group the date is on the day line above (``dated=False``).
    """
    parts = ["-"]
    if statement.contested is not None:
        parts.append(f"[{statement.contested}]")
        if statement.project:
            parts.append(f"[{statement.project}]")
    text = laid_out(statement.text)
    if statement.speaker and not text.startswith(f"{statement.speaker}:"):
        text = f"{statement.speaker}: {text}"
    parts.append(text)
    if statement.part is not None and statement.derived_from:
        parts.append(f"({part_mark(*statement.part, statement.derived_from[0])})")
    elif (said := repeat_mark(statement.derived_from)) is not None:
        parts.append(said)
    date = shown_date(statement.at) if dated else None
    if date:
        parts.append(f"({date})")
    return " ".join(parts)


def repeat_mark(sources: Sequence[str]) -> str | None:
    """``(said 5 times)``: identical events are one line, with their count (their ids are
    the statement's ``derivedFrom``, and a recall's ``context[].sources``)."""
    count = len(set(sources))
    return f"(said {count} times)" if count > 1 else None


def shown_date(at: str | None) -> str | None:
    """The local calendar date of ``at`` as written (its own UTC offset), or None."""
    if not at:
        return None
    instant = at_instant(at)
    if instant is None:
        return None
    return at[:10] if len(at) >= 10 and at[4] == "-" else instant.date().isoformat()


def at_instant(at: str | None) -> datetime | None:
    """``at`` as an aware instant (naive = UTC), or None when absent or unreadable."""
    return _parsed(at) if at else None


# Sized like the item caches: a cache smaller than a subject's distinct timestamps
# misses on every call, since a run reads them in the same order each time.
@functools.lru_cache(maxsize=ITEM_CACHE_SIZE)
def _parsed(at: str) -> datetime | None:
    parsed = read_timestamp(at)
    if parsed is None:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _newest_first(statements: Sequence[Statement], indexes: list[int]) -> list[int]:
    """Newest source time first; undated last; ties keep the statements' order."""

    def key(index: int) -> tuple[bool, float, int]:
        instant = at_instant(statements[index].at)
        return (instant is None, -instant.timestamp() if instant else 0.0, index)

    return sorted(indexes, key=key)


def _forget() -> None:
    """The last summary rendered and the parsed stamps go (meaning/caches.py)."""
    global _last
    _last = None
    _parsed.cache_clear()


caches.register(_forget)
