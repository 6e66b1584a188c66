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

#: an event with more words than this is shown as numbered parts
MAX_EVENT_WORDS = 200
#: the most words a part holds
PART_WORDS = 100

_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*$")


def shown_text(text: str) -> str:
    """An event's text as a line shows it: its words, whitespace collapsed to one space."""
    return " ".join(text.split())


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
