"""The built-in generator: compresses by choosing whole events, never rewords, never adjudicates.

The unit of meaning is the event (DESIGN.md, "A consolidation", step 4):

- Statements: one per event, its whole text verbatim (whitespace collapsed,
  original words and case), with its date, speaker and project. Events whose
  texts are identical (same speaker, project and conflict) share one
  statement citing all of them; different events are never merged, and an
  event is never cut into sentences. The one exception is an event too long
  for any budget, shown as numbered parts, every part marked (parts.py).
- Claims: one per distinct must-preserve item (same key, canonical value and
  polarity from several events become one claim deriving from all of them);
  a claim's ``text`` is the clause the item came from. Anything grounded in a
  side of an unresolved conflict is a claim of kind ``conflict``, never a
  fact. Claims stay in the JSON, whether their events are hot or cold.
- The hot summary: binding events first and always (meaning/binding.py), then
  the rest by value (an explicit kind, then the newest) while the rendered
  summary fits the token budget. Everything else
  moves to ``cold`` whole: past the budget, greetings and small talk, events
  without text. When the binding events alone exceed the budget the summary
  is published over it (the manifest and the rendered text say so).

The gate checks all of this independently; nothing here is trusted.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memlineage.consolidation.gate import CONFLICT_KIND
from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.parts import event_parts
from memlineage.consolidation.render import (
    CONTESTED_HEADER,
    at_instant,
    group_header,
    render_summary,
    shown_date,
    statement_line,
)
from memlineage.meaning import caches
from memlineage.meaning.binding import binding_reasons, is_binding, shown_kind
from memlineage.meaning.extract import ITEM_CACHE_SIZE
from memlineage.meaning.values import Canonical, canonical
from memlineage.model import Claim, Conflict, Event, Item, Statement
from memlineage.tokens import Tokenizer, default_tokenizer

#: explicit event kinds, worth more than an event of no kind when the budget chooses
HOT_KINDS = frozenset({"constraint", "preference", "decision", "task", "fact"})

# Greetings and fillers: an event made only of these words says nothing worth
# a summary line. A short list written by hand: no library ships "small talk",
# and an event with any other word (or any extracted item) is kept.
_SMALL_TALK_WORDS = """
    hi hello hey hiya howdy yo greetings morning afternoon evening night good
    bye goodbye cya later see you soon talk to take care cheers thanks thank
    thx ty much so very a lot lots many ok okay k kk alright all right sure
    yes yeah yep yup no nope nah fine great cool nice awesome perfect lovely
    wonderful amazing sounds sound lol haha hahaha hehe lmao wow oh ah ahh hmm
    um uh well anyway np problem welcome you're youre your how are doing is it
    going what's whats up there again too as always i am i'm im and the have
    day weekend
"""
_SMALL_TALK = frozenset(_SMALL_TALK_WORDS.split())
_WORDS = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")

Identity = tuple[str, Canonical, bool]


class DeterministicGenerator:
    """Fills the :class:`~.base.Generator` protocol without a model."""

    name = "deterministic"
    prompt_version = "deterministic-v3"
    model_snapshot = "builtin"

    def __init__(self, tokenizer: Tokenizer | None = None) -> None:
        self.tokenizer = tokenizer

    def generate(self, request: GenerationRequest) -> dict[str, Any]:
        unresolved = sorted((c for c in request.conflicts if not c.resolved), key=lambda c: c.id)
        side_of: dict[str, str] = {}
        for conflict in unresolved:  # sorted by id: an event's first conflict marks it
            side_of.setdefault(conflict.a, conflict.id)
            side_of.setdefault(conflict.b, conflict.id)
        by_source: dict[str, list[Item]] = {}
        for item in request.items:
            if item.kind != CONFLICT_KIND:
                by_source.setdefault(item.source, []).append(item)
        claims = _claims(request.items, unresolved, side_of)
        units = _units(request, by_source, side_of)
        if request.budget is not None:
            units = _fit(units, request.budget, self.tokenizer or default_tokenizer())
        statements = [s for unit in units for s in unit.statements]
        stated = {s for st in statements for s in st.derived_from}
        return {
            "claims": [c.to_json() for c in claims],
            "openItems": list(request.open_items),
            "unresolvedConflicts": [c.id for c in unresolved],
            "cold": [e.id for e in request.events if e.id not in stated],
            "statements": [s.to_json() for s in statements],
        }


# ---------------------------------------------------------------------------
# claims


@dataclass
class _ClaimDraft:
    key: str
    value: Any
    unit: str | None
    polarity: bool
    kind: str
    sources: dict[str, None]
    text: str


def _claims(
    items: Sequence[Item], unresolved: Sequence[Conflict], side_of: dict[str, str]
) -> list[Claim]:
    """One claim per distinct (key, canonical value, polarity), deriving from every source."""
    sides = {c.id: (c.a, c.b) for c in unresolved}
    drafts: dict[Identity, _ClaimDraft] = {}
    for item in items:
        identity = (item.key, canonical(item.value, item.unit), item.polarity)
        if item.kind == CONFLICT_KIND:
            sources: tuple[str, ...] = sides.get(str(item.value), (item.source,))
            text = f"unresolved conflict {item.value} between {' and '.join(sources)}"
            kind = CONFLICT_KIND
        else:
            sources, text = (item.source,), item.clause or _bare(item)
            kind = CONFLICT_KIND if item.source in side_of else item.kind
        draft = drafts.get(identity)
        if draft is None:
            draft = _ClaimDraft(item.key, item.value, item.unit, item.polarity, kind, {}, text)
            drafts[identity] = draft
        if kind == CONFLICT_KIND:
            draft.kind = CONFLICT_KIND
        draft.sources.update(dict.fromkeys(sources))
    return [
        Claim(d.key, d.value, d.unit, d.polarity, d.kind, tuple(d.sources), d.text)
        for d in drafts.values()
    ]


def _bare(item: Item) -> str:
    unit = f" {item.unit}" if item.unit else ""
    return f"{item.key.rsplit('/', 1)[-1]}: {item.value}{unit}"


# ---------------------------------------------------------------------------
# statements: one unit per event (or per group of identical events)


@dataclass(frozen=True)
class _Unit:
    """What moves hot or cold as one: an event's statement(s), or a group of identical events."""

    statements: tuple[Statement, ...]
    binding: bool
    value: tuple[int, int, int]  # higher is kept first


def _units(
    request: GenerationRequest, by_source: dict[str, list[Item]], side_of: dict[str, str]
) -> list[_Unit]:
    """One unit per event with something to show, identical events grouped, in seq order."""
    open_ids = set(request.open_items)
    groups: dict[tuple[str, str | None, str | None, str | None], list[Event]] = {}
    for event in request.events:
        text = " ".join(event.text.split())
        if not text:
            continue  # no text: its claims carry its facts; it is listed cold
        groups.setdefault((text, event.speaker, event.project, side_of.get(event.id)), []).append(
            event
        )
    units = []
    for (text, _, _, contested), events in groups.items():
        items = [item for e in events for item in by_source.get(e.id, ())]
        binding = any(
            is_binding(e, by_source.get(e.id, ()), open_items=open_ids, conflict_sides=side_of)
            for e in events
        )
        if not binding and not items and _small_talk(text):
            continue  # a greeting: never a statement, the event goes cold
        is_open = _any_open(events, open_ids)
        if len(events) == 1:  # nearly every event: the same unit as last run's
            units.append(_single_unit(events[0], tuple(items), text, contested, binding, is_open))
        else:
            units.append(_unit(events, items, text, contested, binding, is_open))
    return units


def _any_open(events: Sequence[Event], open_ids: set[str]) -> bool:
    return any(e.id in open_ids for e in events)


@functools.lru_cache(maxsize=ITEM_CACHE_SIZE)
def _single_unit(
    event: Event,
    items: tuple[Item, ...],
    text: str,
    contested: str | None,
    binding: bool,
    is_open: bool,
) -> _Unit:
    """``_unit`` of one event, remembered per process: a pure function of its arguments
    (a unit is never changed once built), and an incremental run meets every older
    event again (on LoCoMo's turns building them was half the generator's time)."""
    return _unit((event,), items, text, contested, binding, is_open)


caches.register(_single_unit.cache_clear)


def _unit(
    events: Sequence[Event],
    items: Sequence[Item],
    text: str,
    contested: str | None,
    binding: bool,
    is_open: bool,
) -> _Unit:
    newest = max(events, key=lambda e: (at_instant(e.at or e.recorded_at) is not None, e.seq))
    first = events[0]
    reasons = binding_reasons(first, items, open_items={first.id} if is_open else ())
    kind = first.kind or (shown_kind(reasons) if binding else None) or "observation"
    claims = tuple(dict.fromkeys(item.key for item in items))
    sources = tuple(e.id for e in events)
    at = newest.at or newest.recorded_at or None
    parts = event_parts(text) if len(events) == 1 else [text]
    numbered = len(parts) > 1
    statements = tuple(
        Statement(
            part_text,
            sources,
            claims,
            at,
            first.project,
            contested,
            kind,
            first.speaker,
            (n, len(parts)) if numbered else None,
        )
        for n, part_text in enumerate(parts, start=1)
    )
    # an explicit kind first, then the newest: recent events share their days, so
    # the summary's day lines stay few (a day line costs as much as a short event)
    explicit = int(any(e.kind in HOT_KINDS for e in events))
    value = (explicit, max(e.seq for e in events), int(bool(items)))
    return _Unit(statements, binding, value)


@functools.lru_cache(maxsize=ITEM_CACHE_SIZE)
def _small_talk(text: str) -> bool:
    """Greetings and fillers only, no digit (remembered per text: asked of every event)."""
    words = _WORDS.findall(text.casefold().replace("’", "'"))
    return all(word in _SMALL_TALK for word in words) and not any(ch.isdigit() for ch in text)


caches.register(_small_talk.cache_clear)


# ---------------------------------------------------------------------------
# the token budget


def _fit(units: list[_Unit], budget: int, tokenizer: Tokenizer) -> list[_Unit]:
    """Binding units always; then the others by value while the rendered summary fits.

    Each unit is costed by its lines plus the header and the date line it opens
    (render.py); the rendered total is then recounted exactly and the least
    valuable units dropped until it fits, so the budget is kept on the text a
    reader sees.
    """
    binding = [u for u in units if u.binding]
    rest = sorted((u for u in units if not u.binding), key=lambda u: u.value, reverse=True)
    chosen = list(binding)
    used = tokenizer.count(render_summary([s for u in chosen for s in u.statements]))
    if used > budget:
        return _in_order(units, chosen)  # over budget: the binding events alone
    opened: set[tuple[object, ...]] = set()
    for unit in chosen:
        _cost(unit, opened, tokenizer)
    for unit in rest:
        trial = set(opened)
        cost = _cost(unit, trial, tokenizer)
        if used + cost <= budget:
            chosen.append(unit)
            used += cost
            opened = trial
    while True:
        shown = _in_order(units, chosen)
        total = tokenizer.count(render_summary([s for u in shown for s in u.statements]))
        if total <= budget or len(chosen) == len(binding):
            return shown
        chosen.pop()  # the least valuable unit taken so far


def _cost(unit: _Unit, opened: set[tuple[object, ...]], tokenizer: Tokenizer) -> int:
    """Tokens the unit's lines add to the rendered summary; ``opened`` tracks headers shown."""
    cost = 0
    for statement in unit.statements:
        if statement.contested is not None:
            headers: list[tuple[tuple[object, ...], str]] = [(("contested",), CONTESTED_HEADER)]
            line = statement_line(statement)
        else:
            group = (statement.project, statement.kind)
            date = shown_date(statement.at)
            headers = [
                (("group", *group), group_header(statement.project, statement.kind)),
                (("date", *group, date), f"{date or 'undated'}:"),
            ]
            line = statement_line(statement, dated=False)
        for key, header in headers:
            if key not in opened:
                opened.add(key)
                cost += tokenizer.count(header) + 1
        cost += tokenizer.count(line) + 1
    return cost


def _in_order(units: list[_Unit], chosen: list[_Unit]) -> list[_Unit]:
    keep = {id(u) for u in chosen}
    return [u for u in units if id(u) in keep]
