"""Recall (I4, I5): the published summary plus the raw tail when it is fresh, raw otherwise.

A summary is used only when the alias's epoch equals the clock's, the artifact
it points to is published (not stale, rejected, failed or a mere candidate),
and the subject is not bypassed. Anything else falls back to the valid raw
events with their unresolved conflicts.

With a query and/or a token budget (docs/recall.md), the same read also turns
what it found into passages: the summary's statements, the cold events that
match the query (found through the full-text index, then checked against the
raw layer's rules in this snapshot, so an invalid event never comes back) and
the tail, or in raw mode the valid events; context.py ranks and packs them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from memlineage.consolidation.alias import why_not_published, why_not_summary
from memlineage.consolidation.parts import as_parts, binding_parts, scope_of
from memlineage.consolidation.render import render_summary
from memlineage.meaning import binding, extract
from memlineage.meaning.binding import is_binding, may_bind
from memlineage.meaning.updates import could_change, find_updates, may_update, update_terms
from memlineage.model import Artifact, Claim, Conflict, Event, Output, Statement
from memlineage.raw.validity import Folded, TrustPolicy, judged
from memlineage.recall import kept
from memlineage.recall.context import (
    MAX_QUERY_TERMS,
    Layout,
    Packed,
    Passage,
    copied,
    dropped_ids,
    new_passage,
    pack,
    query_terms,
    rank,
    section_of,
    with_updates,
)
from memlineage.recall.fusion import Meaning, cosines_of, nearest, relevance
from memlineage.recall.prompt import cold_reserve, layout
from memlineage.recall.relevance import bm25, named
from memlineage.recall.results import LeftOut, Recall, RecallSet
from memlineage.store.protocol import HeadState, Reader, StoredKinds


def recall(
    reader: Reader,
    subject: str,
    policy: TrustPolicy,
    query: str | None = None,
    budget: int | None = None,
    meaning: Meaning | None = None,
) -> Recall:
    """Read one subject's memory inside one snapshot; rank and pack it when asked."""
    found, candidates = gather(
        reader, subject, policy, query, with_items=ranks(query, budget), meaning=meaning
    )
    return finish([(found, candidates)], query, budget).recalls[0]


def ranks(query: str | None, budget: int | None) -> bool:
    """Whether a recall ranks and packs (a query or a budget), so must-keep matters."""
    return bool(query_terms(query)) or budget is not None


def gather(
    reader: Reader,
    subject: str,
    policy: TrustPolicy,
    query: str | None = None,
    *,
    with_items: bool = False,
    meaning: Meaning | None = None,
) -> tuple[Recall, list[Passage]]:
    """One subject's recall and its candidate passages, all read in one snapshot.

    ``with_items`` reads the item kinds of raw events to find must-keep ones (an
    event without a kind may still state a constraint): as the detection job
    stored them, extracted only for events it has not checked yet. Only a recall
    that ranks needs them. A plain recall keeps everything in today's order, by
    event kind. ``meaning`` (the query's vector) adds the cold events nearest the
    query to those its words matched, and gives each candidate its similarity.
    """
    terms = query_terms(query)
    read = _read(reader, subject, policy, terms, with_items=with_items)
    if read is None:
        return Recall(subject, "raw", why_not_summary(None) or "", query=query), []
    if read.summary is not None:
        found, passages = _summary_recall(reader, subject, read, read.summary, query)
    else:
        found, passages = _raw_recall(subject, read, query)
    if terms and found.cold:
        # Passages are built from valid events only; the cold events the index
        # matches are read back and checked against the raw layer's rules in this
        # same snapshot, so a revoked, superseded, lost, quarantined or erased
        # event never comes back. finish() scores every candidate.
        matched = read.matching if read.matching is not None else reader.matching(subject, terms)
        passages += _cold_passages(reader, found, set(matched), read.folded, len(passages))
    if terms and meaning is not None:
        passages = _by_meaning(reader, found, passages, meaning, read.folded)
    return found, passages


@dataclass(frozen=True)
class _Read:
    """What a recall read of its subject, in its snapshot: the head's state and its
    operations folded, the summary when it may be used, the events after it (every
    event when it may not) with their stored kinds (None: not asked, or no event),
    and the query's full-text matches (None: not read yet)."""

    state: HeadState
    folded: Folded
    summary: kept.Published | None
    reason: str
    events: list[Event]
    kinds: StoredKinds | None
    matching: list[str] | None
    ranked: bool  # the recall ranks: it needs the events' kinds


def _read(
    reader: Reader, subject: str, policy: TrustPolicy, terms: list[str], *, with_items: bool
) -> _Read | None:
    """The subject as a recall reads it, in as few round trips as the last recall's
    guess allows (kept.py): the head, the events after the summary's coverage and the
    query's matches together, then only what the head says the guess missed."""
    last = kept.last_recall(reader, subject)
    guess = last.events_after if last is not None else None
    match_now = bool(terms) and (last is None or last.cold)
    first = reader.recall_read(
        subject, events_after=guess, kinds=with_items, terms=terms if match_now else ()
    )
    state = first.state
    if state is None:
        return None
    folded = kept.folded_operations(reader, subject, state, policy)
    reason = why_not_published(state.clock, state.alias, state.status)
    summary = None
    if reason is None:
        summary = kept.published(reader, subject, state.alias.artifact_id, _summary_text)
        if summary is None:
            reason = why_not_published(state.clock, state.alias, state.status, whole=False)
    after = state.alias.covers_through if summary is not None else 0
    events, kinds = first.events, first.kinds
    if events is None or guess != after:
        events = reader.events(subject, after=after)
        kinds = reader.stored_kinds(subject, after=after) if with_items and events else None
    cold = summary is not None and bool(summary.artifact.output and summary.artifact.output.cold)
    kept.recalled(reader, subject, kept.LastRecall(after, cold))
    return _Read(
        state,
        folded,
        summary,
        reason or "summary is fresh",
        events,
        kinds,
        first.matching,
        with_items,
    )


def _summary_recall(
    reader: Reader, subject: str, read: _Read, summary: kept.Published, query: str | None
) -> tuple[Recall, list[Passage]]:
    """A fresh summary's recall: its statements, the tail after it, the conflicts."""
    artifact = summary.artifact
    assert artifact.output is not None
    output = artifact.output
    judged_tail = judged(read.events, read.folded)
    by_id = judged_tail.conflicts
    found = Recall(
        subject,
        "summary",
        read.reason,
        artifact_id=artifact.id,
        covers_through=read.state.alias.covers_through,
        claims=output.claims,
        open_items=output.open_items,
        conflicts=tuple(by_id[c] for c in output.unresolved_conflicts if c in by_id),
        summary=summary.summary,
        tail=tuple(e for e in read.events if judged_tail.is_valid(e)),
        statements=output.statements,
        cold=output.cold,
        query=query,
    )
    return found, _summary_passages(reader, found, output, read)


def _raw_recall(subject: str, read: _Read, query: str | None) -> tuple[Recall, list[Passage]]:
    """A subject without a fresh summary: its valid events, with their conflicts."""
    judged_all = judged(read.events, read.folded)
    valid = tuple(e for e in read.events if judged_all.is_valid(e))
    ids = {e.id for e in valid}
    conflicts = tuple(c for c in judged_all.unresolved if c.a in ids and c.b in ids)
    found = Recall(subject, "raw", read.reason, conflicts=conflicts, events=valid, query=query)
    return found, _event_passages(subject, "raw", valid, conflicts, _kinds_of(valid, read))


def _kinds_of(events: Sequence[Event], read: _Read) -> dict[str, tuple[str, ...]] | None:
    """``events``' item kinds (None: a recall that does not rank reads none)."""
    if not read.ranked:
        return None
    return _kinds_by_id(events, read.kinds) if read.kinds is not None else {}


def _summary_text(artifact: Artifact) -> str:
    """A published artifact's summary as recall shows it (kept with it: kept.py)."""
    assert artifact.output is not None
    manifest = artifact.manifest
    return render_summary(
        artifact.output.statements, budget=manifest.budget, over_budget=manifest.over_budget
    )


# The cold events a recall by meaning adds, per subject: more than a 1,764-token
# budget holds of LoCoMo's lines (about 25 tokens each) for one of two speakers.
COLD_BY_MEANING = 50


def _by_meaning(
    reader: Reader,
    found: Recall,
    passages: list[Passage],
    meaning: Meaning,
    folded: Folded,
) -> list[Passage]:
    """The candidates plus the cold events nearest the query, each with its similarity.

    Vectors are read for the candidates and the subject's cold events (a summary
    keeps its cold list; an event without a vector of this embedder has no
    similarity and is ranked by its words alone). The candidates are valid
    already, and so are the cold events of the fresh summary a recall uses; the
    nearest are checked again as they become passages.
    """
    shown = {s for p in passages for s in p.sources}
    cold = [c for c in found.cold if c not in shown]
    ids = [*sorted(shown), *cold]
    rows, matrix = reader.vectors_of_valid(found.subject, ids, meaning.embedder)
    if not rows:
        return passages
    cosine = cosines_of(meaning.vector, rows, matrix)  # one product for every candidate
    near = set(nearest(cold, cosine, COLD_BY_MEANING))
    passages = [_with_similarity(p, cosine) for p in passages]
    return passages + _cold_passages(reader, found, near, folded, len(passages), cosine)


def _with_similarity(passage: Passage, cosine: Mapping[str, float]) -> Passage:
    """The passage with the best similarity of its events (None: none has a vector)."""
    found = [cosine[s] for s in passage.sources if s in cosine]
    return copied(passage, similarity=max(found)) if found else passage


def finish(
    gathered: Sequence[tuple[Recall, list[Passage]]], query: str | None, budget: int | None
) -> RecallSet:
    """Rank every subject's passages together and pack them into one shared budget.

    Relevance is BM25 over the candidates of all the subjects recalled together,
    the cold events the query did not match counted as documents without its
    terms (relevance.py), fused with the similarity to the query's vector when
    candidates have one (fusion.py).
    """
    candidates = [p for _, passages in gathered for p in passages]
    terms = query_terms(query)
    if terms:
        unmatched = sum(
            len(found.cold) - sum(p.origin == "cold" for p in passages)
            for found, passages in gathered
        )
        lexical = bm25(terms, [p.text for p in candidates], unmatched)
        fused = relevance(lexical, [p.similarity for p in candidates])
        scores = named(
            terms,
            [(p.subject, p.speaker) for p in candidates],
            [f or p.score for p, f in zip(candidates, fused, strict=True)],
        )
        ranked, needs = with_updates(rank(candidates, has_query=True, scores=scores))
        score_of = {id(p): s for p, s in zip(candidates, scores, strict=True)}
        packed = pack(ranked, budget, _layout(budget), needs, lambda p: score_of.get(id(p), 0.0))
        packed = _scored(packed, score_of)
    else:
        ranked, needs = with_updates(rank(candidates, has_query=False))
        chosen = _layout(budget)
        if budget is not None and any(found.cold for found, _ in gathered):
            chosen = replace(chosen, fixed=chosen.fixed + cold_reserve())  # the cold line
        packed = pack(ranked, budget, chosen, needs)
    recalls = tuple(_narrowed(found, packed, query, budget) for found, _ in gathered)
    total_cold = sum(r.left_out.cold_unmatched for r in recalls)
    return RecallSet(
        recalls,
        query=query,
        budget=budget,
        context=packed.kept,
        left_out=_left_out(packed.dropped, total_cold),
        tokens=packed.tokens if budget is not None else None,
        over_budget=packed.over_budget,
    )


def _left_out(dropped: Sequence[Passage], cold: int) -> LeftOut:
    binding = sum(p.must_keep for p in dropped)
    return LeftOut(dropped_ids(dropped), len(dropped), cold, binding)


def _layout(budget: int | None) -> Layout:
    return layout(budget) if budget is not None else _FREE


def _scored(packed: Packed, score_of: Mapping[int, float]) -> Packed:
    """``packed`` with each kept passage given its score (by identity, as ``score_of``
    holds them): only what is returned, and scored anew, is copied."""
    kept = tuple(
        copied(p, score=s) if (s := score_of.get(id(p), p.score)) != p.score else p
        for p in packed.kept
    )
    return replace(packed, kept=kept)


def _narrowed(found: Recall, packed: Packed, query: str | None, budget: int | None) -> Recall:
    """``found`` with its share of the context; tail and events narrowed to what was kept."""
    mine = tuple(p for p in packed.kept if p.subject == found.subject)
    dropped = [p for p in packed.dropped if p.subject == found.subject]
    cold = set(found.cold)
    returned_cold = {s for p in mine if p.origin == "cold" for s in p.sources}
    left_out = _left_out(dropped, len(cold - returned_cold))
    tokens = None
    if budget is not None and len({p.subject for p in packed.kept}) <= 1:
        tokens = packed.tokens
    result = replace(
        found,
        query=query,
        budget=budget,
        context=mine,
        left_out=left_out,
        tokens=tokens,
        over_budget=packed.over_budget,
    )
    if ranks(query, budget):
        kept = {s for p in mine for s in p.sources}
        order = {s: n for n, s in enumerate(s for p in mine for s in p.sources)}
        result = replace(
            result,
            tail=tuple(e for e in found.tail if e.id in kept),
            events=tuple(
                sorted((e for e in found.events if e.id in kept), key=lambda e: order[e.id])
            ),
        )
    return result


_FREE = Layout(lambda p: 0, lambda s: 0, lambda s: 0, 0)  # no budget: nothing to count

# What makes a passage must-keep is meaning/binding.py's to decide: an event binds
# the agent (a rule, a permission scope, the subject's own preference or aversion,
# an open item, a side of an unresolved conflict). Numbers, dates, money, ids and
# narrative negations are must-preserve for a summary (never altered) but are
# ranked by relevance in a recall (docs/recall.md).


def _claim_kinds(claims: Sequence[Claim]) -> dict[str, list[str]]:
    """Event id -> the kinds of the claims (must-preserve items) derived from it."""
    kinds: dict[str, list[str]] = {}
    for claim in claims:
        for source in claim.derived_from:
            kinds.setdefault(source, []).append(claim.kind)
    return kinds


def _sides(conflicts: Sequence[Conflict]) -> dict[str, str]:
    """Event id -> the unresolved conflict it is a side of."""
    return {side: c.id for c in conflicts if not c.resolved for side in (c.a, c.b)}


def _summary_passages(reader: Reader, found: Recall, output: Output, read: _Read) -> list[Passage]:
    """The statements of a fresh summary, the tail after it, and any conflict side missing.

    An artifact stored before summaries had statements has none: its covered,
    non-cold events stand in for them, as the built-in generator's statements
    are those events' sentences verbatim.
    """
    subject = found.subject
    open_ids = set(output.open_items)
    sides = _sides(found.conflicts)
    passages: list[Passage] = []
    if output.statements:
        assert found.artifact_id is not None
        passages += kept.statement_passages(
            reader,
            found.artifact_id,
            found.conflicts,
            lambda: _statement_passages(reader, subject, output, open_ids, sides),
        )
    else:
        cold = set(output.cold)
        covered = reader.events(subject, through=found.covers_through)
        state = judged(covered, read.folded)
        hot = [e for e in covered if state.is_valid(e) and e.id not in cold]
        for event in hot:
            passages += _event_passage(subject, "summary", event, len(passages), open_ids, sides)
    kinds = _kinds_of(found.tail, read)
    passages += _event_passages(subject, "tail", found.tail, found.conflicts, kinds, len(passages))
    return passages + _missing_sides(reader, found, passages, open_ids, sides)


def _statement_passages(
    reader: Reader, subject: str, output: Output, open_ids: set[str], sides: dict[str, str]
) -> tuple[Passage, ...]:
    """A summary's statements as passages, each binding when an event it shows binds."""
    claims = _claim_kinds(output.claims)
    binding, cited = _binding_statements(reader, subject, output, open_ids, sides)
    passages = []
    for n, statement in enumerate(output.statements):
        sources = statement.derived_from
        conflict = statement.contested or next((sides[s] for s in sources if s in sides), None)
        is_open = any(s in open_ids for s in sources)
        item_kinds = [k for s in sources for k in claims.get(s, ())]
        passages.append(
            new_passage(
                subject,
                statement.text,
                sources,
                statement.at,
                section_of(statement.kind, item_kinds, open_item=is_open, conflict=conflict),
                "summary",
                n in binding,
                n,
                conflict=conflict,
                project=statement.project,
                speaker=statement.speaker,
                part=statement.part,
                said=(
                    statement.at or "",
                    max((cited[s].seq for s in sources if s in cited), default=0),
                ),
                scope=_scope(statement, cited),
                external=any(cited[s].trust == "external" for s in sources if s in cited),
            )
        )
    return tuple(passages)


def _scope(statement: Statement, cited: dict[str, Event]) -> str | None:
    """A later part's scope: its event's first sentence (consolidation/parts.py)."""
    if statement.part is None or statement.part[0] < 2 or not statement.derived_from:
        return None
    event = cited.get(statement.derived_from[0])
    return scope_of(event.text) if event is not None else None


def _binding_statements(
    reader: Reader, subject: str, output: Output, open_ids: set[str], sides: dict[str, str]
) -> tuple[set[int], dict[str, Event]]:
    """The statements that show a binding event (meaning/binding.py), and each cited
    event (its seq says when it was said: updates are read in that order).

    Every event a statement cites is read back and decided: what binds may be said
    in words no item carries ("Keep my answers in British English."). Done once per
    published summary and its unresolved conflicts in a process (kept.py).
    """
    cited = sorted({s for statement in output.statements for s in statement.derived_from})
    events = reader.events_by_id(subject, cited)
    stored = reader.stored_kinds(subject, seqs=[e.seq for e in events])
    binding = {event.id for event in events if _binds(event, stored, open_ids, sides)}
    shown = {
        n for n, s in enumerate(output.statements) if any(i in binding for i in s.derived_from)
    }
    return shown, {event.id: event for event in events}


def _binds(event: Event, stored: StoredKinds, open_ids: set[str], sides: dict[str, str]) -> bool:
    """Whether ``event`` binds, extracting its items only when it may.

    The stored binding mark is the test without the summary's open items and
    conflict sides; an event checked by detection without the mark, and neither
    open nor a side here, cannot bind, so it is not extracted again. One with the
    mark but without the open-item mark binds for a reason of its own, which the
    summary's open items and sides cannot take away: not extracted either.
    """
    asked_here = event.id in open_ids or event.id in sides
    checked = event.seq <= stored.through
    kinds = stored.kinds.get(event.seq, ())
    if checked and not asked_here and not may_bind(kinds):
        return False
    if checked and may_bind(kinds) and extract.OPEN_ITEM not in kinds:
        return True  # it binds by itself, not as an open item: whatever is asked here
    return is_binding(event, extract.event_items(event), open_items=open_ids, conflict_sides=sides)


def _missing_sides(
    reader: Reader,
    found: Recall,
    passages: Sequence[Passage],
    open_ids: set[str],
    sides: dict[str, str],
) -> list[Passage]:
    """Both sides of every unresolved conflict are shown, even one the summary left cold."""
    shown = {s for p in passages for s in p.sources}
    missing = sorted(s for s in sides if s not in shown)
    if not missing:
        return []
    out: list[Passage] = []
    for event in reader.events_by_id(found.subject, missing):
        out += _event_passage(
            found.subject, "summary", event, len(passages) + len(out), open_ids, sides
        )
    return out


def _kinds_by_id(events: Sequence[Event], stored: StoredKinds) -> dict[str, tuple[str, ...]]:
    """Event id -> its item kinds: stored up to the watermark, extracted after it.

    Extraction costs about 170 µs an event; only events the detection job has not
    checked yet (just appended) pay it. Events without an item are left out.
    """
    found: dict[str, tuple[str, ...]] = {}
    for event in events:
        if event.seq <= stored.through:
            kinds = stored.kinds.get(event.seq, ())
        else:
            kinds = binding.event_kinds(event)
        if kinds:
            found[event.id] = kinds
    return found


def _event_passages(
    subject: str,
    origin: str,
    events: Sequence[Event],
    conflicts: Sequence[Conflict],
    kinds: Mapping[str, Sequence[str]] | None,
    start: int = 0,
) -> list[Passage]:
    """Raw events as passages, newest first (the order a budget keeps without a query).

    ``kinds``: event id -> its item kinds and open-item mark (extract.event_kinds),
    or None for a recall that does not rank (open items are then found in the text).
    With the kinds, an event binds exactly when it may: its binding mark is the
    binding test with its own open-item mark as the open items, and the open
    items here are the events with that mark; so nothing is extracted.
    """
    known = kinds is not None
    if kinds is None:
        open_ids = set(extract.expected_open_items(events))
        kinds = {}
    else:
        open_ids = {e.id for e in events if extract.OPEN_ITEM in kinds.get(e.id, ())}
    sides = _sides(conflicts)
    newest_first = sorted(events, key=lambda e: -e.seq)
    passages: list[Passage] = []
    for event in newest_first:
        may = event.id in open_ids or event.id in sides or may_bind(kinds.get(event.id, ()))
        passages += _event_passage(
            subject,
            origin,
            event,
            start + len(passages),
            open_ids,
            sides,
            may_bind=may,
            must_keep=may if known else None,
            kinds=kinds.get(event.id, ()),
        )
    return passages


def _event_passage(
    subject: str,
    origin: str,
    event: Event,
    order: int,
    open_ids: set[str],
    sides: dict[str, str],
    *,
    may_bind: bool = True,
    must_keep: bool | None = None,
    kinds: Sequence[str] | None = None,
    similarity: float | None = None,
) -> list[Passage]:
    """An event as its passage, whole; an event too long for any budget as its marked parts.

    ``may_bind`` False skips the binding test (its item ``kinds`` cannot bind);
    ``kinds`` None reads them from the event (extraction).
    """
    conflict = sides.get(event.id)
    is_open = event.id in open_ids
    decide = may_bind and must_keep is None
    items = extract.event_items(event) if kinds is None or decide else []
    if must_keep is None:
        must_keep = decide and is_binding(event, items, open_items=open_ids, conflict_sides=sides)
    item_kinds = [i.kind for i in items] if kinds is None else kinds
    section = section_of(event.kind, item_kinds, open_item=is_open, conflict=conflict)
    parts = as_parts(event.text) or [event.text]
    numbered = len(parts) > 1
    # a long document binds by its rule-like parts; an open item or a side, whole
    binds = (
        binding_parts(event, parts)
        if must_keep and numbered and not is_open and conflict is None
        else range(len(parts))
    )
    return [
        new_passage(
            subject,
            text,
            (event.id,),
            event.at,
            section if not must_keep or n in binds else "facts",
            origin,
            must_keep and n in binds,
            order + n,
            conflict=conflict,
            project=event.project,
            speaker=event.speaker,
            part=(n + 1, len(parts)) if numbered else None,
            similarity=similarity,
            said=(event.at or event.recorded_at, event.seq),
            scope=scope_of(event.text) if numbered and n else None,
            external=event.trust == "external",
        )
        for n, text in enumerate(parts)
    ]


def _cold_passages(
    reader: Reader,
    found: Recall,
    matched: set[str],
    folded: Folded,
    start: int,
    cosine: Mapping[str, float] | None = None,
) -> list[Passage]:
    """The valid cold events that matched the query: what cold retrieval returns.

    ``cosine``: the events' similarities to the query, set as they are built.
    """
    hits = [c for c in found.cold if c in matched]
    if not hits:
        return []
    events = reader.events_by_id(found.subject, hits)
    state = judged(events, folded)
    valid = sorted((e for e in events if state.is_valid(e)), key=lambda e: e.seq)
    passages: list[Passage] = []
    for event in valid:
        passages += _event_passage(
            found.subject,
            "cold",
            event,
            start + len(passages),
            set(),
            {},
            must_keep=False,
            kinds=(),
            similarity=cosine.get(event.id) if cosine else None,
        )
    for update in _cold_updates(reader, found, valid, folded):
        # ranked with what it updates: context.with_updates moves it just before
        brought = _event_passage(
            found.subject, "cold", update, start + len(passages), set(), {},
            must_keep=False, kinds=(),
        )  # fmt: skip
        passages += [copied(p, score=UPDATE_SCORE) for p in brought]
    return passages


#: the score of a cold update brought back for a matched cold event it updates: above
#: zero, so ranking keeps it (a cold event without a score is one no query matched)
UPDATE_SCORE = 1e-9
#: the most cold events read back to find the updates of a recall's matched cold events
UPDATE_CANDIDATES = 200


def _cold_updates(
    reader: Reader, found: Recall, hits: Sequence[Event], folded: Folded
) -> list[Event]:
    """The cold events that update a matched cold event, though the query did not match
    them: an old value found by its words is never shown alone as current (the
    summary holds that for hot events; here the cold layer's pairs are found by a
    full-text search with the old event's slot and topic words)."""
    changing = [e for e in hits if could_change(e.text)]
    terms = sorted({t for e in changing for t in update_terms(e.text)})[:MAX_QUERY_TERMS]
    if not terms:
        return []
    cold, have = set(found.cold), {e.id for e in hits}
    ids = [i for i in reader.matching(found.subject, terms) if i in cold and i not in have]
    if not ids:
        return []
    events = reader.events_by_id(found.subject, ids[:UPDATE_CANDIDATES])
    state = judged(events, folded)
    first = min(e.seq for e in changing)
    later = [e for e in events if e.seq > first and state.is_valid(e) and may_update(e.text)]
    updates = find_updates(sorted([*changing, *later], key=lambda e: e.seq))
    wanted = {u.newer for u in updates.values()} - have
    return [e for e in later if e.id in wanted]
