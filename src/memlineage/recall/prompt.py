"""A recall as the text an agent pastes into its prompt. Pure: no I/O.

``render(recall, format)`` renders a recall (docs/recall.md) as the text an
agent pastes into its prompt, ``markdown``, ``text`` or ``json``:

- one block per subject (in the order asked), then one section per kind of
  memory in a fixed order: constraints, contested points, open items,
  preferences, facts (context.SECTIONS);
- one line per passage, in rank order within its section:
  ``- [<project>] <speaker>: <text verbatim> (part k/n of <id>) (<date>)``
  (project, speaker and part mark when there are; a later part's mark names
  its event's first sentence, its scope); a contested line also names its
  conflict, and a line a later one of the recall updates ends with
  ``(earlier; updated since)``. Code and other preformatted text keep their
  line breaks, later lines indented under the item. The source event ids
  (what ``why`` and the lineage resolve) stay in the result's JSON,
  ``context[].sources``;
- a last line says how many passages were left out for the budget (and how
  many of them bind, when the binding part alone did not fit), one (for a
  recall without a query) how many older events the hot summary leaves in
  cold memory and how to get them, and one says so when even the frame of a
  rendering is over a (tiny) budget.

Every line is a header, a passage or a footer, and ends with a newline, so
the token count of the whole text is the sum of its lines' counts. The JSON
document is compact (``context``: subject -> section -> ``[body, date]``
lines) and costed the same way:
context.pack charges each passage the largest of its three renderings, so
markdown, text and JSON all keep the budget.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from json.encoder import encode_basestring
from typing import Any

from memlineage.consolidation.parts import laid_out, part_mark
from memlineage.consolidation.render import repeat_mark, shown_date
from memlineage.recall.context import SECTION_TITLES, SECTIONS, Layout, Passage, count_tokens
from memlineage.recall.results import LeftOut, Recall, RecallSet

FORMATS = ("markdown", "text", "json")
_FOOTER_RESERVE = 999_999  # the footer is costed with the widest count it may show


def render(recall: Recall | RecallSet, format: str = "markdown") -> str:
    """The recall as prompt text (markdown or text) or one JSON document."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    subjects, context, left_out = _parts(recall)
    if format == "json":
        return _json(_document(recall, subjects, context, left_out))
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
        lines.append(footer(left_out.budget_count, format, left_out.binding_count))
    if (cold := not_shown(recall)) is not None:
        lines.append(cold_footer(cold, format))
    if recall.over_budget:
        lines.append(over_budget_footer(recall.budget, recall.tokens, format))
    return "".join(line + "\n" for line in lines)


def over_budget_footer(budget: int | None, tokens: int | None, format: str) -> str:
    """The visible line of a recall over its budget: one too small for its own frame."""
    text = f"(over the token budget of {budget}: {tokens} tokens)"
    return f"_{text}_" if format == "markdown" else text


def _parts(recall: Recall | RecallSet) -> tuple[list[str], Sequence[Passage], LeftOut]:
    if isinstance(recall, Recall):
        return [recall.subject], recall.context, recall.left_out
    return [r.subject for r in recall.recalls], recall.context, recall.left_out


def subject_header(subject: str, format: str) -> str:
    return f"# {subject}" if format == "markdown" else f"== {subject} =="


def section_header(section: str, format: str) -> str:
    title = SECTION_TITLES[section]
    return f"## {title}" if format == "markdown" else f"{title}:"


def footer(count: int, format: str, binding: int = 0) -> str:
    """The line that says what the budget left out, and how many of them bind."""
    noun = "passage" if count == 1 else "passages"
    if binding:
        text = f"({count} more {noun} left out for the token budget, {binding} of them binding)"
    else:
        text = f"({count} more {noun} left out for the token budget)"
    return f"_{text}_" if format == "markdown" else text


def not_shown(recall: Recall | RecallSet) -> int | None:
    """How many cold events a recall without a query leaves unsaid (None: nothing to say).

    The hot summary keeps what binds and what is worth most; the rest is in cold
    memory, and every rendering says how many and how to get them.
    """
    count = recall.left_out.cold_unmatched
    return count if recall.query is None and count else None


def cold_footer(count: int, format: str) -> str:
    noun = "event" if count == 1 else "events"
    text = f"({count} older {noun} not shown: recall with a query to find them)"
    return f"_{text}_" if format == "markdown" else text


def cold_reserve() -> int:
    """Tokens a recall without a query keeps for the line (and JSON key) of cold events."""
    widest = max(count_tokens(cold_footer(_FOOTER_RESERVE, f) + "\n") for f in FORMATS[:2])
    return max(widest, count_tokens(_json({"notShown": _FOOTER_RESERVE})))


def passage_line(passage: Passage) -> str:
    """``- [project] speaker: text (part k/n of id) (date)``: the text verbatim, one line.

    Citations stay in the JSON of the result (``context[].sources``); the line
    carries at most a short reference: the conflict a contested line is a side of.
    """
    return _prose_line(passage_body(passage), shown_date(passage.at), passage.conflict)


def _prose_line(body: str, date: str | None, conflict: str | None) -> str:
    parts = ["-", body]
    if date:
        parts.append(f"({date})")
    if conflict:
        parts.append(f"[{conflict}]")
    return " ".join(parts)


def passage_body(passage: Passage) -> str:
    """``[project] speaker: text (part k/n of id)``: what a line says, in every format."""
    parts = []
    if passage.project:
        parts.append(f"[{passage.project}]")
    parts.append(line_text(passage))
    if passage.part is not None and passage.sources:
        mark = part_mark(*passage.part, passage.sources[0])
        if passage.scope and passage.part[0] > 1:  # the scope its first part gives
            mark += f", which opens: {passage.scope}"
        parts.append(f"({mark})")
    elif (said := repeat_mark(passage.sources)) is not None:
        parts.append(said)
    if passage.updated:
        parts.append(UPDATED_MARK)  # the newest word on the matter is shown with it
    if passage.external:
        parts.append(EXTERNAL_MARK)  # not the user's word: shown, never binding
    return " ".join(parts)


#: the mark of a passage a later one in the same recall updates (docs/updates.md)
UPDATED_MARK = "(earlier; updated since)"
#: the mark of a passage whose event came from outside (trust ``external``)
EXTERNAL_MARK = "(external source)"


def line_text(passage: Passage) -> str:
    """The passage's text, whitespace collapsed, after its speaker when the text lacks it."""
    text = laid_out(passage.text)
    if passage.speaker and not text.startswith(f"{passage.speaker}:"):
        return f"{passage.speaker}: {text}"
    return text


def layout(budget: int | None = None) -> Layout:
    """Token costs of every rendering: per element, the largest of markdown, text and JSON."""

    def both(make: Any) -> int:
        return max(count_tokens(make("markdown") + "\n"), count_tokens(make("text") + "\n"))

    def subject(name: str) -> int:
        block = _json({name: {}}).rstrip("\n") + ","
        return max(both(lambda f: subject_header(name, f)), count_tokens(block))

    def section(name: str) -> int:
        block = _json({name: []}).rstrip("\n") + ","
        return max(both(lambda f: section_header(name, f)), count_tokens(block))

    envelope: dict[str, Any] = {
        "context": {},
        "budget": budget,
        "tokens": _FOOTER_RESERVE,
        "overBudget": False,
        "leftOut": _FOOTER_RESERVE,
    }
    return Layout(
        line=line_tokens,
        subject_header=subject,
        section_header=section,
        footer=both(lambda f: footer(_FOOTER_RESERVE, f)),
        fixed=count_tokens(_json(envelope)),
        floor=line_floor,
        binding_footer=max(
            both(lambda f: footer(_FOOTER_RESERVE, f, _FOOTER_RESERVE)),
            count_tokens(_json({"leftOutBinding": _FOOTER_RESERVE})),
        ),
    )


# Where a passage keeps its line's cost: a pure function of the fields its line shows
# (not of its score or similarity, which ``copied`` changes and carries it over), and
# a summary's statements are the same passages from one recall to the next (kept.py).
_LINE_TOKENS = "_line_tokens"


def line_tokens(passage: Passage) -> int:
    """A passage's line cost: the larger of its prose line's tokens and its JSON line's."""
    found: int | None = passage.__dict__.get(_LINE_TOKENS)
    if found is None:
        body, date = passage_body(passage), shown_date(passage.at)
        prose = count_tokens(_prose_line(body, date, passage.conflict) + "\n")
        found = max(prose, count_tokens(_json_line(body, date, passage.conflict) + ","))
        passage.__dict__[_LINE_TOKENS] = found
    return found


def line_floor(passage: Passage) -> int:
    """A lower bound of a passage's line cost, without the tokenizer: its words plus "-".

    cl100k_base splits a text into pieces before encoding, and no piece holds
    characters of two words (runs of non-space characters, split at ASCII
    whitespace); each piece is at least one token. The prose line holds the "-"
    and every word of the text, and the line's cost is at least the prose's.
    """
    return len(passage.text.split()) + 1


def _json(document: Any) -> str:
    return json.dumps(document, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"


def _line(p: Passage) -> list[str | None]:
    """A passage in the JSON document: ``[body, date]`` (and its conflict), as its prose line."""
    line = [passage_body(p), shown_date(p.at)]
    return [*line, p.conflict] if p.conflict else line


def _json_line(body: str, date: str | None, conflict: str | None) -> str:
    """``_json(_line(p))`` without its newline, for ``_line(p)``'s values: what
    ``json.dumps`` writes for a list of strings and None with these options,
    without building an encoder per line (packing costs every candidate's line)."""
    items = [encode_basestring(body), "null" if date is None else encode_basestring(date)]
    if conflict:
        items.append(encode_basestring(conflict))
    return "[" + ",".join(items) + "]"


def _document(
    recall: Recall | RecallSet,
    subjects: list[str],
    context: Sequence[Passage],
    left_out: LeftOut,
) -> dict[str, Any]:
    """``context``: subject -> section -> lines, in the order of the prose renderings."""
    blocks: dict[str, dict[str, list[list[str | None]]]] = {}
    for subject in subjects:
        mine = [p for p in context if p.subject == subject]
        sections: dict[str, list[list[str | None]]] = {}
        for section in SECTIONS:
            lines = [_line(p) for p in mine if p.section == section]
            if lines:
                sections[section] = lines
        blocks[subject] = sections
    document = {
        "context": blocks,
        "budget": recall.budget,
        "tokens": recall.tokens,
        "overBudget": recall.over_budget,
        "leftOut": left_out.budget_count,  # passages left out for the budget
    }
    if left_out.binding_count:
        document["leftOutBinding"] = left_out.binding_count  # must-keep ones among them
    if (cold := not_shown(recall)) is not None:
        document["notShown"] = cold  # older events in cold memory: recall with a query
    return document
