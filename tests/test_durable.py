"""The hot summary by value: durable facts over chatter (meaning/durable.py).

The facts and the chatter are written by hand; a summary over its budget keeps
every durable fact hot and moves chatter to cold, and says so (both backends).
"""

from __future__ import annotations

import pytest

from memlineage import Memory, render
from memlineage.meaning.durable import durable_text

DURABLE = [
    "My licence plate is 84-KL-22.",
    "Our family doctor is Dr. Inês Moura at the Lapa clinic.",
    "My tax number is 245 118 903.",
    "My blood type is O negative.",
    "My passport number is CB123456.",
    "My partner's name is Rui.",
    "My phone number is +351 912 345 678.",
    "My email is ana@example.com.",
    "My birthday is on 14 March.",
    "Our home address is Rua das Flores 12, Porto.",
    "My employer is Farfetch.",
    "My insurance policy number is AX-99-1207.",
    "My daughter's school is Escola Básica da Foz.",
    "I take 50 mg of sertraline every morning.",
    "My bank is Millennium BCP.",
    "The Wi-Fi password is sunflower42.",
    "My dentist is Dr. Costa.",
    "My son is called Tiago.",
    "My car is a 2019 Renault Clio.",
    "I live in Porto, near the Ribeira.",
]
CHATTER = [
    "Made pancakes for breakfast.",
    "Had a nice walk by the river.",
    "Watched a film with friends tonight.",
    "The weather was lovely today.",
    "Tried a new café downtown, it was fine.",
    "Long day at work, glad it's over.",
    "My kids are so excited about summer break!",
    "Our trip was so much fun.",
]


@pytest.mark.parametrize("text", DURABLE)
def test_durable_facts_are_read_as_such(text: str) -> None:
    assert durable_text(text)


@pytest.mark.parametrize("text", CHATTER)
def test_chatter_is_not_a_durable_fact(text: str) -> None:
    assert not durable_text(text)


def test_the_hot_summary_keeps_durable_facts_over_newer_chatter(memory: Memory) -> None:
    events, k = [], 0
    for n in range(240):
        events.append({"id": f"c-{n}", "subject": "u", "text": f"{CHATTER[n % 8]} ({n})"})
        if n % 12 == 5 and k < len(DURABLE):
            events.append({"id": f"d-{k}", "subject": "u", "text": DURABLE[k]})
            k += 1
    memory.add(events)
    assert memory.consolidate("u", budget=600).switched
    recalled = memory.recall("u", budget=600)
    text = render(recalled)
    missing = [fact for fact in DURABLE if fact not in text]
    assert missing == []  # the answer to every question on a durable fact is hot
    assert "older events not shown: recall with a query to find them" in text
    assert recalled.left_out.cold_unmatched > 100
