"""Budgets are counted on the text a reader sees; ``exceeds`` says whether a text is over
one without counting a text too long to be within it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memlineage.tokens import (
    ENCODING,
    LONGEST_TOKEN_BYTES,
    TiktokenTokenizer,
    _encoding,
    default_tokenizer,
    exceeds,
)


class Counting(TiktokenTokenizer):
    """The default encoding, counting how many texts it was asked to count."""

    def __init__(self) -> None:
        super().__init__(ENCODING)
        self.counted = 0

    def count(self, text: str) -> int:
        self.counted += 1
        return super().count(text)


def test_the_longest_token_is_the_encodings_own() -> None:
    longest = max(len(token) for token in _encoding(ENCODING).token_byte_values())
    assert LONGEST_TOKEN_BYTES[ENCODING] == longest


def test_the_text_with_the_fewest_tokens_for_its_length_is_judged_exactly() -> None:
    """The longest token is 128 spaces: 128 x budget spaces are exactly the budget (not
    over it), one character more is over it."""
    tokenizer = default_tokenizer()
    for budget in (1, 3, 5):
        spaces = " " * (128 * budget)
        assert tokenizer.count(spaces) == budget
        assert not exceeds(tokenizer, spaces, budget)
        assert exceeds(tokenizer, spaces + "x", budget)


def test_a_summary_far_over_its_budget_is_not_counted() -> None:
    tokenizer = Counting()
    text = "\n".join(f"- The fee of rack {n} is {n * 7} EUR." for n in range(5_000))
    assert exceeds(tokenizer, text, 400)
    assert tokenizer.counted == 0
    assert not exceeds(tokenizer, "- The fee is 40 EUR.", 400)
    assert tokenizer.counted == 1


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([" ", "  ", "\n", "a", "fee", "40", "EUR.", "é", "日本", "-", "=" * 16]),
        max_size=400,
    ),
    st.integers(0, 60),
)
def test_exceeds_says_what_the_count_says(pieces: list[str], budget: int) -> None:
    text = "".join(pieces)
    assert exceeds(default_tokenizer(), text, budget) == (default_tokenizer().count(text) > budget)
