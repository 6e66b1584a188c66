"""BM25 over a recall's own candidates (relevance.py): pure, no store."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memlineage.recall.relevance import bm25, document, prefixes_of, stem

HERE = Path(__file__).parent


def ranking_texts() -> list[str]:
    lines = (HERE / "data" / "recall_ranking.jsonl").read_text().splitlines()
    return [json.loads(line)["text"] for line in lines if line.strip()]


@pytest.mark.parametrize(
    ("query", "text"),
    [
        ("died", "The old oak in the yard is dying."),  # Snowball rewrites "dying" to "die"
        ("lies", "The cabin key is lying under the mat."),
        ("studies", "Priya will study marine biology."),
        ("happiness", "Tom is happy in Lisbon."),
        ("painting", "Melanie paints landscapes on Sundays."),
        ("possibilities", "She asked about the possibility of a refund."),
        ("cries", "The baby cry woke us."),
        ("tied", "Tying knots is her hobby."),
    ],
)
def test_a_query_word_finds_every_inflection_of_its_stem(query: str, text: str) -> None:
    assert bm25([query], [text])[0] > 0


def test_the_shortcut_never_misses_a_word_that_the_full_split_would_count() -> None:
    # document() splits only texts that contain a stem's prefix: over every word
    # of the ranking cases, it counts exactly what splitting every text counts.
    texts = ranking_texts()
    words = {w for t in texts for w in re.findall(r"[^\W_]+", t.lower())}
    for word in sorted(words):
        wanted = frozenset({stem(word)})
        prefixes = prefixes_of(wanted)
        for text in texts:
            full = sum(stem(w) in wanted for w in re.findall(r"[^\W_]+", text.lower()))
            assert sum(document(text, wanted, prefixes).values()) == full, (word, text)


def test_a_rare_word_outweighs_a_common_one() -> None:
    texts = [f"The garden party was fun, note {n}." for n in range(8)]
    texts.append("The garden has one tulip.")
    scores = bm25(["garden", "tulip"], texts)
    assert max(range(len(texts)), key=scores.__getitem__) == len(texts) - 1


def test_documents_without_any_term_make_a_term_rarer() -> None:
    texts = ["Ana likes chess.", "Ana likes tea."]
    alone = bm25(["chess"], texts)
    among_many = bm25(["chess"], texts, unmatched=50)
    assert among_many[0] > alone[0] > 0 and among_many[1] == alone[1] == 0


def test_no_term_no_score_and_the_same_input_scores_the_same() -> None:
    texts = ranking_texts()
    assert bm25([], texts) == [0.0] * len(texts)
    assert bm25(["chess", "children"], texts) == bm25(["chess", "children"], texts)


def test_every_word_of_a_real_vocabulary_contains_its_stems_prefix(shared_data: Path) -> None:
    # The shortcut's premise, over LoCoMo's whole vocabulary: a text that holds a
    # word holds the prefix of that word's stem, so no occurrence is skipped.
    raw = (shared_data / "locomo" / "locomo10.json").read_text("utf-8")
    words = sorted(set(re.findall(r"[^\W_]+", raw.lower())))
    assert len(words) > 5000
    missed = [w for w in words if not any(p in w for p in prefixes_of(frozenset({stem(w)})))]
    assert missed == []
