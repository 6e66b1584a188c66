"""The fixed rule that splits an event too long for any budget into numbered parts. Pure.

The unit of meaning is the event: it is shown whole, or not at all. The one
exception is an event longer than :data:`MAX_EVENT_WORDS` words (a pasted
document, a long transcript), which no summary budget could hold beside
anything else. It is cut into parts of at most :data:`PART_WORDS` words, at
the last sentence end inside each part when there is one, else after exactly
``PART_WORDS`` words. Words, not tokens: the rule must not depend on a
tokenizer, so the generator, the gate and recall compute the same parts.

Every part is rendered with its mark ("part 2/3 of m-12"); the parts joined
with one space are the event's text with its whitespace collapsed, so nothing
of the event is lost, and the event stays retrievable whole by id and query.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memlineage.meaning.binding import chat_line, text_reasons
from memlineage.model import Event

#: an event with more words than this is shown as numbered parts
MAX_EVENT_WORDS = 200
#: the most words a part holds
PART_WORDS = 100

_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*$")


def shown_text(text: str) -> str:
    """An event's text as a line shows it: its words, whitespace collapsed to one space."""
    return " ".join(text.split())


#: text laid out on purpose: a fenced block, or a line indented under another
_PREFORMATTED = re.compile(r"^[ \t]*(?:```|~~~)|\n(?: {2,}|\t)\S")


def preformatted(text: str) -> bool:
    """Whether a text is laid out on purpose (code, a fenced block, indented lines)."""
    return "\n" in text and _PREFORMATTED.search(text) is not None


def as_parts(text: str) -> list[str]:
    """:func:`event_parts`, but a short preformatted text keeps its layout (one part)."""
    if preformatted(text) and len(text.split()) <= MAX_EVENT_WORDS:
        return [text.strip("\n")]
    return event_parts(text)


def laid_out(text: str) -> str:
    """An event's text as a rendered line shows it: :func:`shown_text`, except code and
    other preformatted text, whose line breaks and indentation are kept (a Python
    loop flattened onto one line is ambiguous), each later line indented by two
    spaces under its list item. The words are the same either way: the gate
    compares :func:`shown_text`, and a token count of either holds every word."""
    if not preformatted(text):
        return shown_text(text)
    lines = [line.rstrip() for line in text.strip("\n").splitlines()]
    return "\n".join([lines[0], *(f"  {line}" if line else "" for line in lines[1:])])


#: the longest first sentence repeated as the scope of a later part
SCOPE_WORDS = 20


def scope_of(text: str) -> str | None:
    """The first sentence of a long event, repeated (marked) with its later parts: "Everything
    in these notes is about the Madrid office." is the scope of every part. None
    when the first sentence is longer than :data:`SCOPE_WORDS` words."""
    words = text.split()
    for n, word in enumerate(words[:SCOPE_WORDS], start=1):
        if _SENTENCE_END.search(word):
            return " ".join(words[:n])
    return None


def event_parts(text: str) -> list[str]:
    """The numbered parts of ``text``: [the whole text] when it is short enough."""
    words = text.split()  # what r"\S+" finds (both split at str.isspace), faster
    if len(words) <= MAX_EVENT_WORDS:
        return [" ".join(words)] if words else []
    parts: list[str] = []
    start = 0
    while start < len(words):
        end = min(start + PART_WORDS, len(words))
        if end < len(words):
            for cut in range(end, start, -1):  # the last sentence end inside the part
                if _SENTENCE_END.search(words[cut - 1]):
                    end = cut
                    break
        parts.append(" ".join(words[start:end]))
        start = end
    return parts


def part_mark(index: int, total: int, event_id: str) -> str:
    """The visible mark of a part: ``part k/n of <event id>``."""
    return f"part {index}/{total} of {event_id}"


def binding_parts(event: Event, parts: Sequence[str]) -> frozenset[int]:
    """The parts (0-based) of a binding event that bind: a long document binds by its
    rule-like parts, not whole ("One rule-like sentence made a whole pasted 450-word
    document binding"). An event that binds as a whole (a declared kind, an open
    item, a conflict side, or items no part's words show) binds by every part."""
    every = frozenset(range(len(parts)))
    if len(parts) < 2 or event.kind is not None:
        return every
    chat = chat_line(event.text, event.speaker)
    own = frozenset(n for n, part in enumerate(parts) if text_reasons(part, chat))
    return own or every
