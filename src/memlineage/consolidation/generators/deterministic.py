"""The built-in generator: compresses without rewording, never adjudicates.

- Claims: one per distinct must-preserve item (same key, canonical value and
  polarity from several events become one claim deriving from all of them);
  a claim's ``text`` is the clause the item came from, never a bare value.
  Anything grounded in a side of an unresolved conflict is a claim of kind
  ``conflict``, never a fact.
- Statements: the source sentences verbatim (original case and punctuation,
  whitespace normalised). Identical sentences that say the same items become
  one statement deriving from every event that said them. Two sentences about
  the same key with another value or polarity are both kept, with their dates;
  the rendering shows the newest first.
- Salience: a sentence carrying a must-preserve item, of an explicit kind
  (constraint, preference, decision, task, fact), of an open item or of a
  conflict side is hot. Greetings and content-free small talk are never
  statements (an event of nothing else goes to ``cold``). Over the token
  budget, the oldest low-value narrative moves to ``cold`` first; hot
  statements never give way (the manifest then says ``overBudget``).
- Incremental: given a fresh parent output, its statements and claims are
  taken as they are and only the events after its coverage are read.

The gate checks all of this independently; nothing here is trusted.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from memlineage.consolidation.gate import CONFLICT_KIND
from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.render import at_instant, render_lines, render_summary
from memlineage.meaning.extract import event_items, split_sentences
from memlineage.meaning.values import Canonical, canonical
from memlineage.model import Claim, Conflict, Event, Item, Output, Statement
from memlineage.tokens import Tokenizer, default_tokenizer

#: event kinds whose sentences are kept whatever the budget
HOT_KINDS = frozenset({"constraint", "preference", "decision", "task", "fact"})
#: item kinds that name the kind of the sentence they come from, strongest first
_CLAUSE_KIND_ORDER: tuple[str, ...] = ("constraint", "decision", "preference")

# Greetings and fillers: a sentence made only of these words says nothing worth
# a summary line. A short list written by hand: no library ships "small talk",
# and a sentence with any other word (or any extracted item) is kept.
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
    prompt_version = "deterministic-v2"
    model_snapshot = "builtin"

    def __init__(self, tokenizer: Tokenizer | None = None) -> None:
        self.tokenizer = tokenizer

    def generate(self, request: GenerationRequest) -> dict[str, Any]:
        unresolved = sorted((c for c in request.conflicts if not c.resolved), key=lambda c: c.id)
        parent = _usable_parent(request, unresolved)
        new_events = request.events
        builder = _Builder(unresolved, set(request.open_items), hot_events(request))
        if parent is not None:
            builder.seed(parent, {e.id for e in request.events})
            new_events = tuple(e for e in request.events if e.seq > request.parent_covers_through)
        by_source: dict[str, list[Item]] = {}
        for item in request.items:
            if item.kind == CONFLICT_KIND:
                builder.add_conflict_claim(item)
            else:
                by_source.setdefault(item.source, []).append(item)
        new_ids = {e.id for e in new_events}
        for event in request.events:
            if event.id in new_ids:
                builder.add_event(event, by_source.get(event.id, []))
        statements = builder.statements()
        if request.budget is not None:
            tokenizer = self.tokenizer or default_tokenizer()
            statements = _fit(statements, builder.hot, request.budget, tokenizer)
        claims = builder.claims()
        cited = {s for st in statements for s in st.derived_from}
        cited.update(s for c in claims for s in c.derived_from)
        return {
            "claims": [c.to_json() for c in claims],
            "openItems": list(request.open_items),
            "unresolvedConflicts": [c.id for c in unresolved],
            "cold": [e.id for e in request.events if e.id not in cited],
            "statements": [s.to_json() for s in statements],
        }


def hot_events(request: GenerationRequest) -> set[str]:
    """Events kept whole whatever the budget: with a must-preserve item, an open item,
    a side of an unresolved conflict, or of an explicit kind (constraint, preference,
    decision, task, fact). A sentence next to a value stays next to it ("I'm vegan.
    I walk about 8,000 steps a day.")."""
    hot = {item.source for item in request.items}
    hot.update(request.open_items)
    for conflict in request.conflicts:
        if not conflict.resolved:
            hot.update((conflict.a, conflict.b))
    hot.update(e.id for e in request.events if e.kind in HOT_KINDS)
    return hot


def _usable_parent(request: GenerationRequest, unresolved: Sequence[Conflict]) -> Output | None:
    """The parent output, when it was made over the same unresolved conflicts."""
    parent = request.parent
    if parent is None or request.parent_covers_through <= 0:
        return None
    if sorted(parent.unresolved_conflicts) != [c.id for c in unresolved]:
        return None  # conflicts moved: the sides' statements must be rebuilt
    return parent


# ---------------------------------------------------------------------------
# claims and statements under construction


@dataclass
class _ClaimDraft:
    key: str
    value: Any
    unit: str | None
    polarity: bool
    kind: str
    sources: dict[str, None]
    text: str


@dataclass
class _StatementDraft:
    text: str
    sources: dict[str, None]
    claims: dict[str, None]
    at: str | None
    instant: datetime | None
    project: str | None
    contested: str | None
    kind: str | None
    hot: bool


@dataclass
class _Builder:
    unresolved: Sequence[Conflict]
    open_ids: set[str]
    # events whose every sentence is kept whatever the budget (see hot_events)
    hot_events: set[str]
    side_of: dict[str, str] = field(default_factory=dict)
    conflict_sides: dict[str, tuple[str, str]] = field(default_factory=dict)
    claim_drafts: dict[Identity, _ClaimDraft] = field(default_factory=dict)
    drafts: dict[tuple[str, str | None, str | None, frozenset[Identity]], _StatementDraft] = field(
        default_factory=dict
    )
    hot: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        for conflict in self.unresolved:  # sorted by id: an event's first conflict marks it
            self.side_of.setdefault(conflict.a, conflict.id)
            self.side_of.setdefault(conflict.b, conflict.id)
            self.conflict_sides[conflict.id] = (conflict.a, conflict.b)

    # -- the parent's output, taken as it is --

    def seed(self, parent: Output, selected: set[str]) -> None:
        identities: dict[tuple[str, str], set[Identity]] = {}
        for claim in parent.claims:
            sources = [s for s in claim.derived_from if s in selected]
            if not sources:
                continue
            identity = (claim.key, canonical(claim.value, claim.unit), claim.polarity)
            draft = self._claim(
                identity, claim.key, claim.value, claim.unit, claim.polarity, claim.kind, claim.text
            )
            draft.sources.update(dict.fromkeys(sources))
            for source in sources:
                identities.setdefault((source, claim.key), set()).add(identity)
        for statement in parent.statements:
            sources = [s for s in statement.derived_from if s in selected]
            if not sources:
                continue
            signature = frozenset(
                i for key in statement.claims for i in identities.get((sources[0], key), ())
            )
            hot = any(s in self.hot_events for s in sources)
            self._state(
                statement.text,
                sources,
                statement.claims,
                statement.at,
                statement.project,
                statement.contested,
                statement.kind,
                signature,
                hot,
            )

    # -- claims --

    def _claim(
        self,
        identity: Identity,
        key: str,
        value: Any,
        unit: str | None,
        polarity: bool,
        kind: str,
        text: str,
    ) -> _ClaimDraft:
        draft = self.claim_drafts.get(identity)
        if draft is None:
            draft = _ClaimDraft(key, value, unit, polarity, kind, {}, text)
            self.claim_drafts[identity] = draft
        return draft

    def add_conflict_claim(self, item: Item) -> None:
        sides = self.conflict_sides.get(str(item.value), (item.source,))
        identity = (item.key, canonical(item.value, item.unit), item.polarity)
        text = f"unresolved conflict {item.value} between {' and '.join(sides)}"
        draft = self._claim(
            identity, item.key, item.value, item.unit, item.polarity, CONFLICT_KIND, text
        )
        draft.sources.update(dict.fromkeys(sides))

    def _add_item(self, item: Item, clause: str) -> Identity:
        identity = (item.key, canonical(item.value, item.unit), item.polarity)
        contested = item.source in self.side_of
        kind = CONFLICT_KIND if contested else item.kind
        draft = self._claim(identity, item.key, item.value, item.unit, item.polarity, kind, clause)
        if contested:
            draft.kind = CONFLICT_KIND
        draft.sources[item.source] = None
        return identity

    def claims(self) -> list[Claim]:
        return [
            Claim(d.key, d.value, d.unit, d.polarity, d.kind, tuple(d.sources), d.text)
            for d in self.claim_drafts.values()
        ]

    # -- statements --

    def add_event(self, event: Event, items: Sequence[Item]) -> None:
        sentences = [" ".join(s.split()) for s in split_sentences(event.text)]
        if not sentences:
            for item in items:  # no text: the claims alone carry the event's facts
                self._add_item(item, item.clause or _bare(item))
            return
        placed = _place(event, items, sentences)
        contested = self.side_of.get(event.id)
        keep_whatever = event.id in self.open_ids or contested is not None
        # one kind per event, so its sentences are rendered together, in their order
        kind = event.kind or _event_kind(items, event.id in self.open_ids)
        hot = event.id in self.hot_events
        for index, sentence in enumerate(sentences):
            own = placed[index]
            identities = [self._add_item(item, item.clause or sentence) for item in own]
            if not own and not keep_whatever and _small_talk(sentence):
                continue  # a greeting: never a statement
            keys = dict.fromkeys(item.key for item in own)
            self._state(
                sentence,
                [event.id],
                keys,
                event.at or event.recorded_at or None,
                event.project,
                contested,
                kind,
                frozenset(identities),
                hot,
            )

    def _state(
        self,
        text: str,
        sources: Iterable[str],
        claims: Iterable[str],
        at: str | None,
        project: str | None,
        contested: str | None,
        kind: str | None,
        signature: frozenset[Identity],
        hot: bool,
    ) -> None:
        merge_key = (text, project, contested, signature)
        instant = at_instant(at)
        draft = self.drafts.get(merge_key)
        if draft is None:
            draft = _StatementDraft(text, {}, {}, at, instant, project, contested, kind, hot)
            self.drafts[merge_key] = draft
        elif instant is not None and (draft.instant is None or instant > draft.instant):
            draft.at, draft.instant = at, instant
        draft.sources.update(dict.fromkeys(sources))
        draft.claims.update(dict.fromkeys(claims))
        draft.hot = draft.hot or hot

    def statements(self) -> list[Statement]:
        self.hot = {n for n, d in enumerate(self.drafts.values()) if d.hot}
        return [
            Statement(
                d.text, tuple(d.sources), tuple(d.claims), d.at, d.project, d.contested, d.kind
            )
            for d in self.drafts.values()
        ]


def _bare(item: Item) -> str:
    unit = f" {item.unit}" if item.unit else ""
    return f"{item.key.rsplit('/', 1)[-1]}: {item.value}{unit}"


def _place(event: Event, items: Sequence[Item], sentences: Sequence[str]) -> list[list[Item]]:
    """The items each sentence carries: by the item's clause, else by sentence-wise extraction.

    An item found in no single sentence (an explicit fact, or a whole-text
    constraint) belongs to every sentence of its event.
    """
    placed: list[list[Item]] = [[] for _ in sentences]
    unplaced: list[Item] = []
    for item in items:
        index = _sentence_of_clause(item.clause, sentences) if item.clause else None
        if index is None:
            unplaced.append(item)
        else:
            placed[index].append(item)
    if not unplaced:
        return placed
    where: dict[Identity, int] = {}
    if len(sentences) > 1:
        for index, sentence in enumerate(sentences):
            probe = dataclasses.replace(event, text=sentence, facts=(), kind=None)
            for found in event_items(probe):
                identity = (found.key, canonical(found.value, found.unit), found.polarity)
                where.setdefault(identity, index)
    for item in unplaced:
        identity = (item.key, canonical(item.value, item.unit), item.polarity)
        if len(sentences) == 1:
            placed[0].append(item)
        elif identity in where:
            placed[where[identity]].append(item)
        else:
            for own in placed:
                own.append(item)
    return placed


def _sentence_of_clause(clause: str, sentences: Sequence[str]) -> int | None:
    needle = " ".join(clause.split())
    for index, sentence in enumerate(sentences):
        if needle and needle in sentence:
            return index
    return None


def _event_kind(items: Sequence[Item], open_item: bool) -> str:
    kinds = {item.kind for item in items}
    for kind in _CLAUSE_KIND_ORDER:
        if kind in kinds:
            return kind
    if open_item:
        return "task"
    return "fact" if items else "observation"


def _small_talk(sentence: str) -> bool:
    words = _WORDS.findall(sentence.casefold().replace("’", "'"))
    return all(word in _SMALL_TALK for word in words) and not any(ch.isdigit() for ch in sentence)


# ---------------------------------------------------------------------------
# the token budget


def _fit(
    statements: list[Statement], hot: set[int], budget: int, tokenizer: Tokenizer
) -> list[Statement]:
    """Move the oldest low-value narrative to cold until the rendered summary fits.

    Each statement's line is counted once; the total is recounted exactly
    after each round of removals, so the work stays linear in practice.
    """
    total = tokenizer.count(render_summary(statements))
    if total <= budget:
        return statements
    line_tokens = {
        line.statement: tokenizer.count(line.text) + 1
        for line in render_lines(statements)
        if line.statement is not None
    }
    narrative = sorted(
        (n for n in range(len(statements)) if n not in hot),
        key=lambda n: (
            at_instant(statements[n].at) is not None,
            at_instant(statements[n].at) or datetime.min.replace(tzinfo=UTC),
            n,
        ),
    )
    dropped: set[int] = set()
    position = 0
    for _ in range(8):
        estimate = total
        while estimate > budget and position < len(narrative):
            index = narrative[position]
            dropped.add(index)
            estimate -= line_tokens[index]
            position += 1
        kept = [s for n, s in enumerate(statements) if n not in dropped]
        total = tokenizer.count(render_summary(kept))
        if total <= budget or position == len(narrative):
            return kept
    dropped.update(narrative)
    return [s for n, s in enumerate(statements) if n not in dropped]
