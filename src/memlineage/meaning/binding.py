"""Which events bind the agent (DESIGN.md, "The fidelity gate"). Pure: no I/O.

An event is *binding* when an agent would act against it if it did not see
it: an active constraint or rule, a permission scope, the subject's own
current stated preference or aversion, an open item, or a side of an
unresolved conflict. Binding events are forced into the hot summary and into
every recall; everything else (narrative negations, numbers, dates, ids) is
kept exactly wherever it is shown but is ranked, not forced.

This module is the one definition the generator, the gate and recall share:
they ask :func:`binding_reasons` and never decide from item kinds themselves.
It starts from the item kinds the extractor emits and narrows them with a few
plain rules: a question is not a rule; what the subject reports of someone
else ("Bob said he hates sushi") is not its own preference; an aversion ("I
hate cilantro", "I don't eat shellfish") or a stated choice ("I prefer tea")
binds, while enthusiasm ("I love that!") or a hobby is ranked like any fact;
a negation binds only as the subject's own present refusal, never as a story
("I didn't go").
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from memlineage.model import Event, Item

CONSTRAINT = "constraint"
SCOPE = "permission scope"
PREFERENCE = "preference"
OPEN_ITEM = "open item"
CONFLICT_SIDE = "conflict side"

#: item kinds that may make an event binding (the others never do by themselves);
#: a negation only as the subject's own standing aversion ("I don't eat shellfish")
BINDING_ITEM_KINDS = frozenset({"constraint", "scope", "preference", "negation"})
#: explicit event kinds that bind whatever the text says
BINDING_EVENT_KINDS = {"constraint": CONSTRAINT, "preference": PREFERENCE}

# The subject speaking of itself: a preference binds only in the first person.
_FIRST_PERSON = frozenset({"i", "i'm", "im", "i've", "i'd", "i'll", "we", "we're", "my", "our"})
# Words that report what someone else said or feels: the clause is not the subject's own.
_REPORTING = frozenset(
    {"said", "says", "say", "told", "tells", "thinks", "thought", "mentioned", "asked"}
)
# "I don't eat", "we never fly", "I can't have": the subject's own standing refusal,
# in the present; "I didn't go" or "I wasn't there" tell a story and do not bind.
_AVERSION = re.compile(
    r"^i\s+(?:(?:do|does)\s+not|don't|never|can't|cannot|can\s+not|won't|will\s+not)\b",
    re.IGNORECASE,
)
# A rule an agent must keep: an instruction ("Never email the client after 9 pm",
# "Please always copy legal", "Do not share the keys"), a hard limit ("at most 4,500
# EUR", "must be closed", "must not be shared"; not "you must love it") or the subject's own refusal
# ("I don't fly"). "We always look forward to camping" or "Love should be everyone's
# right" tell or muse; they do not bind.
_INSTRUCTION = re.compile(
    r"^(?:please\s+|and\s+|but\s+|so\s+)?(?:never|always|don't|do\s+not|only|no|avoid|stop"
    r"|make\s+sure|remember\s+to|ensure|keep|use|send|call|email|ask|tell|book|copy|check"
    r"|reply|respond|write|include|cc|notify|remind)\b"
    # not conversation: "Always a joy", "Don't know what I'd do", "Don't be afraid"
    r"(?!\s+(?:a|an|the|so|such|sure|been|know|knew|worry|be\s+afraid|get\s+me\s+wrong)\b)",
    re.IGNORECASE,
)
_HARD_LIMIT = re.compile(
    r"\b(?:must\s+(?:not|never|always|(?:be|get)\s+\w+(?:ed|en))|mustn't|shall|not\s+allowed|forbidden|prohibited|required"
    r"|at\s+most|at\s+least|no\s+more\s+than|no\s+later\s+than|no\s+earlier\s+than"
    r"|not\s+exceed|limit|maximum|minimum|deadline)\b",
    re.IGNORECASE,
)
_SPEAKER_PREFIX = re.compile(r"^[^\W\d_][\w .'-]{0,40}:\s+")

# What makes an open item a request the agent must act on: a task, a TODO, something
# still to do. "It reminds me of that day" has the word but asks nothing.
_OPEN_REQUEST = re.compile(
    r"\b(?:TODO|TBD|FIXME)\b|\bto-?do:|\bstill\s+(?:need|needs|have|has)\s+to\b"
    r"|\bfollow[\s-]?up\b|\baction\s+item|\bpending\b|\bremind\s+me\s+to\b|\byet\s+to\b"
    r"|\bnot\s+(?:yet\s+)?(?:done|finished|resolved|decided)\b|\bunresolved\b|\boutstanding\b",
    re.IGNORECASE,
)

# Words that state a choice between options: a positive preference binds only with one.
_PREFERS = frozenset({"prefer", "prefers", "preferred", "rather", "instead"})
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")


def binding_reasons(
    event: Event,
    items: Sequence[Item],
    *,
    open_items: Collection[str] = (),
    conflict_sides: Collection[str] = (),
) -> tuple[str, ...]:
    """Why ``event`` binds the agent, strongest first; () when it does not.

    ``items`` are the event's own must-preserve items (others are ignored);
    ``open_items`` and ``conflict_sides`` are event ids.
    """
    reasons: dict[str, None] = {}
    if event.id in conflict_sides:
        reasons[CONFLICT_SIDE] = None
    if event.id in open_items and (event.kind == "task" or _OPEN_REQUEST.search(event.text)):
        reasons[OPEN_ITEM] = None
    if event.kind in BINDING_EVENT_KINDS:
        reasons[BINDING_EVENT_KINDS[event.kind]] = None
    for item in items:
        if item.source != event.id or item.kind not in BINDING_ITEM_KINDS:
            continue
        if item.kind in ("constraint", "negation") and not _opens_a_sentence(event.text, item):
            continue  # "... and never give up": a clause inside a story, not a rule
        reason = _item_reason(item)
        if reason is not None:
            reasons[reason] = None
    return tuple(reasons)


def is_binding(
    event: Event,
    items: Sequence[Item],
    *,
    open_items: Collection[str] = (),
    conflict_sides: Collection[str] = (),
) -> bool:
    """``binding_reasons`` is not empty."""
    return bool(binding_reasons(event, items, open_items=open_items, conflict_sides=conflict_sides))


def may_bind(item_kinds: Collection[str]) -> bool:
    """Whether an event with these item kinds could be binding: a cheap first filter."""
    return any(kind in BINDING_ITEM_KINDS for kind in item_kinds)


def _opens_a_sentence(text: str, item: Item) -> bool:
    """The item's clause starts its sentence (after a speaker's name, if any)."""
    clause = item.clause.strip()
    where = text.find(clause) if clause else -1
    if where <= 0:
        return True  # the start of the text, or no clause to place
    before = _SPEAKER_PREFIX.sub("", text[:where].rstrip()) if ":" in text[:where] else text[:where]
    before = before.rstrip()
    return not before or before[-1] in ".!?:;\n" or before.endswith(("...", "…"))


def _states_a_rule(clause: str) -> bool:
    """An instruction, a hard limit or the subject's own refusal; not a story or a musing."""
    text = _SPEAKER_PREFIX.sub("", clause.replace("’", "'")).strip()
    if not text:
        return True  # no clause to read (an explicit fact): taken as given
    return bool(_INSTRUCTION.match(text) or _HARD_LIMIT.search(text) or _AVERSION.match(text))


def _item_reason(item: Item) -> str | None:
    clause = item.clause.strip()
    if clause.endswith("?"):
        return None  # a question asks; it does not set a rule or state a preference
    if item.kind == "scope":
        return SCOPE
    words = [w.casefold().replace("’", "'") for w in _WORD.findall(clause)]
    if any(w in _REPORTING for w in words):
        return None  # someone else's words, reported
    if item.kind == "constraint":
        return CONSTRAINT if _states_a_rule(clause) else None
    if item.kind == "negation":
        text = _SPEAKER_PREFIX.sub("", clause.replace("’", "'"))
        return PREFERENCE if _AVERSION.match(text) else None
    if clause and not any(w in _FIRST_PERSON for w in words):
        return None  # "Sam loves jazz": not the subject's own preference
    if item.polarity is False or any(w in _PREFERS for w in words):
        return PREFERENCE  # an aversion, or a stated choice ("I prefer tea")
    return None  # "I love that!", a hobby: ranked like any fact, not forced
