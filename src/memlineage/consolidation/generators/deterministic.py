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
  the rest by value (an explicit kind, then a durable fact over chatter,
  meaning/durable.py, then the newest) while the rendered
  summary fits the token budget. Everything else
  moves to ``cold`` whole: past the budget, greetings and small talk, events
  without text. When the binding events alone exceed the budget the summary
  is published over it (the manifest and the rendered text say so).

The gate checks all of this independently; nothing here is trusted.

Per process, the last build of each subject is kept (``_Built``): the next run
over the same events plus new ones builds only what the new ones touch, and
gives the output a whole build gives (docs/benchmarks.md, "A worker's next run
reads and builds the tail").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain, compress, filterfalse
from operator import attrgetter
from typing import Any

from memlineage.consolidation.gate import CONFLICT_KIND
from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.parts import as_parts, binding_parts
from memlineage.consolidation.render import (
    CONTESTED_HEADER,
    at_instant,
    exceeds_budget,
    group_header,
    render_summary,
    shown_date,
    statement_line,
)
from memlineage.meaning import caches
from memlineage.meaning.binding import binding_reasons, is_binding, shown_kind
from memlineage.meaning.durable import is_durable
from memlineage.meaning.extract import ITEM_CACHE_SIZE, conflict_items_start
from memlineage.meaning.updates import UpdateIndex
from memlineage.meaning.values import Canonical, canonical
from memlineage.model import Claim, Conflict, Event, Item, Output, Statement
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


_ID = attrgetter("id")
_DERIVED_FROM = attrgetter("derived_from")
_STATEMENTS = attrgetter("statements")


class DeterministicGenerator:
    """Fills the :class:`~.base.Generator` protocol without a model."""

    name = "deterministic"
    prompt_version = "deterministic-v3"
    model_snapshot = "builtin"

    def __init__(self, tokenizer: Tokenizer | None = None) -> None:
        self.tokenizer = tokenizer

    def generate(self, request: GenerationRequest) -> dict[str, Any]:
        return self.output(request).to_json()

    def output(self, request: GenerationRequest) -> Output:
        """``generate``'s output as typed objects: what parsing its JSON gives (a test
        holds it), without the round trip (consolidation gates it as it is)."""
        views = _conflict_views(request.conflicts)
        sides, side_of = views.sides, views.side_of
        built = _built_for(request, views)
        conflict_items = request.items[len(built.items) :]
        claims = built.claims_with(conflict_items, sides, side_of)
        partners = built.partners(side_of)
        units, partners = _lift(built.units(), partners, built.updates.linked)
        if request.budget is not None:
            tokenizer = self.tokenizer or default_tokenizer()
            units = _fit(units, request.budget, tokenizer, partners)
        statements = tuple(chain.from_iterable(map(_STATEMENTS, units)))
        stated = set(chain.from_iterable(map(_DERIVED_FROM, statements)))
        _builds.keep(request.subject, built)
        # C-level passes: a subject of 100,000 events lists every id here each run
        cold: Iterable[str] = filterfalse(stated.__contains__, map(_ID, request.events))
        partly = _partly_shown(units)
        if partly:  # a document shown by its binding parts: the rest is cold, for a query
            cold = chain(cold, (e.id for e in request.events if e.id in partly))
        return Output(
            claims=tuple(claims),
            open_items=tuple(request.open_items),
            unresolved_conflicts=views.ids,
            cold=tuple(cold),
            statements=statements,
        )


# ---------------------------------------------------------------------------
# what a build leaves: drafts and units, extended by the next run's tail


@dataclass
class _ClaimDraft:
    key: str
    value: Any
    unit: str | None
    polarity: bool
    kind: str
    sources: dict[str, None]
    text: str

    def adding(self, kind: str, sources: Sequence[str]) -> None:
        if kind == CONFLICT_KIND:
            self.kind = CONFLICT_KIND
        self.sources.update(dict.fromkeys(sources))

    def copy(self) -> _ClaimDraft:
        return replace(self, sources=dict(self.sources))

    def built(self) -> Claim:
        return Claim(
            self.key, self.value, self.unit, self.polarity, self.kind,
            tuple(self.sources), self.text,
        )  # fmt: skip


@dataclass
class _ConflictClaims:
    """What the unresolved conflicts' items add to a build's claims: claims of their
    own, and the build's claims they add sources to (by position). Conflicts found
    since are appended (their items come after the others'): only theirs are added."""

    items: list[Item] = field(default_factory=list)
    own: dict[Identity, Claim] = field(default_factory=dict)  # in draft order
    grown: dict[int, Claim] = field(default_factory=dict)
    # the drafts of the grown claims (few); an own claim's draft is made again from it:
    # a subject may hold tens of thousands, and every object kept costs every step
    grown_drafts: dict[Identity, _ClaimDraft] = field(default_factory=dict)


GroupKey = tuple[str, str | None, str | None, str | None]  # text, speaker, project, conflict


@dataclass
class _Built:
    """What a build over a selection leaves, in the order a whole build makes it.

    A run over the same selection plus a tail (the same unresolved conflicts
    on the old events, and the same open marks: what a quiet tail leaves, or
    one whose conflicts are among its own events) extends it by the tail
    alone: the tail's items join their claims, its events their groups, and
    only the groups it touched get their unit built again. A
    whole build is the extension of an empty one, so both make the same
    output (tests/test_generator_delta.py holds it on random tails).
    """

    events: list[Event] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)
    items: list[Item] = field(default_factory=list)  # the conflicts' own items aside
    unresolved: frozenset[tuple[str, str, str]] = frozenset()
    open_ids: set[str] = field(default_factory=set)  # open marks among ``ids``
    by_source: dict[str, list[Item]] = field(default_factory=dict)
    drafts: dict[Identity, _ClaimDraft] = field(default_factory=dict)
    claims: list[Claim] = field(default_factory=list)  # the drafts', in their order
    position: dict[Identity, int] = field(default_factory=dict)
    conflict_claims: _ConflictClaims | None = None  # the last run's, while still right
    groups: dict[GroupKey, list[Event]] = field(default_factory=dict)
    slots: list[_Unit | None] = field(default_factory=list)  # one per group, in order
    slot_of: dict[GroupKey, int] = field(default_factory=dict)
    updates: UpdateIndex = field(default_factory=UpdateIndex)  # extended by each tail

    def tail_of(
        self, request: GenerationRequest, unresolved: frozenset[tuple[str, str, str]]
    ) -> tuple[Sequence[Event], Sequence[Item]] | None:
        """The events and items ``request`` adds to this build; None: build it whole."""
        known, read = len(self.events), len(self.items)
        if known > len(request.events) or read > len(request.items):
            return None
        if not _marks_only_new(self.unresolved, unresolved, self.ids):
            return None  # a contested mark moved: any group may have
        if list(request.events[:known]) != self.events:
            return None  # every field: an event's hash is only as good as its maker
        if list(request.items[:read]) != self.items:
            return None
        if {i for i in request.open_items if i in self.ids} != self.open_ids:
            return None  # an old task closed (or opened): its group's binding may differ
        end = conflict_items_start(request.items, request.conflicts, read)
        items = request.items[read:end]
        if any(item.kind != CONFLICT_KIND and item.source in self.ids for item in items):
            return None  # a new item of an old event: not the shape extraction gives
        return request.events[known:], items

    def extend(
        self,
        events: Sequence[Event],
        items: Sequence[Item],
        request: GenerationRequest,
        sides: dict[str, tuple[str, str]],
        side_of: dict[str, str],
    ) -> None:
        """Add ``events`` and their ``items`` (the conflicts' items excepted)."""
        touched: dict[Identity, None] = {}
        for item in items:
            touched[self._add_item(item, sides, side_of)] = None
            if item.kind != CONFLICT_KIND:
                self.by_source.setdefault(item.source, []).append(item)
        self.items.extend(items)
        self._rebuild_claims(touched)
        grown: dict[GroupKey, None] = {}
        for event in events:
            text = " ".join(event.text.split())
            if not text:
                continue  # no text: its claims carry its facts; it is listed cold
            key = (text, event.speaker, event.project, side_of.get(event.id))
            members = self.groups.get(key)
            if members is None:
                self.groups[key] = members = []
                self.slot_of[key] = len(self.slots)
                self.slots.append(None)
            members.append(event)
            grown[key] = None
        open_ids = set(request.open_items)
        for key in grown:
            self.slots[self.slot_of[key]] = _group_unit(
                key, self.groups[key], self.by_source, open_ids, side_of
            )
        self.events.extend(events)
        self.updates.extend(events)
        self.ids.update(e.id for e in events)
        self.open_ids = {i for i in request.open_items if i in self.ids}

    def _add_item(
        self,
        item: Item,
        sides: dict[str, tuple[str, str]],
        side_of: dict[str, str],
    ) -> Identity:
        identity, kind, sources, text = _claim_of(item, sides, side_of)
        draft = self.drafts.get(identity)
        if draft is None:
            draft = _ClaimDraft(item.key, item.value, item.unit, item.polarity, kind, {}, text)
            self.drafts[identity] = draft
        draft.adding(kind, sources)
        return identity

    def _rebuild_claims(self, touched: dict[Identity, None]) -> None:
        """The claims of the drafts ``touched`` (new ones at the end, in draft order)."""
        added = self.conflict_claims or _ConflictClaims()
        for identity in touched:
            claim = self.drafts[identity].built()
            at = self.position.get(identity)
            if at is None:
                self.position[identity] = len(self.claims)
                self.claims.append(claim)
                if identity in added.own:
                    self.conflict_claims = None  # now an event's claim the conflict grows
            else:
                self.claims[at] = claim
                if at in added.grown:
                    self.conflict_claims = None  # its copy with the conflict's sources is old

    def claims_with(
        self,
        conflict_items: Sequence[Item],
        sides: dict[str, tuple[str, str]],
        side_of: dict[str, str],
    ) -> list[Claim]:
        """One claim per distinct (key, canonical value, polarity), deriving from every
        source: this build's, then what the conflicts' items add (kept apart: they come
        after every event's items, and the next run may see other conflicts)."""
        added = self.conflict_claims
        known = len(added.items) if added is not None else 0
        if added is None or list(conflict_items[:known]) != added.items:
            added, known = _ConflictClaims(), 0
        self.conflict_claims = added
        self._add_conflict_items(added, conflict_items[known:], sides, side_of)
        claims = list(self.claims)
        for at, claim in added.grown.items():
            claims[at] = claim
        claims.extend(added.own.values())
        return claims

    def _add_conflict_items(
        self,
        added: _ConflictClaims,
        conflict_items: Sequence[Item],
        sides: dict[str, tuple[str, str]],
        side_of: dict[str, str],
    ) -> None:
        drafts: dict[Identity, _ClaimDraft] = {}  # those the items touch
        for item in conflict_items:
            identity, kind, sources, text = _claim_of(item, sides, side_of)
            draft = drafts.get(identity)
            if draft is None:
                draft = drafts[identity] = self._conflict_draft(added, identity, item, kind, text)
            draft.adding(kind, sources)
        added.items.extend(conflict_items)
        for identity, draft in drafts.items():
            at = self.position.get(identity)
            if at is None:
                added.own[identity] = draft.built()
            else:
                added.grown[at] = draft.built()
                added.grown_drafts[identity] = draft

    def _conflict_draft(
        self, added: _ConflictClaims, identity: Identity, item: Item, kind: str, text: str
    ) -> _ClaimDraft:
        """The draft a conflict's item adds to: the one it added to before, else a copy
        of the events' (the build's own draft stays as the events left it), else new."""
        own = added.own.get(identity)
        if own is not None:
            return _ClaimDraft(
                own.key, own.value, own.unit, own.polarity, own.kind,
                dict.fromkeys(own.derived_from), own.text,
            )  # fmt: skip
        draft = added.grown_drafts.get(identity) or self.drafts.get(identity)
        if draft is not None:
            return draft.copy()
        return _ClaimDraft(item.key, item.value, item.unit, item.polarity, kind, {}, text)

    def partners(self, side_of: dict[str, str]) -> dict[int, list[_Unit]]:
        """Per unit (by identity), the units of the events that update its events: found
        from the links alone (a few), not from every unit."""
        partners: dict[int, list[_Unit]] = {}
        linked = self.updates.linked
        for older, update in self.updates.updates().items():
            old = self._unit_of(linked[older], side_of)
            new = self._unit_of(linked[update.newer], side_of)
            if old is not None and new is not None and old is not new:
                partners.setdefault(id(old), []).append(new)
        return partners

    def _unit_of(self, event: Event, side_of: dict[str, str]) -> _Unit | None:
        key = (" ".join(event.text.split()), event.speaker, event.project, side_of.get(event.id))
        slot = self.slot_of.get(key)
        return self.slots[slot] if slot is not None else None

    def units(self) -> list[_Unit]:
        """One unit per group with something to show, in the order of its first event."""
        units = []
        for unit in self.slots:
            if unit is not None:
                units.append(unit)
                if unit.more is not None:
                    units.append(unit.more)
        return units


def _marks_only_new(
    before: frozenset[tuple[str, str, str]],
    now: frozenset[tuple[str, str, str]],
    old_ids: set[str],
) -> bool:
    """Whether the conflicts ``now`` mark the old events as ``before`` did: every earlier
    conflict still stands, and each new one has both sides among the new events."""
    return before <= now and all(a not in old_ids and b not in old_ids for _, a, b in now - before)


def _claim_of(
    item: Item, sides: dict[str, tuple[str, str]], side_of: dict[str, str]
) -> tuple[Identity, str, tuple[str, ...], str]:
    """The claim ``item`` joins (its identity), the kind and sources it adds, its text."""
    identity = (item.key, canonical(item.value, item.unit), item.polarity)
    if item.kind == CONFLICT_KIND:
        sources = sides.get(str(item.value), (item.source,))
        text = f"unresolved conflict {item.value} between {' and '.join(sources)}"
        return identity, CONFLICT_KIND, sources, text
    kind = CONFLICT_KIND if item.source in side_of else item.kind
    return identity, kind, (item.source,), item.clause or _bare(item)


def _bare(item: Item) -> str:
    unit = f" {item.unit}" if item.unit else ""
    return f"{item.key.rsplit('/', 1)[-1]}: {item.value}{unit}"


# One build per subject, the last one, kept per process (bounded by the events
# it read in all, like the gate's judged bases): a worker's next run of the
# subject extends it by the tail instead of reading every event again.
BUILT_EVENTS = 1 << 18
_builds: caches.LastPerKey[str, _Built] = caches.LastPerKey(
    lambda built: len(built.events), BUILT_EVENTS
)
forget_builds = _builds.clear  # what a new process starts with: every run builds whole


@dataclass(frozen=True)
class _ConflictViews:
    """What the generator reads of the unresolved conflicts."""

    ids: tuple[str, ...]  # of the unresolved, sorted
    sides: dict[str, tuple[str, str]]  # conflict id -> its sides
    side_of: dict[str, str]  # event id -> its first conflict by id
    identities: frozenset[tuple[str, str, str]]


def _views_of(conflicts: Sequence[Conflict]) -> _ConflictViews:
    unresolved = sorted((c for c in conflicts if not c.resolved), key=lambda c: c.id)
    side_of: dict[str, str] = {}
    for conflict in unresolved:  # sorted by id: an event's first conflict marks it
        side_of.setdefault(conflict.a, conflict.id)
        side_of.setdefault(conflict.b, conflict.id)
    sides = {c.id: (c.a, c.b) for c in unresolved}
    identities = frozenset((c.id, c.a, c.b) for c in unresolved)
    return _ConflictViews(tuple(c.id for c in unresolved), sides, side_of, identities)


def _views_extended(known: _ConflictViews, more: Sequence[Conflict]) -> _ConflictViews:
    """``_views_of`` the conflicts ``known`` was made of and ``more``."""
    added = _views_of(more)
    side_of = dict(known.side_of)
    for event_id, conflict_id in added.side_of.items():
        if event_id not in side_of or conflict_id < side_of[event_id]:
            side_of[event_id] = conflict_id  # an event's first conflict by id marks it
    return _ConflictViews(
        tuple(sorted(known.ids + added.ids)),
        {**known.sides, **added.sides},
        side_of,
        known.identities | added.identities,
    )


#: found by identity: after a quiet tail a run is handed the last run's very conflicts,
#: after conflicts among the tail the same ones and the tail's
_conflict_views = caches.ByIdentity(_views_of, _views_extended)


def _built_for(request: GenerationRequest, views: _ConflictViews) -> _Built:
    """The subject's last build extended by this request's tail, or a whole build."""
    identities, sides, side_of = views.identities, views.sides, views.side_of
    built = _builds.take(request.subject)
    tail = built.tail_of(request, identities) if built is not None else None
    if built is None or tail is None:
        built = _Built(unresolved=identities)
        end = conflict_items_start(request.items, request.conflicts)
        tail = request.events, request.items[:end]
    built.extend(*tail, request, sides, side_of)
    built.unresolved = identities
    return built


# ---------------------------------------------------------------------------
# statements: one unit per event (or per group of identical events)


#: a unit's value: an explicit kind, a durable fact, its newest seq, whether it has items
_Value = tuple[int, int, int, int]


@dataclass(frozen=True, eq=False)
class _Unit:
    """What moves hot or cold as one: an event's statement(s), or a group of identical events."""

    statements: tuple[Statement, ...]
    binding: bool
    value: _Value  # higher is kept first
    # a long binding document's parts that do not bind: ranked as any other unit
    more: _Unit | None = None


def _group_unit(
    key: GroupKey,
    events: Sequence[Event],
    by_source: dict[str, list[Item]],
    open_ids: set[str],
    side_of: dict[str, str],
) -> _Unit | None:
    """The unit of a group of identical events; None: small talk, the events go cold."""
    text, _, _, contested = key
    items = [item for e in events for item in by_source.get(e.id, ())]
    binding = any(
        is_binding(e, by_source.get(e.id, ()), open_items=open_ids, conflict_sides=side_of)
        for e in events
    )
    if not binding and not items and _small_talk(text):
        return None  # a greeting: never a statement, the event goes cold
    is_open = _any_open(events, open_ids)
    if len(events) == 1:  # nearly every event: the same unit as last run's
        return _single_unit(events[0], tuple(items), text, contested, binding, is_open)
    return _unit(events, items, text, contested, binding, is_open)


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
    parts = as_parts(first.text)  # its words as ``text``'s, a code block's layout kept
    if len(events) > 1:
        parts = parts if len(parts) == 1 else [text]
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
    # an explicit kind first, then a durable fact over chatter (meaning/durable.py),
    # then the newest: recent events share their days, so the summary's day lines
    # stay few (a day line costs as much as a short event)
    explicit = int(any(e.kind in HOT_KINDS for e in events))
    durable = int(is_durable(text, items))
    value = (explicit, durable, max(e.seq for e in events), int(bool(items)))
    if binding and numbered and not is_open and contested is None:
        return _by_binding_parts(first, parts, statements, value)
    return _Unit(statements, binding, value)


def _by_binding_parts(
    event: Event, parts: list[str], statements: tuple[Statement, ...], value: _Value
) -> _Unit:
    """A long document binds by its rule-like parts (consolidation/parts.py): those are
    the binding unit; the others follow as a unit of their own, shown as observations
    when the budget has room (the event is then in ``cold`` too, for a query)."""
    binds = binding_parts(event, parts)
    if len(binds) == len(parts):
        return _Unit(statements, True, value)
    rest = tuple(replace(s, kind="observation") for n, s in enumerate(statements) if n not in binds)
    bound = tuple(s for n, s in enumerate(statements) if n in binds)
    return _Unit(bound, True, value, _Unit(rest, False, value))


@functools.lru_cache(maxsize=ITEM_CACHE_SIZE)
def _small_talk(text: str) -> bool:
    """Greetings and fillers only, no digit (remembered per text: asked of every event)."""
    words = _WORDS.findall(text.casefold().replace("’", "'"))
    return all(word in _SMALL_TALK for word in words) and not any(ch.isdigit() for ch in text)


caches.register(_small_talk.cache_clear)


def _partly_shown(units: Sequence[_Unit]) -> set[str]:
    """The documents shown by their binding parts alone: their other parts not taken."""
    taken = set(map(id, units))
    return {
        unit.statements[0].derived_from[0]
        for unit in units
        if unit.more is not None and id(unit.more) not in taken
    }


def _lift(
    units: list[_Unit], partners: dict[int, list[_Unit]], events: dict[str, Event]
) -> tuple[list[_Unit], dict[int, list[_Unit]]]:
    """Binding judged over the history: a rule or taste a later event updates binds no
    more ("Never email me after 9 pm." then "You can email me any time now"). Its
    update binds in its place, and the older unit, shown under no binding kind, comes
    only with it (``partners``). A side of an unresolved conflict stays as it is."""
    lifted = {
        id(u) for u in units
        if u.binding and id(u) in partners and all(s.contested is None for s in u.statements)
    }  # fmt: skip
    if not lifted:
        return units, partners
    newer = {id(p) for key in lifted for p in partners[key]}
    swapped: dict[int, _Unit] = {}
    for unit in units:
        if id(unit) in lifted:
            statements = tuple(replace(s, kind=_unbound_kind(s, events)) for s in unit.statements)
            swapped[id(unit)] = replace(unit, statements=statements, binding=False)
        elif id(unit) in newer and not unit.binding:
            swapped[id(unit)] = replace(unit, binding=True)
    moved = {key: [swapped.get(id(p), p) for p in found] for key, found in partners.items()}
    for old, new in swapped.items():
        if old in moved:
            moved[id(new)] = moved.pop(old)
    return [swapped.get(id(u), u) for u in units], moved


def _unbound_kind(statement: Statement, events: dict[str, Event]) -> str | None:
    """The kind a lifted rule is shown under: its event's own, as a plain observation."""
    first = events.get(statement.derived_from[0])
    if first is None or first.kind is not None:
        return None  # declared a constraint, now updated: shown under no binding kind
    return "observation"


# ---------------------------------------------------------------------------
# the token budget


def _fit(
    units: list[_Unit], budget: int, tokenizer: Tokenizer, partners: dict[int, list[_Unit]]
) -> list[_Unit]:
    """Binding units always; then the others by value while the rendered summary fits.

    A unit whose event a later one updates (meaning/updates.py) is taken with that
    update or not at all: the reader never sees an old value alone as current.
    Each unit is costed by its lines plus the header and the date line it opens
    (render.py); the rendered total is then recounted exactly and the least
    valuable units dropped until it fits, so the budget is kept on the text a
    reader sees.
    """
    binding = [u for u in units if u.binding]
    pulled = [p for u in binding for p in partners.get(id(u), ())]  # a binding rule's update
    binding = list({id(u): u for u in (*binding, *pulled)}.values())  # each unit once
    groups: list[list[_Unit]] = [[u] for u in binding]
    taken = {id(u) for u in binding}
    rest = sorted((u for u in units if not u.binding), key=lambda u: u.value, reverse=True)
    statements = [s for u in binding for s in u.statements]
    if exceeds_budget(statements, budget, tokenizer):
        return _in_order(units, binding)  # over budget: the binding events alone
    used = tokenizer.count(render_summary(statements))
    opened: set[tuple[object, ...]] = set()
    for unit in binding:
        _cost(unit, opened, tokenizer)
    fixed = len(groups)
    for unit in rest:
        if id(unit) in taken:
            continue
        group = [unit, *(p for p in partners.get(id(unit), ()) if id(p) not in taken)]
        trial = set(opened)
        cost = sum(_cost(member, trial, tokenizer) for member in group)
        if used + cost <= budget:
            groups.append(group)
            taken.update(map(id, group))
            used += cost
            opened = trial
    while True:
        shown = _in_order(units, [u for group in groups for u in group])
        total = tokenizer.count(render_summary([s for u in shown for s in u.statements]))
        if total <= budget or len(groups) == fixed:
            return shown
        groups.pop()  # the least valuable unit taken so far, with its updates


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
    keep = set(map(id, chosen))
    return list(compress(units, map(keep.__contains__, map(id, units))))
