"""Contradictions over time, detected by the raw layer (never by the consolidator). Pure.

A new event's must-preserve item contradicts a valid earlier item when both
have the same key (same scope, so two projects never meet) and speak of the
same thing, and:

- ``opposite-polarity``: one affirms what the other denies. For a clause
  (constraint, negation, preference, decision) the stance is the sign of its
  sentiment ("I love jazz" +, "I hate jazz" -, "I do not like jazz" -), read
  with VADER's lexicon, falling back to the extractor's polarity when the
  clause carries no sentiment; for a value it is the polarity itself;
- ``other-value``: a single-valued item (a quantity with a unit, an amount, a
  date, an explicit fact) now has another canonical value (4,500 EUR, later
  5,000 EUR). A bare number without a unit is keyed only by the words before
  it ("note 5", "note 6"; "chapter 3", "chapter 4"): too weak to call a change
  of value a contradiction, so only its polarity counts.

Clauses speak of the same thing when their words, less those that carry the
stance, are the same: "Alice's favourite colour is blue" never meets "Bob's
favourite colour is blue". Values speak of the same thing when their events
name the same entity ids: "Ticket T-1 costs 5 EUR" never meets "Ticket T-2
costs 7 EUR". Ids and permission scopes are sets (a user has many
tickets), so only their polarity can contradict.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from memlineage.meaning import caches, extract
from memlineage.meaning.extract.sentiment import stance_score, vader
from memlineage.meaning.values import canonical
from memlineage.model import EVENT_KINDS, Event, Item

OPPOSITE_POLARITY = "opposite-polarity"
OTHER_VALUE = "other-value"
CLAUSE_KINDS = frozenset({"constraint", "negation", "preference", "decision"})
SET_VALUED = frozenset({"id", "scope"})
# Identifier-like tokens (letters then digits: T-1, ORION-12, room42) the extractor's id
# patterns may not take; enough to keep two named things apart.
_ENTITY_TOKEN = re.compile(r"\b[A-Za-z]+[-_#]?\d+[A-Za-z0-9-]*\b")
_DIGIT = re.compile(r"\d")
_NEGATORS = frozenset({"not", "no", "never", "don't", "doesn't", "didn't", "longer", "anymore"})
# A chat line names its speaker first ("Caroline: I love it!"); the name says who
# spoke, not what about, so it is never part of a key or a topic.
_SPEAKER_PREFIX = re.compile(r"^\s*([A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*){0,2}):\s")
# Words that make a quantity or a date a record of one period ("1650 steps today"):
# the next period's value is another record, not a changed value.
_PERIOD = re.compile(
    r"\b(?P<day>today|tonight|this (?:morning|afternoon|evening))\b"
    r"|\b(?P<yesterday>yesterday|last night)\b"
    r"|\b(?P<week>this week)\b|\b(?P<lastweek>last week)\b|\b(?P<month>this month)\b"
    r"|\b(?P<lastmonth>last month)\b|\b(?P<year>this year)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class KeyedItem:
    """One must-preserve item of one event, as detection compares it."""

    event_id: str
    seq: int
    key: str  # clause kinds share one key per topic: 'scope/clause/anchor'
    kind: str
    family: str
    magnitude: str
    stance: int  # +1 affirms, -1 denies
    topic: str  # the clause's words without those that carry its stance ('' for values)
    at: str | None = None
    event_kind: str | None = None

    def to_json(self) -> str:
        return json.dumps(
            [self.kind, self.family, self.magnitude, self.stance, self.topic], ensure_ascii=False
        )

    @staticmethod
    def from_row(
        event_id: str, seq: int, key: str, item: str, at: str | None, event_kind: str | None
    ) -> KeyedItem:
        kind, family, magnitude, stance, topic = _item_fields(item)
        return KeyedItem(event_id, seq, key, kind, family, magnitude, stance, topic, at, event_kind)


@functools.lru_cache(maxsize=1 << 16)
def _item_fields(item: str) -> tuple[str, str, str, int, str]:
    """A stored item's fields; cached, as a detection run reads the same items often."""
    kind, family, magnitude, stance, topic = json.loads(item)
    return kind, family, magnitude, stance, topic


caches.register(_item_fields.cache_clear)


@dataclass(frozen=True)
class Detected:
    """A contradiction between an earlier and a newer event on one key, by one rule."""

    earlier: KeyedItem
    newer: KeyedItem
    rule: str

    @property
    def kind(self) -> str:
        """The event kind the temporal policy looks up (see ``conflict_kind``)."""
        return conflict_kind(self.earlier, self.newer)


def keyed_items(event: Event) -> list[KeyedItem]:
    """The items of ``event`` detection compares (conflict items are not the event's)."""
    scope = event.project or extract.GLOBAL_SCOPE
    items = extract.event_items(event)
    if not items:
        return []  # most chat lines: nothing to key, so no entities to name either
    # A value is about the entities its event names: "Ticket T-1 costs 5 EUR" and
    # "Ticket T-2 costs 7 EUR" are two tickets, not a changed price.
    named = {str(i.value) for i in items if i.kind == "id"}
    if _DIGIT.search(event.text):  # an entity token holds a digit
        named |= {m.group().upper() for m in _ENTITY_TOKEN.finditer(event.text)}
    entities = ",".join(sorted(named))
    speaker = speaker_words(event)
    keyed = (_keyed(event, scope, item, entities, speaker) for item in items)
    return [k for k in keyed if k is not None]


def speaker_words(event: Event) -> frozenset[str]:
    """The lower-case words of the name the event's text opens with ("Caroline: ...")."""
    found = _SPEAKER_PREFIX.match(event.text)
    return frozenset(found.group(1).lower().split()) if found else frozenset()


def period(clause: str, at: str | None) -> str:
    """The period a dated record speaks of ("today" told on May 1: 2026-05-01), or ''."""
    found = _PERIOD.search(clause)
    if found is None or not at:
        return ""
    day = datetime.fromisoformat(at).date()  # the writer's local day, as written
    name = found.lastgroup
    if name == "yesterday":
        return f"day:{day - timedelta(days=1)}"
    if name in ("week", "lastweek"):
        year, week, _ = (day - timedelta(days=7 if name == "lastweek" else 0)).isocalendar()
        return f"week:{year}-W{week:02d}"
    if name in ("month", "lastmonth"):
        first = day.replace(day=1)
        return f"month:{(first - timedelta(days=1) if name == 'lastmonth' else first):%Y-%m}"
    if name == "year":
        return f"year:{day.year}"
    return f"day:{day}"


def _without(words: Iterable[str], names: frozenset[str]) -> list[str]:
    return [w for w in words if w.lower().strip('.,;:!?"()') not in names]


def _is_clause(item: Item, scope: str) -> bool:
    """A clause item of the text (not an explicit fact of the same kind)."""
    return item.kind in CLAUSE_KINDS and item.key.startswith(f"{scope}/{item.kind}/")


def _keyed(
    event: Event, scope: str, item: Item, entities: str, speaker: frozenset[str]
) -> KeyedItem | None:
    """The item as detection compares it; None when, less the speaker's name, no key is left."""
    family, magnitude = canonical(item.value, item.unit)
    clause = _is_clause(item, scope)
    prefix = f"{scope}/{item.kind}/"
    if clause or item.key.startswith(prefix):
        anchor = "-".join(_without(item.key[len(prefix) :].split("-"), speaker))
        if not anchor:
            return None  # "Caroline: I love it!": nothing but who spoke says what about
        key = f"{scope}/clause/{anchor}" if clause else f"{prefix}{anchor}"
    else:
        key = item.key  # an explicit fact's own key
    if clause:
        text = str(item.value)
        topic = " ".join(_without(_topic(text).split(), speaker))
        return KeyedItem(
            event.id, event.seq, key, item.kind, family, magnitude,
            _stance(text, item.polarity), topic, event.at, event.kind,
        )  # fmt: skip
    about = [f"entities:{entities}"] if entities and item.kind not in SET_VALUED else []
    when = period(item.clause, event.at) if item.kind not in SET_VALUED else ""
    topic = " ".join([*about, when] if when else about)
    return KeyedItem(
        event.id, event.seq, key, item.kind, family, magnitude,
        1 if item.polarity else -1, topic, event.at, event.kind,
    )  # fmt: skip


def _stance(clause: str, polarity: bool) -> int:
    compound = stance_score(clause)
    if compound > 0:
        return 1
    if compound < 0:
        return -1
    return 1 if polarity else -1


# Words that say when or how strongly, not what about: "I hate opera now" is about opera.
_FILLERS = frozenset({"now", "anymore", "really", "actually", "still", "again", "just", "so"})


def _topic(clause: str) -> str:
    lexicon = vader().lexicon
    words = [w.strip('.,;:!?"()') for w in clause.replace("’", "'").split()]
    kept = [w for w in words if w not in lexicon and w not in _NEGATORS and w not in _FILLERS]
    return " ".join(w for w in kept if w)


def detect(new: Iterable[KeyedItem], earlier: Iterable[KeyedItem]) -> list[Detected]:
    """The earlier events the new items contradict, once per pair of events.

    Per key, the new item is checked against the latest earlier item it
    contradicts and every earlier item that says the same as that one ("I love
    jazz" twice, then "I hate jazz": both loves). Older, different values were
    compared with their own successors when they arrived, so the number of
    conflicts follows the repetitions of one statement, not the history's length.
    """
    by_key: dict[str, list[KeyedItem]] = {}
    for item in earlier:
        by_key.setdefault(item.key, []).append(item)
    found: dict[tuple[str, str], Detected] = {}
    for item in new:
        candidates = sorted(
            (
                b
                for b in by_key.get(item.key, ())
                if b.seq < item.seq and b.event_id != item.event_id
            ),
            key=lambda i: -i.seq,
        )
        latest_hit = next((b for b in candidates if contradiction(b, item)), None)
        if latest_hit is None:
            continue
        rule = contradiction(latest_hit, item)
        assert rule is not None
        for before in candidates:
            if _says_the_same(before, latest_hit):
                found.setdefault((before.event_id, item.event_id), Detected(before, item, rule))
    return sorted(found.values(), key=lambda d: (d.newer.seq, d.earlier.seq))


def _says_the_same(a: KeyedItem, b: KeyedItem) -> bool:
    return (a.family, a.magnitude, a.stance, a.topic) == (b.family, b.magnitude, b.stance, b.topic)


def contradiction(before: KeyedItem, after: KeyedItem) -> str | None:
    """The rule by which two items of one key contradict each other, or None."""
    if before.topic != after.topic:
        return None
    clause = before.kind in CLAUSE_KINDS and "/clause/" in before.key
    same_value = (before.family, before.magnitude) == (after.family, after.magnitude)
    if before.stance != after.stance:
        # "on June 4" / "not on June 3": denying a third value leaves the first standing.
        return OPPOSITE_POLARITY if clause or same_value else None
    if before.stance < 0:
        return None  # "not on May 1" / "not on May 2": two denials agree
    if clause or before.kind in SET_VALUED or after.kind in SET_VALUED:
        return None  # a clause's words are its identity; ids and scopes are sets
    if before.family == "number" and after.family == "number":
        return None  # a bare count keyed by the words before it: "note 5", "note 6"
    if _occurrence(before.key) and not _of_a_period(before.topic):
        return None  # "I spent $40 on groceries", later "$65": two spends, not a change
    return None if same_value else OTHER_VALUE


#: verbs that make a value the record of one occurrence, not the state of an attribute
#: (past forms only: "Pay is 50 USD per hour" states a rate)
_OCCURRENCE_TEXT = (
    "spent paid bought earned donated tipped sold raised won lost ran walked "
    "cycled swam drove hiked ate drank gave received sent transferred"
)
_OCCURRENCE_VERBS = frozenset(_OCCURRENCE_TEXT.split())


def _of_a_period(topic: str) -> bool:
    """A record of one period ("I ran 5 km today"): a new value that day corrects it."""
    return any(word.startswith(("day:", "week:", "month:", "year:")) for word in topic.split())


@functools.lru_cache(maxsize=1 << 12)
def _occurrence(key: str) -> bool:
    """Whether a value's key names it by what someone did ("global/money/spent")."""
    return any(word in _OCCURRENCE_VERBS for word in key.rsplit("/", 1)[-1].split("-"))


def conflict_kind(earlier: KeyedItem, newer: KeyedItem) -> str:
    """The kind the temporal policy looks up: the events' declared kind, else the items'.

    The newer event's declared kind first, then the earlier one's, then an
    item kind that is an event kind (a preference clause), else ``fact``.
    """
    for kind in (newer.event_kind, earlier.event_kind, newer.kind, earlier.kind):
        if kind in EVENT_KINDS:
            return kind
    return "fact"


def latest(detected: Detected) -> str:
    """The newer side by ``at`` (then seq, for equal or missing times): latest-wins' winner."""
    a, b = detected.earlier, detected.newer
    if a.at and b.at:
        a_at, b_at = datetime.fromisoformat(a.at), datetime.fromisoformat(b.at)
        if a_at != b_at:
            return a.event_id if a_at > b_at else b.event_id
    return b.event_id


def stored_rows(tenant: str, subject: str, items: Sequence[KeyedItem]) -> list[tuple[Any, ...]]:
    """``event_keys`` rows of the items, one per distinct (key, item)."""
    seen: set[tuple[str, str]] = set()
    rows = []
    for item in items:
        body = item.to_json()
        if (item.key, body) not in seen:
            seen.add((item.key, body))
            rows.append((tenant, subject, item.key, item.seq, item.event_id, body))
    return rows
