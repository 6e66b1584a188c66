"""Assembling items: an event's facts, then what each sentence of its text says.

Keys, ids and polarities of the items; the per-process cache of an event's items.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date

from memlineage.meaning import caches
from memlineage.meaning.extract.clauses import clause_items, clause_value, content_words, slug
from memlineage.meaning.extract.patterns import (
    AFTER_DENIAL,
    BRIDGE_WORDS,
    DENY_AFTER,
    GAP_LIMIT,
    GAP_PUNCT,
    MAX_SENTENCE_CHARS,
    MEASURED_REMAINDER,
    OPEN_HINTS,
    OPEN_MARKERS,
    VALUE_VERBS,
    WORD,
    folded,
    holds_any,
)
from memlineage.meaning.extract.recognisers import recognised
from memlineage.meaning.extract.sentences import (
    Found,
    Sentence,
    Span,
    cached_windows,
    sentence_windows,
    verbatim,
)
from memlineage.meaning.extract.sentiment import stance_score
from memlineage.meaning.values import canonical, read_timestamp
from memlineage.model import Conflict, Event, FactValue, Item

#: the item kinds the extractor emits (explicit facts keep their own kind)
KINDS: tuple[str, ...] = (
    "constraint",
    "negation",
    "preference",
    "decision",
    "number",
    "money",
    "date",
    "id",
    "scope",
    "conflict",
)
GLOBAL_SCOPE = "global"


def extract_items(events: Sequence[Event], conflicts: Sequence[Conflict] = ()) -> list[Item]:
    """The must-preserve items of the events plus one item per unresolved conflict.

    Items of one event depend on that event alone, so inserting, removing or
    reordering other events never changes them.
    """
    return extract_with_stored(events, conflicts, {}).items


@dataclass(frozen=True)
class Extracted:
    """``extract_items``' result, and the events whose items it did not find stored."""

    items: list[Item]
    #: each event this call extracted (not found in ``stored``, nor reused from this
    #: subject's last call, whose caller had them stored), with its items
    unstored: list[tuple[Event, tuple[Item, ...]]]
    #: ``expected_open_items`` of the events
    open_items: tuple[str, ...]


@dataclass(frozen=True)
class _Read:
    """What a subject's last call read and found."""

    events: list[Event]
    items: list[Item]  # the events' (no conflicts')
    open_items: list[str]


def extract_with_stored(
    events: Sequence[Event],
    conflicts: Sequence[Conflict],
    stored: Mapping[int, tuple[Item, ...]],
) -> Extracted:
    """``extract_items`` taking each event's items from ``stored`` (seq -> items, as
    the store kept them under these rules) where they are, extracting the others; and
    the events' open items."""
    subject = events[0].subject if events else ""
    last = _last.take(subject)
    if last is None or len(last.events) > len(events) or not _same_prefix(events, last.events):
        last = _Read([], [], [])
    items, open_items = list(last.items), list(last.open_items)
    unstored: list[tuple[Event, tuple[Item, ...]]] = []
    for event in events[len(last.events) :]:
        found = stored.get(event.seq)
        if found is None:
            found = cached_event_items(event)
            unstored.append((event, found))
        items.extend(found)
        if is_open_item(event):
            open_items.append(event.id)
    _last.keep(subject, _Read(list(events), list(items), open_items))
    items.extend(conflict_items(conflicts))
    return Extracted(items, unstored, tuple(open_items))


def _same_prefix(events: Sequence[Event], known: list[Event]) -> bool:
    return list(events[: len(known)]) == known


def conflict_items_start(
    items: Sequence[Item], conflicts: Sequence[Conflict], start: int = 0
) -> int:
    """Where the trailing conflicts' items begin in ``items`` (not before ``start``):
    ``len(items) - trailing_conflict_items(items, start)``, found without reading them
    one by one when ``items`` ends with ``conflicts``' very items (what extraction gives)."""
    theirs = conflict_items(conflicts)
    end = len(items) - len(theirs)
    fits = end >= start and tuple(items[end:]) == theirs
    if fits and (end == start or items[end - 1].kind != "conflict"):
        return end
    return len(items) - trailing_conflict_items(items, start)


def trailing_conflict_items(items: Sequence[Item], start: int = 0) -> int:
    """How many items after ``start`` end the list as conflicts' (``extract_items`` puts
    them after every event's): what a run over a longer selection appends after them."""
    count = 0
    while len(items) - count > start and items[-1 - count].kind == "conflict":
        count += 1
    return count


#: The version of the extraction rules, stored beside each subject's item kinds
#: (store/detect.py, docs/recall.md). Bump it with any change in this package or in
#: meaning/values.py that may change the kinds of an event's items: stored kinds of
#: another version are ignored by recall and rebuilt by the detection job.
RULES_VERSION = 6  # 2: open items marked (OPEN_ITEM); 3: "remind me why" is none, sentences;
# 4: "remind me" is an open item only as a request
# also end before a lower-case word, long sentences are read in windows
# 5: "how much work we still have to do" is neither an open item nor a rule
# 6: the binding mark reads rules in six more languages, notices ("No smoking in my
#    car") and listed allergies (meaning/binding.py)

#: The mark event_kinds adds for an open item (an event expected_open_items keeps
#: open); it is not an item kind. Recall reads it with the stored kinds instead of
#: running the open-item patterns over every event again.
OPEN_ITEM = "open-item"

#: events whose items are remembered per process (about 1 KB each); above the
#: 100,000 events of a large subject plus the statement texts the gate reads
ITEM_CACHE_SIZE = 1 << 18

# The events' items of the last call per subject: a consolidation asks again for
# the same events plus a tail, and the items of one event depend on it alone, so
# the items of an equal prefix are the ones found last time (compared by identity
# first: a subject's events are the same objects from one run to the next).
_last: caches.LastPerKey[str, _Read] = caches.LastPerKey(
    lambda last: len(last.events), ITEM_CACHE_SIZE
)


def event_items(event: Event) -> list[Item]:
    """The items of one event: its explicit facts, then what its text says.

    Items depend on the event alone (every field of it is the cache key, its
    ``recorded_at`` included), so they are computed once per process and event:
    a consolidation re-reads the same events every run. A pure cache of a pure
    function: nothing about the store is remembered.
    """
    return list(cached_event_items(event))


def event_kinds(event: Event) -> tuple[str, ...]:
    """The distinct kinds of an event's items, and OPEN_ITEM for an open item, sorted:
    what recall needs to know of an event beyond its text."""
    kinds = {item.kind for item in cached_event_items(event)}
    if is_open_item(event):
        kinds.add(OPEN_ITEM)
    return tuple(sorted(kinds))


@functools.lru_cache(maxsize=ITEM_CACHE_SIZE)
def cached_event_items(event: Event) -> tuple[Item, ...]:
    return tuple(_event_items(event))


#: sentences whose items are remembered per process: a chat repeats its short lines
#: ('Thanks!', 'See you tomorrow!') across events; bounded, so an erased event's
#: text leaves the cache as new sentences come, as it leaves the event cache
SENTENCE_CACHE_SIZE = 1 << 15


@functools.lru_cache(maxsize=SENTENCE_CACHE_SIZE)
def sentence_items(sentence: str, scope: str, today: date | None) -> tuple[Found, ...]:
    """What one sentence says, in a scope, read on the writer's local day ``today``:
    the only things its items depend on, so every event that holds it shares them."""
    return tuple(_sentence_items(sentence, scope, today))


def clear_caches() -> None:
    """Forget every cache of stored text (meaning/caches.py), extraction's included:
    what a new process starts with (benchmarks measure the work, not the cache)."""
    caches.clear_all()


def _event_items(event: Event) -> list[Item]:
    scope = event.project or GLOBAL_SCOPE
    seen: set[str] = set()
    items: list[Item] = []
    for fact in event.facts:
        _add(items, seen, event.id, fact.kind, f"{scope}/fact/{fact.key}", fact.value, fact.unit,
             fact.polarity, "")  # fmt: skip
    today = _today_of(event)
    text_kinds = 0
    for start, end, before, after in sentence_windows(event.text):
        sentence = event.text[start:end]
        for kind, key, value, unit, polarity, clause in sentence_items(sentence, scope, today):
            text_kinds += kind in _CLAUSE_KINDS
            shown = marked_cut(clause, sentence, before, after) if before or after else clause
            _add(items, seen, event.id, kind, key, value, unit, polarity, shown)
    if not text_kinds and event.kind in _CLAUSE_KINDS and event.text.strip():
        # a constraint/preference/decision event whose wording no pattern caught: keep it
        # whole, or its first window marked as cut when it is too long to read whole
        text = event.text if len(event.text) <= MAX_SENTENCE_CHARS else _first_window(event.text)
        value = clause_value(text)
        key = f"{scope}/{event.kind}/{slug(content_words(value)) or 'text'}"
        _add(items, seen, event.id, event.kind, key, value, None, True, verbatim(text))
    return items


#: what stands for the text cut off a clause too long to read whole
CUT_MARK = "[…]"


def marked_cut(clause: str, window: str, before: bool, after: bool) -> str:
    """A clause of a cut window, marked where the window's cut touches it: the value and
    its words stay exact, and no reader takes the piece for the whole sentence."""
    left = CUT_MARK + " " if before and window.startswith(clause) else ""
    right = " " + CUT_MARK if after and window.endswith(clause) else ""
    return f"{left}{clause}{right}"


def _first_window(text: str) -> str:
    start, end, _, _ = sentence_windows(text)[0]
    return f"{text[start:end]} {CUT_MARK}"


@functools.lru_cache(maxsize=ITEM_CACHE_SIZE)
def conflict_item(conflict: Conflict) -> Item:
    """An unresolved conflict as an item; both sides must appear in its claim's derivedFrom."""
    return _item(conflict.a, "conflict", f"conflict/{conflict.id}", conflict.id, None, True)


caches.register(conflict_item.cache_clear)


def _conflict_items(conflicts: Sequence[Conflict]) -> tuple[Item, ...]:
    return tuple(conflict_item(c) for c in conflicts if not c.resolved)


#: the unresolved conflicts' items, in order: a subject's run after a quiet tail is
#: handed the very same conflicts (consolidation/select.py) and reads them at no cost,
#: and after a tail with conflicts among its events, the same ones and a few more
conflict_items = caches.ByIdentity(
    _conflict_items, lambda known, more: known + _conflict_items(more)
)


def expected_open_items(events: Sequence[Event]) -> tuple[str, ...]:
    """Ids of the events an output must keep open: kind 'task', or a text marker (TODO, ...)."""
    return tuple(e.id for e in events if is_open_item(e))


def is_open_item(event: Event) -> bool:
    return event.kind == "task" or _marks_open(event.text)


@functools.lru_cache(maxsize=ITEM_CACHE_SIZE)
def _marks_open(text: str) -> bool:
    """A text marker of an open task (TODO, ...), remembered per text: every run asks
    it of every selected event."""
    # the markers' pattern is slow to scan; most texts hold none of its words
    if not holds_any(folded(text), OPEN_HINTS):
        return False
    return any(not _measured_remainder(text, m) for m in OPEN_MARKERS.finditer(text))


caches.register(_marks_open.cache_clear)


def _measured_remainder(text: str, marker: re.Match[str]) -> bool:
    """ "how much work we still have to do": a "still ... to" after "how much" is no task."""
    return marker.group().lower().startswith("still") and bool(
        MEASURED_REMAINDER.search(text, 0, marker.start())
    )


def item_id(
    source: str, kind: str, key: str, value: FactValue, unit: str | None, polarity: bool
) -> str:
    family, magnitude = canonical(value, unit)
    digest = hashlib.sha256(
        "\x1f".join((source, kind, key, family, magnitude, str(polarity))).encode(
            "utf-8", "surrogatepass"
        )
    ).hexdigest()
    return "itm-" + digest[:20]


_CLAUSE_KINDS = frozenset({"constraint", "negation", "preference", "decision"})


def _item(
    source: str,
    kind: str,
    key: str,
    value: FactValue,
    unit: str | None,
    polarity: bool,
    clause: str = "",
) -> Item:
    return Item(
        item_id(source, kind, key, value, unit, polarity),
        source,
        kind,
        key,
        value,
        unit,
        polarity,
        clause,
    )


def _add(
    items: list[Item],
    seen: set[str],
    source: str,
    kind: str,
    key: str,
    value: FactValue,
    unit: str | None,
    polarity: bool,
    clause: str,
) -> None:
    item = _item(source, kind, key, value, unit, polarity, clause)
    if item.id not in seen:  # the same statement twice in one event is one item
        seen.add(item.id)
        items.append(item)


def _today_of(event: Event) -> date | None:
    """The day relative dates resolve against: that of ``at``, else of ``recorded_at``,
    else none.

    ``read_timestamp`` keeps the UTC offset written in the stamp, so ``.date()`` is
    the event's own local day: 'tomorrow' sent at 2026-03-04T23:00:00-07:00 is March 5.
    """
    for stamp in (event.at, event.recorded_at):
        if stamp:
            day = _stamp_day(stamp)
            if day is not None:
                return day
    return None


@functools.lru_cache(maxsize=1 << 12)
def _stamp_day(stamp: str) -> date | None:
    """A stamp's local day, None when it does not parse (a stream repeats its stamps)."""
    parsed = read_timestamp(stamp)
    return parsed.date() if parsed is not None else None


def _sentence_items(text: str, scope: str, today: date | None) -> Iterator[Found]:
    sentence = recognised(text, today)
    ids = [s for s in sentence.spans if s.kind == "id"]
    entity = f"[{ids[0].value}]" if ids else ""
    for span in sentence.spans:
        clause = sentence.verbatim_clause_of(span.start)
        if span.kind == "id":
            key = f"{scope}/id/{span.subtype}:{span.value}"
            yield "id", key, span.value, None, True, clause
        elif span.kind == "scope":
            key = f"{scope}/scope/{str(span.value).casefold()}{entity}"
            yield "scope", key, span.value, None, _scope_polarity(sentence, span), clause
        else:
            anchor_words = _anchor_words(sentence, span)
            key = f"{scope}/{span.kind}/{slug(anchor_words) or span.kind}{entity}"
            polarity = _value_polarity(sentence, span)
            yield span.kind, key, span.value, span.unit, polarity, clause
    yield from clause_items(sentence, scope, entity)


def _anchor_words(sentence: Sentence, span: Span) -> list[str]:
    """What a number, amount or date is *of*: up to 3 content words before it in its clause.

    Falls back to the words after it; a count's noun ('3 servers') is appended.
    Found by bisection in the sentence's word index, so each value costs O(log n).
    """
    clause_start, clause_end = sentence.clause_of(span.start)
    starts, all_words = sentence.anchor_words
    first = bisect.bisect_left(starts, clause_start)
    here = bisect.bisect_left(starts, span.start)
    words = all_words[max(first, here - 3) : here]
    if not words:
        after = bisect.bisect_left(starts, span.end)
        words = all_words[after : min(after + 3, bisect.bisect_left(starts, clause_end))]
    if span.noun and span.noun not in words:
        words = [*words, span.noun]
    return words


def _value_polarity(sentence: Sentence, span: Span) -> bool:
    """Is a number, amount or date stated (True) or denied (False)?

    Denied when a negation governs it: the nearest negation before it in its
    clause is separated from it only by function words and at most one verb that
    takes a value ('not on June 3', 'never agreed to a $700 fee', 'isn't 500'),
    with no other value in between ('not 5 mi' but '..., it's on June 4'). A bound
    in between keeps it stated ('never spend more than 500 EUR': the clause is the
    constraint). Or when a deny verb follows it ('the $700 offer was rejected').
    """
    clause_start, clause_end = sentence.clause_of(span.start)
    marks = sentence.negation_marks.get(clause_start, [])
    at = bisect.bisect_right(marks, span.start)
    denied = False
    if at:
        mark = marks[at - 1]
        gap = sentence.text[mark : span.start]
        denied = (
            len(gap) <= GAP_LIMIT
            and sentence.spans_between(mark, span.start) == 0
            and _governs(gap)
        )
    return denied == _denied_after(sentence, span, clause_end)


def _governs(gap: str) -> bool:
    verbs = 0
    for word in WORD.findall(gap.casefold().replace("’", "'")):
        if word in VALUE_VERBS:
            verbs += 1
        elif word not in BRIDGE_WORDS:
            return False
    return verbs <= 1 and GAP_PUNCT.search(gap) is None


def _denied_after(sentence: Sentence, span: Span, clause_end: int) -> bool:
    """'… permission was withdrawn', 'is refused', 'was never granted' right after a span."""
    m = AFTER_DENIAL.match(sentence.text, span.end, min(clause_end, span.end + GAP_LIMIT))
    if m is None:
        return False
    deny = m["verb"].casefold().split()[0] in DENY_AFTER
    return deny != bool(m["neg"])


def _scope_polarity(sentence: Sentence, span: Span) -> bool:
    """Negators and deny verbs ('revoke', 'remove') before the scope in its clause,
    and a deny predicate after it ('was withdrawn', 'is refused')."""
    clause_start, clause_end = sentence.clause_of(span.start)
    marks = sentence.denial_marks.get(clause_start, [])
    denials = bisect.bisect_right(marks, span.start)
    return (denials % 2 == 0) != _denied_after(sentence, span, clause_end)


for _cache in (cached_event_items, sentence_items, cached_windows, _stamp_day, stance_score):
    caches.register(_cache.cache_clear)
