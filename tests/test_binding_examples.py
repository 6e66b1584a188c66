"""What binds the agent (meaning/binding.py): more labelled examples, read as a user would.

A rule, a permission, the subject's own aversion or stated choice, an open item
and both sides of an unresolved conflict bind; a question, a story, someone
else's taste, enthusiasm, a number or a date do not.
"""

from __future__ import annotations

import pytest

from memlineage.meaning.binding import binding_reasons
from memlineage.meaning.extract import event_items, expected_open_items
from memlineage.model import Event

BINDING = [
    "Never deploy on Fridays.",
    "Please always reply in French.",
    "Do not call me after 9pm.",
    "The deploy key has write:releases only.",
    "I hate cilantro.",
    "I do not eat shellfish.",
    "I prefer tea to coffee.",
    "TODO: book the venue for the offsite.",
    "Caroline: I don't eat meat.",
    "I still have to renew my passport.",
    "We still need to pick a venue for the offsite.",
]
NOT_BINDING = [
    "Should I keep sending the Monday digest? No, thanks.",
    "Bob said he hates sushi.",
    "I love that!",
    "Caroline: I love painting, it is my hobby.",
    "I didn't go to the party.",
    "I walked 1650 steps today.",
    "The review is on June 4.",
    "My dentist is Dr. Patel.",
    "I used to love running. Not anymore.",
    "Melanie: We always look forward to our family camping trip.",
    "Love and acceptance should be everyone's right.",
    "It made me think how much work we still have to do for LGBTQ rights.",
    "It shows how far we still have to go.",
    "Caroline: It made me think how much work we still have to do for LGBTQ rights.",
]


def reasons(text: str, **kw: object) -> tuple[str, ...]:
    event = Event(id="e-1", subject="user-7", text=text, at="2026-03-04T10:00:00Z", **kw)  # type: ignore[arg-type]
    opened = expected_open_items([event])
    return binding_reasons(event, event_items(event), open_items=opened)


@pytest.mark.parametrize("text", BINDING)
def test_binds(text: str) -> None:
    assert reasons(text), text


@pytest.mark.parametrize("text", NOT_BINDING)
def test_does_not_bind(text: str) -> None:
    assert reasons(text) == (), text


def test_an_explicit_kind_and_a_conflict_side_bind_whatever_the_words() -> None:
    assert reasons("The lake trip.", kind="constraint") == ("constraint",)
    event = Event(id="e-1", subject="user-7", text="I walked 1650 steps today.")
    assert binding_reasons(event, event_items(event), conflict_sides={"e-1"}) == ("conflict side",)


@pytest.mark.parametrize(
    "text",
    [
        "Caroline: Books keep me going and never give up!",  # a clause inside a story
        "Melanie: We don't go often, usually once a year.",  # a habit, not a refusal
        "Melanie: These figurines remind me of family love.",  # asks nothing
        "Melanie: It's so peaceful waking up to the sound of birds.",
    ],
)
def test_chat_stories_do_not_bind(text: str) -> None:
    assert reasons(text) == (), text


@pytest.mark.parametrize(
    "text",
    [
        "James: You must love it. How do you feel about starting?",
        "James: Don't know what I'd do without them.",
        "James: Don't be afraid to seek help if you need it.",
        "James: He has a blast! Always a joy to see him so happy.",
    ],
)
def test_conversation_is_no_rule(text: str) -> None:
    assert reasons(text) == (), text
