"""Durable facts: what a hot summary keeps over chatter. Pure, no I/O.

A hot summary has a budget; what binds always goes in (meaning/binding.py),
and the rest used to be taken newest first, so a licence plate, the family
doctor and a tax number said weeks ago went cold while "Made pancakes for
breakfast." stayed. An event states a **durable fact** when it gives a value of
something a person has for a long time:

- a one-at-a-time attribute of the speaker's (meaning/updates.py: where they
  live or work, diet, phone, e-mail, name, party size);
- an identifier or a permission scope (the extractor's ``id`` and ``scope``
  items: ticket numbers, account ids, "write:releases");
- "my/our <thing> is ...", where the thing is an identity, a contact, health,
  a document, a household member or a possession ("My licence plate is
  84-KL-22.", "Our family doctor is Dr. Moura.", "My son is called Tiago.",
  "My blood type is O negative.");
- a standing dose ("I take 50 mg of sertraline every morning.") or a stored
  secret's place ("The Wi-Fi password is ...").

English only, hand-written like the binding rules: a narrow list that says what
it reads. Durable events rank above the others; within each, newest first.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from memlineage.meaning import caches
from memlineage.meaning.extract import ITEM_CACHE_SIZE
from memlineage.meaning.updates import slots
from memlineage.model import Item

#: item kinds that name a lasting thing (an id, a permission)
DURABLE_KINDS = frozenset({"id", "scope"})

_THINGS = (
    r"name|full name|nickname|(?:phone |mobile |cell )?number|e-?mail(?: address)?|address|"
    r"postcode|zip code|birthday|date of birth|age|licen[cs]e(?: plate)?|plate|passport|"
    r"tax (?:number|id)|social security number|insurance|policy(?: number)?|account(?: number)?|"
    r"iban|bank|doctor|gp|dentist|pharmacy|therapist|blood type|allerg(?:y|ies)|medication|"
    r"condition|employer|job|title|school|university|partner|wife|husband|son|daughter|"
    r"sister|brother|mother|father|mom|mum|dad|dog|cat|car|bike|"
    r"landlord|lawyer|accountant|password|pin|wi-?fi"
)
_STATED = re.compile(
    rf"\b(?:my|our)\s+(?:[\w-]+(?:'s)?\s+){{0,2}}?(?:{_THINGS})(?:'s\s+[\w-]+)?\s+"
    r"(?:is|are|was changed to|is called|are called)\b"
    r"|\b(?:the\s+)?(?:wi-?fi\s+)?(?:password|pin|door code|gate code)\s+is\b"
    r"|\bi take \d+(?:[.,]\d+)?\s?(?:mg|mcg|ml|units?)\b",
    re.IGNORECASE,
)


def is_durable(text: str, items: Sequence[Item] = ()) -> bool:
    """Whether an event's text (and its must-preserve items) states a durable fact."""
    return any(item.kind in DURABLE_KINDS for item in items) or durable_text(text)


@functools.lru_cache(maxsize=ITEM_CACHE_SIZE)
def durable_text(text: str) -> bool:
    """``is_durable`` by the words alone, remembered per text (asked of every event)."""
    straight = text.replace("’", "'")
    return bool(slots(straight)) or _STATED.search(straight) is not None


caches.register(durable_text.cache_clear)
