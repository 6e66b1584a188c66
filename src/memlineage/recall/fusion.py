"""Hybrid relevance: BM25 and embedding similarity, blended (and reciprocal rank fusion). Pure.

A recall ranks by :func:`blend`, the mean of both scores each scaled over the
candidates: on LoCoMo it beat reciprocal rank fusion and both signals alone at
every budget (docs/recall.md). :func:`fuse` (RRF) stays as the baseline.

Reciprocal rank fusion (Cormack, Clarke and Büttcher, 2009) scores a candidate
``sum(1 / (k + rank))`` over the rankings it appears in. It needs no
calibration between BM25's unbounded scores and cosines in [-1, 1], which is
why it is the usual way to fuse the two.

Over the same candidates:

- a BM25 score of 0 (no query word) and a missing similarity (``None``: the
  event has no vector of the current embedder yet) leave the candidate out of
  that ranking: it contributes nothing there, rather than a bad rank;
- equal scores share the best rank of their group (competition ranking,
  "1224"), so the result does not depend on the candidates' order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from memlineage.recall.embed import EmbedderId, Vectors

RRF_K = 60  # the constant of the original paper; larger flattens the head of each ranking


def ranks(scores: Sequence[float | None], *, keep_zero: bool = True) -> list[int | None]:
    """The 1-based rank of each score, highest first; ties share the best rank.

    ``None`` (and 0 when ``keep_zero`` is false) is unranked.
    """
    ranked = [(s, i) for i, s in enumerate(scores) if s is not None and (keep_zero or s != 0.0)]
    ranked.sort(key=lambda pair: -pair[0])
    out: list[int | None] = [None] * len(scores)
    previous: float | None = None
    rank = 0
    for position, (score, index) in enumerate(ranked, 1):
        if score != previous:
            rank, previous = position, score
        out[index] = rank
    return out


def rrf(rankings: Sequence[Sequence[int | None]], k: int = RRF_K) -> list[float]:
    """Reciprocal rank fusion of rankings of the same candidates (None: not ranked)."""
    if k < 0:
        raise ValueError("k must not be negative")
    count = len(rankings[0]) if rankings else 0
    if any(len(r) != count for r in rankings):
        raise ValueError("every ranking must rank the same candidates")
    fused = [0.0] * count
    for ranking in rankings:
        for i, rank in enumerate(ranking):
            if rank is not None:
                fused[i] += 1.0 / (k + rank)
    return fused


def fuse(bm25: Sequence[float], similarity: Sequence[float | None], k: int = RRF_K) -> list[float]:
    """One score per candidate from its BM25 score and its cosine with the query.

    A candidate with neither a query word nor a vector scores 0.
    """
    if len(bm25) != len(similarity):
        raise ValueError("bm25 and similarity must score the same candidates")
    return rrf([ranks(bm25, keep_zero=False), ranks(similarity)], k)


def cosines_of(query: Vectors, ids: Sequence[str], matrix: Vectors) -> dict[str, float]:
    """The cosine of each row of ``matrix`` (row n: ``ids[n]``) with the unit ``query``, in
    one matrix product. Vectors are unit length (embed.normalised): a dot product is the
    cosine."""
    if not ids:
        return {}
    scores = (matrix @ np.asarray(query, np.float32)).tolist()
    return dict(zip(ids, scores, strict=True))


def similarities(
    query: Vectors, ids: Sequence[str], vectors: Mapping[str, Vectors]
) -> list[float | None]:
    """The cosine of each candidate's vector with the unit ``query`` (None: no vector)."""
    present = [i for i in ids if i in vectors]
    if not present:
        return [None] * len(ids)
    matrix = np.stack([vectors[i] for i in present]).astype(np.float32, copy=False)
    found = cosines_of(query, present, matrix)
    return [found.get(i) for i in ids]


@dataclass(frozen=True)
class Meaning:
    """A query's unit vector and the embedder it is of: a recall that ranks by meaning too.

    Only vectors of the same embedder are compared with it (the store keeps
    each vector's embedder).
    """

    embedder: EmbedderId
    vector: Vectors


def nearest(ids: Sequence[str], cosine: Mapping[str, float], k: int) -> list[str]:
    """The ``k`` of ``ids`` closest to the query by their ``cosine`` (ids without one left out)."""
    scored = [(cosine[i], i) for i in ids if cosine.get(i)]
    scored.sort(key=lambda pair: (-pair[0], pair[1]))
    return [i for _, i in scored[:k]]


# The weight of the words in a blend; the meaning gets the rest. Measured on LoCoMo
# (docs/recall.md, "Ranking by words and meaning"): 0.3, 0.5 and 0.7 all beat RRF and
# both signals alone; 0.5, the unweighted mean, was best or within 0.01 everywhere.
WORDS_WEIGHT = 0.5


def blend(
    lexical: Sequence[float], similarity: Sequence[float | None], words: float = WORDS_WEIGHT
) -> list[float]:
    """One score per candidate: the weighted mean of its BM25 score and its cosine, each
    scaled to [0, 1] over the candidates (BM25 by the best score, the cosine min-max).

    Unlike RRF it keeps how far apart the scores are, not only their order: a
    candidate far ahead on one signal stays ahead. A candidate without a vector
    is scored by its words alone.
    """
    if len(lexical) != len(similarity):
        raise ValueError("lexical and similarity must score the same candidates")
    if not 0.0 <= words <= 1.0:
        raise ValueError("words must be a weight between 0 and 1")
    best = max(lexical, default=0.0)
    present = [s for s in similarity if s is not None]
    low, high = (min(present), max(present)) if present else (0.0, 0.0)
    span = high - low
    out = []
    for score, cosine in zip(lexical, similarity, strict=True):
        by_words = score / best if best > 0 else 0.0
        if cosine is None:
            out.append(by_words)
        else:
            by_meaning = (cosine - low) / span if span > 0 else 0.0
            out.append(words * by_words + (1.0 - words) * by_meaning)
    return out


def relevance(lexical: Sequence[float], similarity: Sequence[float | None]) -> list[float]:
    """The scores a recall ranks by: BM25 alone while no candidate has a vector, else blended."""
    if all(s is None for s in similarity):
        return list(lexical)
    return blend(lexical, similarity)
