"""A long text's token count is the sum of its lines' counts (tokens.py), exactly.

The budget of a summary is counted on the text the agent reads; a worker's next
summary repeats most lines of the last one, so a long text is counted line by
line with each line's count remembered. That is only right if cutting the text
at those places never changes what the encoder makes of it: the encoder itself
is the judge here, on texts made to stress the cuts (blank lines, carriage
returns, lines starting with spaces, Unicode spaces, digits and punctuation
around newlines).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memlineage.tokens import CACHED_TEXT, TiktokenTokenizer, forget_counts

TOKENIZER = TiktokenTokenizer()
ALPHABET = st.sampled_from(
    [*"ab Z\u00e99-.:'s\n\n\r\t", "\u00a0", "\u2028", "\u3000", "\x85", "\x1c", "\u2019", "l"]
)


def encoded(text: str) -> int:
    return TOKENIZER.count_uncached(text)


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.text(ALPHABET, max_size=40), min_size=1, max_size=60))
def test_a_long_text_counts_as_the_encoder_counts_it_whole(lines: list[str]) -> None:
    text = "\n".join(lines)
    text += "x" * max(0, CACHED_TEXT + 1 - len(text))  # long: counted line by line
    forget_counts()
    assert TOKENIZER.count(text) == encoded(text)
    assert TOKENIZER.count(text + "\nmore") == encoded(text + "\nmore")  # lines remembered


def test_a_summary_counts_as_the_encoder_counts_it_whole() -> None:
    lines = ["Rules and constraints:", "2024-03-01:"]
    lines += [f"- Alice: The budget for rack {n} is ${n},000. (2024-03-{n % 28 + 1:02d})"
              for n in range(300)]  # fmt: skip
    text = "\n".join(lines) + "\n\n(over the budget of 500 tokens)"
    assert TOKENIZER.count(text) == encoded(text)
