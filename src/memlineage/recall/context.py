"""What goes into an agent's context: rank by relevance, pack into a token budget. Pure.

A recall is turned into *passages*: one per summary statement, cold event,
tail event or (in raw mode) valid event, each a whole event (or a marked part
of an event too long for any budget, consolidation/parts.py), never a
sentence. A passage is **must-keep** when its event binds the agent
(meaning/binding.py: a rule, a permission scope, the subject's own
preference or aversion, an open item, a side of an unresolved conflict);
must-keep passages come first and whole. When they alone exceed the budget,
the most relevant of them that fit are shown and the rest are named as left
out (a count in every rendering, the ids in the JSON): a budget is kept even
for a subject of a hundred rules. The others follow
ranked by relevance to the query (relevance.py and fusion.py; no query:
today's order), and are taken in that order: one that does not fit is left out
and the next one is tried, so a shorter match still fills the room a longer one
left. Cold events come back only when they match the query: they are what a
query retrieves.

Tokens are counted on the rendered lines (render.py), one line per
passage plus a header line per subject and per section, with tiktoken's
``cl100k_base`` shipped offline; the rendering is line-based, so the sum of
the lines' counts is the count of the rendered text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from memlineage.meaning import caches
from memlineage.meaning.binding import chat_line, text_reasons
from memlineage.meaning.durable import durable_text
from memlineage.meaning.updates import SAME_SLOT, could_change, find_updates
from memlineage.model import Event
from memlineage.tokens import default_tokenizer

MAX_QUERY_TERMS = 32
# Packing gives up on filling the budget once the room left is below the
# shortest line a passage can render to ("- " and a word), or after this many
# passages in a row were too long for it.
MIN_LINE_TOKENS = 3
SKIP_LIMIT = 16

# Sections of a rendered recall, in the order they are shown.
SECTIONS: tuple[str, ...] = ("constraints", "contested", "open", "preferences", "facts")
SECTION_TITLES: dict[str, str] = {
    "constraints": "Constraints",
    "contested": "Contested points",
    "open": "Open items",
    "preferences": "Preferences",
    "facts": "Facts",
}
# Where origin labels come from: the published summary, its cold layer, the raw
# tail after it, or the raw events when there is no fresh summary.
ORIGINS: tuple[str, ...] = ("summary", "cold", "tail", "raw")

_WORD = re.compile(r"[^\W_]+")

# The Snowball English stop words: the list PostgreSQL's 'english' configuration
# drops, so that both backends ignore the same words of a query. FTS5 has no stop
# words, and its bm25() reads the whole posting list of every query term to weigh
# it: "the" or "what" would cost the most and weigh the least.
_STOP_WORDS_TEXT = (
    "i me my myself we our ours ourselves you your yours yourself yourselves he him his "
    "himself she her hers herself it its itself they them their theirs themselves what "
    "which who whom this that these those am is are was were be been being have has had "
    "having do does did doing a an the and but if or because as until while of at by for "
    "with about against between into through during before after above below to from up "
    "down in out on off over under again further then once here there when where why how "
    "all any both each few more most other some such no nor not only own same so than "
    "too very s t can will just don should now "
)
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())


@functools.lru_cache(maxsize=65536)
def count_tokens(text: str) -> int:
    """Tokens of ``text`` with the budget tokenizer (memoised: a pure function of the text).

    Not through the tokenizer's own memo as well: a second entry per new line
    cost time and, keyed by a tuple, left a garbage-collected object behind for
    every line counted (young garbage collections every few recalls).
    """
    return default_tokenizer().count_uncached(text)


caches.register(count_tokens.cache_clear)


def query_terms(query: str | None) -> list[str]:
    """The words of a query, lower-cased, once each, in order, without stop words.

    At most MAX_QUERY_TERMS. Only letters and digits survive, so no query can
    inject full-text operators.
    """
    if not query:
        return []
    return meaning_text(query).split()[:MAX_QUERY_TERMS]


def meaning_text(query: str) -> str:
    """What a query is embedded by: its words without stop words, lower-cased, in order.

    A static embedding is a mean of word vectors, so a question's function words
    ("what did ... do") pull it toward every other question: on LoCoMo's turns,
    "What did Caroline research?" sat nearest "What pet do you have?". Embedding the
    content words alone raised evidence recall at every budget (docs/recall.md).
    """
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.lower()):
        if word not in STOP_WORDS:
            seen.setdefault(word, None)
    return " ".join(seen)


@dataclass(frozen=True)
class Passage:
    """One line of context, with the raw events it comes from."""

    subject: str
    text: str
    sources: tuple[str, ...]  # raw event ids: what `why` and lineage resolve
    at: str | None
    section: str  # one of SECTIONS
    origin: str  # one of ORIGINS
    must_keep: bool
    order: int  # position in the no-query order of its subject
    score: float = 0.0  # full-text relevance, higher is better; 0: no match
    conflict: str | None = None  # the unresolved conflict it is a side of
    project: str | None = None  # the scope of its events (None: global)
    speaker: str | None = None  # who said it, when the event names one
    part: tuple[int, int] | None = None  # (k, n): the k-th of n parts of one long event
    similarity: float | None = None  # cosine with the query's vector; None: no vector
    said: tuple[str, int] = ("", 0)  # when it was said: (time, seq), to read updates in order
    scope: str | None = None  # a later part's event's first sentence, shown in its mark
    updated: bool = False  # a later passage of the recall updates it: marked so
    external: bool = False  # its event came from outside (trust ``external``): marked so

    def to_json(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "speaker": self.speaker,
            "part": list(self.part) if self.part else None,
            "subject": self.subject,
            "text": self.text,
            "sources": list(self.sources),
            "at": self.at,
            "section": self.section,
            "origin": self.origin,
            "mustKeep": self.must_keep,
            "score": self.score,
            "similarity": self.similarity,
            "conflict": self.conflict,
        }


def section_of(
    kind: str | None, item_kinds: Sequence[str], *, open_item: bool, conflict: str | None
) -> str:
    """The section a passage is shown under; contested and open come before kind."""
    if conflict is not None:
        return "contested"
    if open_item:
        return "open"
    if kind == "constraint" or (kind is None and "constraint" in item_kinds):
        return "constraints"
    if kind == "preference" or (kind is None and "preference" in item_kinds):
        return "preferences"
    return "facts"


def new_passage(
    subject: str,
    text: str,
    sources: tuple[str, ...],
    at: str | None,
    section: str,
    origin: str,
    must_keep: bool,
    order: int,
    *,
    conflict: str | None = None,
    project: str | None = None,
    speaker: str | None = None,
    part: tuple[int, int] | None = None,
    similarity: float | None = None,
    said: tuple[str, int] = ("", 0),
    scope: str | None = None,
    external: bool = False,
) -> Passage:
    """``Passage(...)`` with these fields (score 0.0), built without the frozen
    dataclass's ``__init__`` (one ``object.__setattr__`` per field): a recall
    builds a passage for each of its hundred-odd candidates. Every field is set,
    in field order, as ``__init__`` sets them."""
    passage = object.__new__(Passage)
    passage.__dict__.update(
        subject=subject,
        text=text,
        sources=sources,
        at=at,
        section=section,
        origin=origin,
        must_keep=must_keep,
        order=order,
        score=0.0,
        conflict=conflict,
        project=project,
        speaker=speaker,
        part=part,
        similarity=similarity,
        said=said,
        scope=scope,
        updated=False,
        external=external,
    )
    return passage


def copied(
    passage: Passage, *, score: float | None = None, similarity: float | None = None
) -> Passage:
    """``passage`` with its relevance ``score`` and/or its ``similarity`` set (None: kept).

    A shallow copy of its fields, not ``dataclasses.replace`` (a tenth of the
    time; the constructor takes four times as long): a recall copies each
    candidate it gives a similarity. Passage has no ``__post_init__`` to skip.
    """
    copy = object.__new__(Passage)
    fields = copy.__dict__
    fields.update(passage.__dict__)
    if score is not None:
        fields["score"] = score
    if similarity is not None:
        fields["similarity"] = similarity
    return copy


def rank(
    passages: Sequence[Passage], *, has_query: bool, scores: Sequence[float] | None = None
) -> list[Passage]:
    """Must-keep first (in order), then the rest by relevance, then by order.

    Without a query the rest keeps today's order, durable facts first, and cold
    events stay out; with
    one, a cold event comes back only when it matched. ``scores``: the passages'
    relevance, in the same order, when it is not on them yet (a recall copies
    only the passages it keeps with their score).
    """
    score = [p.score for p in passages] if scores is None else scores
    must = sorted((p for p in passages if p.must_keep), key=_order_key)
    rest = [n for n, p in enumerate(passages) if not p.must_keep]
    if has_query:
        rest = [n for n in rest if passages[n].origin != "cold" or score[n] > 0]
        rest.sort(key=lambda n: (-score[n], *_order_key(passages[n])))
    else:  # durable facts first, as the hot summary chose them (meaning/durable.py)
        rest = [n for n in rest if passages[n].origin != "cold"]
        rest.sort(key=lambda n: (not durable_text(passages[n].text), *_order_key(passages[n])))
    return must + [passages[n] for n in rest]


def _order_key(passage: Passage) -> tuple[int, str]:
    # Several subjects interleave by position, then by name: one shared budget
    # serves each subject's first lines before anyone's later ones.
    return (passage.order, passage.subject)


@dataclass(frozen=True)
class Packed:
    """The passages kept (rank order), those dropped for the budget, and the tokens used."""

    kept: tuple[Passage, ...]
    dropped: tuple[Passage, ...]
    tokens: int
    budget: int | None
    over_budget: bool


@dataclass(frozen=True)
class Layout:
    """Token costs of a rendering: one line per passage, headers per subject and section."""

    line: Callable[[Passage], int]
    subject_header: Callable[[str], int]
    section_header: Callable[[str], int]
    footer: int  # reserved for the "left out" line when anything is dropped
    fixed: int = 0  # what every rendering costs whatever it holds (the JSON envelope)
    # reserved instead of ``footer`` when must-keep passages are left out: the line
    # that says how many of them (and the JSON key that counts them)
    binding_footer: int = 0
    # At most ``line``, and cheap: a passage whose floor is past the room left is
    # skipped without counting its tokens.
    floor: Callable[[Passage], int] = lambda passage: 0


def with_updates(ranked: Sequence[Passage]) -> tuple[list[Passage], dict[int, Passage]]:
    """``ranked`` with every passage's update (meaning/updates.py) moved just before it, and
    per passage (by identity) the update it needs beside it.

    Binding is judged over the history: a must-keep passage that a later one updates
    binds no more (it is shown, after its update, under Facts, or left out with it),
    and its update is must-keep in its place. A side of an unresolved conflict keeps
    its place: a person decides it.
    """
    # only passages that could update or be updated are read (most chat lines are neither)
    said = [(n, p) for n, p in _said_order(ranked) if could_change(p.text)]
    updates = find_updates([_as_event(n, p) for n, p in said]) if len(said) > 1 else {}
    # A cue and a shared word are enough to pair a rule with what changed it (both are
    # shown anyway); paired with a fact they cost a budget what it holds of the
    # answer: on LoCoMo's turns 19 such links, all chatter, took 5 points at 500 tokens.
    newer_of = {
        int(older): int(u.newer)
        for older, u in updates.items()
        if u.rule == SAME_SLOT or ranked[int(older)].must_keep or _rule_by_words(ranked[int(older)])
    }
    if not newer_of:
        return list(ranked), {}
    lifted = {o for o in newer_of if ranked[o].must_keep and ranked[o].conflict is None}
    keep = {newer_of[older] for older in newer_of if ranked[older].must_keep}
    shown = [_reweighed(p, n in keep, n in lifted, n in newer_of) for n, p in enumerate(ranked)]
    placed: list[Passage] = []
    done: set[int] = set()
    needs: dict[int, Passage] = {}
    for n, passage in enumerate(shown):
        newer = newer_of.get(n)
        if newer is not None:
            needs[id(passage)] = shown[newer]
            if newer not in done:
                placed.append(shown[newer])
                done.add(newer)
        if n not in done:
            placed.append(passage)
            done.add(n)
    must = [p for p in placed if p.must_keep]  # pack reads the must-keep part first
    return must + [p for p in placed if not p.must_keep], needs


def _rule_by_words(passage: Passage) -> bool:
    """A passage whose words state a rule or a taste, wherever it is shown from (a rule
    lifted by a later word goes cold; a query may bring it back)."""
    return bool(text_reasons(passage.text, chat_line(passage.text, passage.speaker)))


def _reweighed(passage: Passage, binds: bool, lifted: bool, updated: bool) -> Passage:
    """``passage`` as binding over the history makes it: must-keep in place of the rule it
    updates, or lifted (no longer must-keep, shown under Facts); marked when updated
    (it is shown only beside its update: ``needs``)."""
    if lifted:
        return replace(passage, must_keep=False, section="facts", updated=True)
    if updated:
        passage = replace(passage, updated=True)
    return replace(passage, must_keep=True) if binds else passage


def _said_order(passages: Sequence[Passage]) -> list[tuple[int, Passage]]:
    """The passages in the order they were said: by time and seq, then by their place."""
    return sorted(enumerate(passages), key=lambda np: (np[1].said, np[1].order))


def _as_event(index: int, passage: Passage) -> Event:
    """A passage as the update rules read an event: its words, who said it, its scope."""
    scope = f"{passage.subject}\x00{passage.project or ''}"  # never across subjects
    return Event(str(index), passage.subject, passage.text, project=scope,
                 speaker=passage.speaker)  # fmt: skip


def pack(
    ranked: Sequence[Passage],
    budget: int | None,
    layout: Layout,
    needs: dict[int, Passage] | None = None,
    relevance: Callable[[Passage], float] | None = None,
) -> Packed:
    """Take must-keep passages whole, then the ranked rest, each one that still fits.

    A passage too long for the room left is skipped, not cut, and the next ones
    are tried: a short answer ranked after a long story still gets in, as in any
    greedy packing of whole texts (what a plain retrieval baseline does). The
    search stops once even the shortest line could not fit, or after
    ``SKIP_LIMIT`` passages in a row did not, so a recall never counts the tokens
    of every candidate. ``needs`` (from :func:`with_updates`): a passage whose
    update was left out is left out too, never shown alone as current.

    When the must-keep part alone exceeds the budget, its passages are taken
    by ``relevance`` (highest first; None: rank order) while they fit, and
    everything else is left out: the rendering names how many must-keep
    passages are missing, and the budget is kept.
    """
    needs = needs or {}
    layout = replace(layout, line=_once(layout.line))  # _all_fit counts what the loop counts
    packing = _Packing(layout, needs)
    end = next((n for n, p in enumerate(ranked) if not p.must_keep), len(ranked))
    must, rest = ranked[:end], ranked[end:]
    if budget is not None:
        # the must-keep part, and the line that says what else was left out if anything is
        room = budget - layout.fixed - (layout.footer if rest else 0)
        if not _all_fit(must, room, layout, _Headers()):
            return packing.bounded(must, rest, budget, relevance)
    for passage in must:
        packing.take(passage, packing.cost(passage))
    if budget is None or _all_fit(rest, budget - packing.used, layout, packing.shown):
        for passage in rest:
            packing.take(passage, packing.cost(passage))
        return packing.packed(budget, packing.used)
    # Something will be left out: keep room for the line that says so.
    packing.fill(rest, budget - layout.footer)
    return packing.packed(budget, packing.used + layout.footer)


@dataclass
class _Packing:
    """The passages one packing has taken so far, and the tokens they cost."""

    layout: Layout
    needs: dict[int, Passage]
    shown: _Headers = field(default_factory=lambda: _Headers())
    kept: list[Passage] = field(default_factory=list)
    kept_ids: set[int] = field(default_factory=set)
    dropped: list[Passage] = field(default_factory=list)
    used: int = 0

    def __post_init__(self) -> None:
        self.used = self.layout.fixed

    def cost(self, passage: Passage) -> int:
        return self.shown.cost(passage, self.layout)

    def take(self, passage: Passage, extra: int) -> None:
        self.kept.append(passage)
        self.kept_ids.add(id(passage))
        self.shown.add(passage)
        self.used += extra

    def unmet(self, passage: Passage) -> bool:
        """Whether the update ``passage`` needs beside it was left out."""
        need = self.needs.get(id(passage))
        return need is not None and id(need) not in self.kept_ids

    def fill(self, rest: Sequence[Passage], limit: int) -> None:
        misses = 0
        for position, passage in enumerate(rest):
            if limit - self.used < MIN_LINE_TOKENS or misses >= SKIP_LIMIT:
                self.dropped.extend(rest[position:])
                return
            if self.unmet(passage):
                self.dropped.append(passage)  # its update did not fit: never the old value alone
                continue
            # the floor first: a passage too long whatever its exact count is not counted
            extra = 0
            if self.layout.floor(passage) > limit - self.used or (
                self.used + (extra := self.cost(passage)) > limit
            ):
                self.dropped.append(passage)
                misses += 1
                continue
            self.take(passage, extra)
            misses = 0

    def bounded(
        self,
        must: Sequence[Passage],
        rest: Sequence[Passage],
        budget: int,
        relevance: Callable[[Passage], float] | None,
    ) -> Packed:
        """The must-keep passages that fit, most relevant first; the rest named as left out."""
        limit = budget - self.layout.binding_footer
        order = sorted(must, key=lambda p: -relevance(p)) if relevance else list(must)
        for passage in order:
            if id(passage) in self.kept_ids:
                continue  # taken already, as the update another passage needed
            need = self.needs.get(id(passage))
            pair = [need] if need is not None and id(need) not in self.kept_ids else []
            if not _all_fit([*pair, passage], limit - self.used, self.layout, self.shown):
                continue
            for one in (*pair, passage):
                self.take(one, self.cost(one))
        taken = self.kept_ids
        self.kept = [p for p in must if id(p) in taken]  # shown in rank order
        self.dropped = [p for p in must if id(p) not in taken] + list(rest)
        return self.packed(budget, self.used + self.layout.binding_footer)

    def packed(self, budget: int | None, tokens: int) -> Packed:
        over = budget is not None and tokens > budget
        return Packed(tuple(self.kept), tuple(self.dropped), tokens, budget, over)


def _once(line: Callable[[Passage], int]) -> Callable[[Passage], int]:
    """``line``, computed once per passage of one packing (keyed by identity: the
    passages outlive the packing, and hashing one would read its whole text)."""
    seen: dict[int, int] = {}

    def cost(passage: Passage) -> int:
        found = seen.get(id(passage))
        if found is None:
            found = seen[id(passage)] = line(passage)
        return found

    return cost


@dataclass
class _Headers:
    """The subjects and sections whose header lines a context already shows."""

    subjects: set[str] = field(default_factory=set)
    sections: set[tuple[str, str]] = field(default_factory=set)

    def cost(self, passage: Passage, layout: Layout) -> int:
        """Tokens ``passage`` adds: its line, and the header lines it opens."""
        extra = layout.line(passage)
        if passage.subject not in self.subjects:
            extra += layout.subject_header(passage.subject)
        if (passage.subject, passage.section) not in self.sections:
            extra += layout.section_header(passage.section)
        return extra

    def add(self, passage: Passage) -> None:
        self.subjects.add(passage.subject)
        self.sections.add((passage.subject, passage.section))


def _all_fit(rest: Sequence[Passage], room: int, layout: Layout, shown: _Headers) -> bool:
    """Whether every passage of ``rest`` fits in ``room`` after what ``shown`` has.

    Stops counting at the first passage past the room, so a long candidate list
    costs no more than what fits.
    """
    trial = _Headers(set(shown.subjects), set(shown.sections))
    for passage in rest:
        room -= trial.cost(passage, layout)
        if room < 0:
            return False
        trial.add(passage)
    return True


def dropped_ids(dropped: Sequence[Passage]) -> tuple[str, ...]:
    """The event ids of what was dropped for the budget, once each, in rank order."""
    return tuple(dict.fromkeys(s for p in dropped for s in p.sources))
