"""The summary a reader sees, rendered from statements. Pure: no I/O.

Layout (docs/concepts.md, "The rendered summary"):

- first, the statements of unresolved conflicts under ``Contested:``, the
  two sides of each conflict together (by conflict id), newest first, each
  line marked with the conflict id;
- then the other statements grouped by project (global first, then projects
  by name), then by kind, in a fixed order; newest first within a group,
  under one ``YYYY-MM-DD:`` line per day (``undated:`` last);
- each statement is one line: ``- `` + its text verbatim (a contested one
  also `` (date)``), dated by the local date of its newest source as written
  in ``at``.

Every line is either a header or one statement; nothing else is written, so
every sentence a reader sees traces to raw events. Same statements, same text.

``render(recall, format)`` renders a recall (docs/recall.md) as the text an
agent pastes into its prompt, ``markdown``, ``text`` or ``json``:

- one block per subject (in the order asked), then one section per kind of
  memory in a fixed order: constraints, contested points, open items,
  preferences, facts (context.SECTIONS);
- one line per passage, in rank order within its section:
  ``- <text verbatim, whitespace collapsed> (<date>) [<source event ids>]``;
  the ids are what ``why`` and the lineage resolve; a contested line also
  names its conflict;
- a last line says how many passages were left out for the budget.

Every line is a header, a passage or that footer, and ends with a newline, so
the token count of the whole text is the sum of its lines' counts: that is
how context.pack keeps the markdown and text renderings within the budget.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from dateutil.parser import isoparse

from .context import SECTION_TITLES, SECTIONS, Layout, Passage, count_tokens
from .model import Statement

if TYPE_CHECKING:
    from .recall import LeftOut, Recall, RecallSet

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


def render_summary(statements: Sequence[Statement]) -> str:
    """The summary text: one header per group, one line per statement."""
    return "\n".join(line.text for line in render_lines(statements))


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
    """``- text (date)``; a contested line starts with its conflict id, a project line names it.

    In a kind group the date is on the day line above (``dated=False``).
    """
    parts = ["-"]
    if statement.contested is not None:
        parts.append(f"[{statement.contested}]")
        if statement.project:
            parts.append(f"[{statement.project}]")
    parts.append(" ".join(statement.text.split()))
    date = shown_date(statement.at) if dated else None
    if date:
        parts.append(f"({date})")
    return " ".join(parts)


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


@functools.lru_cache(maxsize=1 << 16)  # a stream repeats its timestamps; parsing is slow
def _parsed(at: str) -> datetime | None:
    try:
        parsed = isoparse(at)
    except (ValueError, OverflowError):
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _newest_first(statements: Sequence[Statement], indexes: list[int]) -> list[int]:
    """Newest source time first; undated last; ties keep the statements' order."""

    def key(index: int) -> tuple[bool, float, int]:
        instant = at_instant(statements[index].at)
        return (instant is None, -instant.timestamp() if instant else 0.0, index)

    return sorted(indexes, key=key)


# -- a recall, as prompt text (docs/recall.md) --

FORMATS = ("markdown", "text", "json")
MAX_REFS = 3  # source ids shown on a line; the rest are counted ("+2")
_FOOTER_RESERVE = 999_999  # the footer is costed with the widest count it may show


def render(recall: Recall | RecallSet, format: str = "markdown") -> str:
    """The recall as prompt text (markdown or text) or one JSON document."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    subjects, context, left_out = _parts(recall)
    if format == "json":
        return (
            json.dumps(
                _document(recall, subjects, context, left_out),
                ensure_ascii=False,
                indent=2,
                sort_keys=True,
            )
            + "\n"
        )
    lines: list[str] = []
    for subject in subjects:
        lines.append(subject_header(subject, format))
        mine = [p for p in context if p.subject == subject]
        for section in SECTIONS:
            shown = [p for p in mine if p.section == section]
            if shown:
                lines.append(section_header(section, format))
                lines.extend(passage_line(p) for p in shown)
    if left_out.budget_count:
        lines.append(footer(left_out.budget_count, format))
    return "".join(line + "\n" for line in lines)


def _parts(recall: Recall | RecallSet) -> tuple[list[str], Sequence[Passage], LeftOut]:
    from .recall import Recall

    if isinstance(recall, Recall):
        return [recall.subject], recall.context, recall.left_out
    return [r.subject for r in recall.recalls], recall.context, recall.left_out


def subject_header(subject: str, format: str) -> str:
    return f"# {subject}" if format == "markdown" else f"== {subject} =="


def section_header(section: str, format: str) -> str:
    title = SECTION_TITLES[section]
    return f"## {title}" if format == "markdown" else f"{title}:"


def footer(count: int, format: str) -> str:
    noun = "passage" if count == 1 else "passages"
    text = f"({count} more {noun} left out for the token budget)"
    return f"_{text}_" if format == "markdown" else text


def passage_line(passage: Passage) -> str:
    """``- text (date) [ids]``: the text verbatim, one line; date and ids when known."""
    parts = ["-", " ".join(passage.text.split())]
    date = shown_date(passage.at)
    if date:
        parts.append(f"({date})")
    parts.append(f"[{source_ref(passage)}]")
    return " ".join(parts)


def source_ref(passage: Passage) -> str:
    ids = list(passage.sources[:MAX_REFS])
    if len(passage.sources) > MAX_REFS:
        ids.append(f"+{len(passage.sources) - MAX_REFS}")
    ref = ", ".join(ids)
    return f"{ref}; {passage.conflict}" if passage.conflict else ref


def layout() -> Layout:
    """Token costs of the prose renderings: the larger of markdown and text, per line."""

    def both(make: Any) -> int:
        return max(count_tokens(make("markdown") + "\n"), count_tokens(make("text") + "\n"))

    return Layout(
        line=lambda p: count_tokens(passage_line(p) + "\n"),
        subject_header=lambda s: both(lambda f: subject_header(s, f)),
        section_header=lambda s: both(lambda f: section_header(s, f)),
        footer=both(lambda f: footer(_FOOTER_RESERVE, f)),
    )


def _document(
    recall: Recall | RecallSet,
    subjects: list[str],
    context: Sequence[Passage],
    left_out: LeftOut,
) -> dict[str, Any]:
    blocks = []
    for subject in subjects:
        mine = [p for p in context if p.subject == subject]
        sections = []
        for section in SECTIONS:
            shown = [p for p in mine if p.section == section]
            if shown:
                lines = [
                    {
                        "text": " ".join(p.text.split()),
                        "date": shown_date(p.at),
                        "sources": list(p.sources),
                        "conflict": p.conflict,
                    }
                    for p in shown
                ]
                sections.append(
                    {"section": section, "title": SECTION_TITLES[section], "lines": lines}
                )
        blocks.append({"subject": subject, "sections": sections})
    return {
        "subjects": blocks,
        "query": recall.query,
        "budget": recall.budget,
        "tokens": recall.tokens,
        "overBudget": recall.over_budget,
        "leftOut": left_out.to_json(),
    }
