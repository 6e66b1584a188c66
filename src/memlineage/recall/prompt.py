"""A recall as the text an agent pastes into its prompt. Pure: no I/O.

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

import json
from collections.abc import Sequence
from typing import Any

from memlineage.consolidation.render import shown_date
from memlineage.recall.context import SECTION_TITLES, SECTIONS, Layout, Passage, count_tokens
from memlineage.recall.results import LeftOut, Recall, RecallSet

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
