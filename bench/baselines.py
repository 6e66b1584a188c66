"""Retrieval baselines for the recall benchmarks: what plain retrieval would hand an agent.

Pure functions over a list of texts (observations or dialogue turns) and one
query, each returning the indices of the texts it keeps within a token budget,
whole texts only, counted in cl100k tokens (the tokenizer of memlineage's own
budgets):

- ``bm25``: Okapi BM25 over the raw texts (the recall's own scorer,
  recall/relevance.py), texts without a query word left out (plain RAG);
- ``embeddings``: every text by cosine with the query, best first;
- ``fusion``: reciprocal rank fusion of the two (recall/fusion.py);
- ``blend``: the mean of both scores scaled over the texts, what recall ranks by
  (recall/fusion.py).

Packing is greedy in rank order: a text that does not fit in what is left of
the budget is skipped and the next one tried, so every baseline fills its
budget as far as whole texts allow.

    python bench/baselines.py [--view observations|turns|both] [--conversations N]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from common import LOCOMO
from memlineage.recall.context import query_terms
from memlineage.recall.embed import Embedder, Vectors, WordLlamaEmbedder
from memlineage.recall.fusion import RRF_K, blend, fuse, similarities
from memlineage.recall.relevance import bm25
from memlineage.tokens import TiktokenTokenizer

BUDGETS = (500, 1_000, 1_764, 4_000)
SEPARATOR_TOKENS = 1  # the newline between two packed texts
METHODS = ("bm25", "embeddings", "fusion", "blend")


def bm25_scores(query: str, texts: Sequence[str]) -> list[float]:
    return bm25(query_terms(query), texts)


def cosine_scores(query: Vectors, vectors: Vectors) -> list[float | None]:
    """The cosine of each text's unit vector with the unit query vector."""
    ids = [str(i) for i in range(len(vectors))]
    return similarities(query, ids, dict(zip(ids, vectors, strict=True)))


def order(scores: Sequence[float | None], *, drop_zero: bool = False) -> list[int]:
    """Indices best first (ties by position); None, and 0 when ``drop_zero``, left out."""
    kept = [i for i, s in enumerate(scores) if s is not None and not (drop_zero and s == 0.0)]
    return sorted(kept, key=lambda i: (-(scores[i] or 0.0), i))


def pack_whole(ranked: Sequence[int], tokens: Sequence[int], budget: int) -> list[int]:
    """The texts of ``ranked`` that fit in ``budget``, greedily, whole texts only."""
    kept: list[int] = []
    used = 0
    for i in ranked:
        cost = tokens[i] + (SEPARATOR_TOKENS if kept else 0)
        if used + cost <= budget:
            kept.append(i)
            used += cost
    return kept


def rankings(
    query: str, query_vector: Vectors, texts: Sequence[str], vectors: Vectors, k: int = RRF_K
) -> dict[str, list[int]]:
    """Each baseline's ranking of ``texts`` for ``query``."""
    lexical = bm25_scores(query, texts)
    meaning = cosine_scores(query_vector, vectors)
    return {
        "bm25": order(lexical, drop_zero=True),
        "embeddings": order(meaning),
        "fusion": order(fuse(lexical, meaning, k), drop_zero=True),
        "blend": order(blend(lexical, meaning), drop_zero=True),
    }


def evidence_found(
    kept: Sequence[int], evidence_of: Sequence[frozenset[str]], wanted: set[str]
) -> bool:
    """Whether the kept texts together carry every evidence id the question names."""
    found: set[str] = set()
    for i in kept:
        found |= evidence_of[i]
    return bool(wanted) and wanted <= found


# -- the LoCoMo run (a reader of its own: the benchmark's loader is not this module's) --


@dataclass(frozen=True)
class View:
    """One conversation as a list of texts, each with the dialogue ids it stands for."""

    texts: list[str]
    evidence: list[frozenset[str]]
    questions: list[tuple[str, frozenset[str]]]


def locomo_views(path: str, view: str, limit: int | None) -> list[View]:
    with open(path, encoding="utf-8") as file:
        data = json.load(file)[:limit]
    out = []
    for conv in data:
        texts, evidence = [], []
        if view == "turns":
            for key, turns in conv["conversation"].items():
                if key.startswith("session_") and isinstance(turns, list):
                    for turn in turns:
                        texts.append(f"{turn['speaker']}: {turn['text']}")
                        evidence.append(frozenset([turn["dia_id"]]))
        else:
            for per_speaker in conv["observation"].values():
                for facts in per_speaker.values():
                    for text, dia in facts:
                        texts.append(text)
                        ids = dia if isinstance(dia, list) else [dia]
                        evidence.append(frozenset(str(d) for d in ids))
        present = frozenset().union(*evidence)
        questions = [  # those whose evidence the view holds all of (else none could find it)
            (q["question"], frozenset(str(e) for e in q.get("evidence", [])))
            for q in conv["qa"]
            if q.get("category") in (1, 2, 3, 4)
            and q.get("evidence")
            and {str(e) for e in q["evidence"]} <= present
        ]
        out.append(View(texts, evidence, questions))
    return out


def run(views: Sequence[View], embedder: Embedder, count: Callable[[str], int]) -> None:
    hits = {m: dict.fromkeys(BUDGETS, 0) for m in METHODS}
    asked = 0
    for conv in views:
        vectors = embedder.embed(conv.texts)
        tokens = [count(t) for t in conv.texts]
        queries = embedder.embed([q for q, _ in conv.questions])
        for (question, wanted), query_vector in zip(conv.questions, queries, strict=True):
            asked += 1
            for method, ranked in rankings(question, query_vector, conv.texts, vectors).items():
                for budget in BUDGETS:
                    kept = pack_whole(ranked, tokens, budget)
                    hits[method][budget] += evidence_found(kept, conv.evidence, set(wanted))
    print(f"{asked} questions; evidence recall at " + " / ".join(f"{b:,}" for b in BUDGETS))
    for method in METHODS:
        print(f"  {method:<11}" + " / ".join(f"{hits[method][b] / asked:.3f}" for b in BUDGETS))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--view", choices=["observations", "turns", "both"], default="both")
    parser.add_argument("--conversations", type=int, default=None)
    args = parser.parse_args()
    tokenizer = TiktokenTokenizer()
    embedder = WordLlamaEmbedder()
    for view in ["observations", "turns"] if args.view == "both" else [args.view]:
        print(f"LoCoMo {view} ({embedder.name}, {embedder.dims} dimensions)")
        run(locomo_views(str(LOCOMO), view, args.conversations), embedder, tokenizer.count)
    return 0


if __name__ == "__main__":
    sys.exit(main())
