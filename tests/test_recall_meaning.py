"""Recall by meaning: once a tenant's events are embedded, a query finds what it means.

The built-in embedder (wordllama, offline) on both backends. Each test reads
the context an agent gets and asserts what it says, against a recall by words
alone on the same store.
"""

from __future__ import annotations

from memlineage import Memory

PASTIME = "Melanie enjoys pottery on weekends."
FILLER = [
    "The quarterly report is due on March 3.",
    "I moved to Lyon in 2021.",
    "My sister works as a nurse in Bordeaux.",
    "The staging database is 40 GB.",
    "Our office wifi password changed last week.",
    "The invoice for the printer arrived today.",
    "I renewed my passport in January.",
    "The car needs new tyres before winter.",
    "Our landlord raised the rent by 3%.",
    "The team standup moved to 9:30.",
    "My laptop battery lasts about four hours.",
    "The train to Paris was delayed again.",
]
QUERY = "what does she do for fun"


def add_story(memory: Memory) -> None:
    events = [{"id": "pastime", "subject": "mel", "text": PASTIME}]
    events += [{"id": f"f-{n}", "subject": "mel", "text": t} for n, t in enumerate(FILLER)]
    memory.add(events)


def shown(memory: Memory, budget: int) -> list[str]:
    return [p.text for p in memory.recall("mel", query=QUERY, budget=budget).context]


def test_a_query_finds_an_event_that_shares_no_word_with_it(memory: Memory) -> None:
    add_story(memory)
    assert PASTIME not in shown(memory, 60)  # words alone: "fun" is nowhere
    memory.embed()
    top = shown(memory, 60)
    assert top[0] == PASTIME


def test_a_cold_event_comes_back_by_meaning(memory: Memory) -> None:
    add_story(memory)
    memory.consolidate("mel", budget=40)  # room for three lines: the rest is cold
    rent = "Our landlord raised the rent by 3%."
    assert "f-8" in memory.recall("mel").cold
    question = "how much is the housing cost"
    before = memory.recall("mel", query=question, budget=200)
    assert rent not in [p.text for p in before.context]
    memory.embed()
    after = memory.recall("mel", query=question, budget=200)
    found = [p for p in after.context if p.text == rent]
    assert found and found[0].origin == "cold"


def test_an_event_added_after_the_embedding_job_is_still_ranked_by_its_words(
    memory: Memory,
) -> None:
    add_story(memory)
    memory.embed()
    memory.add([{"id": "late", "subject": "mel", "text": "Melanie finds pottery fun."}])
    texts = shown(memory, 200)
    assert "Melanie finds pottery fun." in texts and PASTIME in texts


def test_a_revoked_event_never_comes_back_by_meaning(memory: Memory) -> None:
    add_story(memory)
    memory.embed()
    memory.revoke("pastime", reason="wrong person")
    assert PASTIME not in shown(memory, 500)


def test_work_embeds_what_was_added_since_the_tenant_chose_an_embedder(memory: Memory) -> None:
    add_story(memory)
    memory.work()
    assert memory.store.vectors(memory.tenant, "mel", ["pastime"]) == {}  # no embedder chosen
    memory.embed()
    memory.add([{"id": "late", "subject": "mel", "text": "Melanie took up the cello."}])
    memory.work()
    assert list(memory.store.vectors(memory.tenant, "mel", ["late"])) == ["late"]


def test_a_question_finds_its_answer_far_ahead_of_other_questions(memory: Memory) -> None:
    """A chat stream is full of questions; a query phrased as a question must land on
    the line that answers it, with the lines that merely ask something too far behind
    (their words share nothing with the query: only meaning ranks here)."""
    answer = "Caroline: I adore sushi and ramen."
    asked = [
        "Melanie: What are you up to this weekend?",
        "Melanie: How was your trip?",
        "Melanie: Have you seen the new film?",
        "Melanie: What do you think about it?",
    ]
    said = [answer, *asked]
    memory.add([{"id": f"t-{n}", "subject": "chat", "text": t} for n, t in enumerate(said)])
    memory.embed()
    context = memory.recall("chat", query="What food does she enjoy?", budget=400).context
    score = {p.text: p.score for p in context}
    assert set(score) == set(said)
    assert all(score[answer] >= 2 * score[q] for q in asked), score
