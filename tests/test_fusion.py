"""Hybrid relevance: BM25 and embedding similarity blended, and RRF (recall/fusion.py)."""

from __future__ import annotations

import numpy as np
import pytest

from memlineage.recall.fusion import RRF_K, blend, fuse, ranks, relevance, rrf, similarities


def test_ranks_go_highest_first_and_ties_share_the_best_rank() -> None:
    assert ranks([0.5, 2.0, 0.5, None, 1.0]) == [3, 1, 3, None, 2]
    assert ranks([0.0, 1.0, 0.0], keep_zero=False) == [None, 1, None]
    assert ranks([]) == []


def test_rrf_sums_one_over_k_plus_rank() -> None:
    fused = rrf([[1, 2, None], [2, None, 1]], k=60)
    assert fused == pytest.approx([1 / 61 + 1 / 62, 1 / 62, 1 / 61])
    with pytest.raises(ValueError, match="same candidates"):
        rrf([[1, 2], [1]])


def test_fusion_ranks_a_candidate_good_in_both_above_one_good_in_one() -> None:
    # 0: best by words, worst by meaning; 1: second by words, best by meaning;
    # 2: by meaning only; 3: by words only (no vector yet)
    bm25 = [3.0, 2.0, 0.0, 0.5]
    cosine = [0.05, 0.70, 0.60, None]
    fused = fuse(bm25, cosine)
    order = sorted(range(4), key=lambda i: -fused[i])
    assert order == [1, 0, 2, 3]
    assert fused[3] == pytest.approx(1 / (RRF_K + 3))  # no vector: its words alone


def test_fusion_finds_what_words_alone_miss() -> None:
    # "what does the user eat" shares no word with "I'm vegan": BM25 0, cosine highest
    fused = fuse([0.0, 0.0, 1.2], [0.41, 0.02, 0.10])
    assert fused[0] > fused[1] and fused[0] > 0.0


def test_fusion_does_not_depend_on_the_candidates_order() -> None:
    bm25 = [1.0, 1.0, 0.0, 2.0]
    cosine = [0.3, None, 0.3, 0.1]
    fused = fuse(bm25, cosine)
    order = [3, 1, 0, 2]
    again = fuse([bm25[i] for i in order], [cosine[i] for i in order])
    assert again == [fused[i] for i in order]


def test_a_candidate_with_neither_signal_scores_zero() -> None:
    assert fuse([0.0, 1.0], [None, None]) == [0.0, pytest.approx(1 / 61)]
    with pytest.raises(ValueError):
        fuse([1.0], [])


def test_similarities_are_cosines_of_unit_vectors_and_none_without_a_vector() -> None:
    query = np.array([1.0, 0.0], np.float32)
    vectors = {"a": np.array([0.6, 0.8], np.float32), "b": np.array([0.0, 1.0], np.float32)}
    assert similarities(query, ["a", "x", "b"], vectors) == [
        pytest.approx(0.6), None, pytest.approx(0.0),
    ]  # fmt: skip
    assert similarities(query, ["x"], {}) == [None]


def test_a_blend_keeps_a_candidate_far_ahead_on_one_signal_ahead() -> None:
    # RRF sees only ranks: a runaway BM25 winner and a narrow one count the same.
    lexical = [9.0, 0.5, 0.4]
    cosine: list[float | None] = [0.28, 0.30, 0.10]
    scores = blend(lexical, cosine)
    assert scores.index(max(scores)) == 0
    assert fuse(lexical, cosine)[0] == fuse(lexical, cosine)[1]  # RRF: a tie


def test_a_blend_scores_a_candidate_without_a_vector_by_its_words() -> None:
    assert blend([2.0, 1.0], [None, 0.5]) == [1.0, 0.5 * 0.5]


def test_a_blend_of_one_signal_is_that_signal_scaled() -> None:
    assert blend([0.0, 0.0], [0.2, 0.6]) == [0.0, 0.5]
    assert blend([4.0, 2.0], [0.3, 0.3]) == [0.5, 0.25]


def test_recall_ranks_by_words_alone_until_something_has_a_vector() -> None:
    assert relevance([3.0, 1.0], [None, None]) == [3.0, 1.0]
    assert relevance([3.0, 1.0], [0.1, 0.9]) == blend([3.0, 1.0], [0.1, 0.9])
