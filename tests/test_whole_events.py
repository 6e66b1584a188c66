"""What the agent reads (issue 24): whole events, binding items first, budgets kept.

Each test asserts the rendered text a reader sees (the summary, or a recall
rendered as prompt text), never the generator's inputs. The failures they
guard against were seen on real chat text: an answer cut from its question,
two events sharing a line, a condition dropped from its rule, a name cut at
"Dr.", a speaker lost, a long event's later sentences gone for good.
"""

from __future__ import annotations

import json
from typing import Any

from memlineage import Memory
from memlineage.recall.prompt import render
from memlineage.tokens import default_tokenizer
from test_statements import add, summary_of


def lines_with(text: str, words: str) -> list[str]:
    return [line for line in text.splitlines() if words in line]


def test_an_answer_stays_with_its_question(memory: Memory) -> None:
    add(memory, {"id": "m-1", "text": "Should I keep sending the Monday digest? No, thanks."})
    summary = summary_of(memory)
    assert lines_with(summary, "Monday digest") == [
        "- Should I keep sending the Monday digest? No, thanks."
    ]


def test_two_events_never_share_a_line_and_keep_their_not_anymore(memory: Memory) -> None:
    add(
        memory,
        {"id": "m-1", "text": "I used to love running. Not anymore."},
        {"id": "m-2", "text": "I like my job. Not anymore."},
    )
    summary = summary_of(memory)
    assert sorted(lines_with(summary, "Not anymore.")) == [
        "- I like my job. Not anymore.",
        "- I used to love running. Not anymore.",
    ]


def test_a_condition_stays_with_its_rule_and_a_title_with_its_name(memory: Memory) -> None:
    add(
        memory,
        {"id": "m-1", "text": "Order groceries on Sunday. If I'm travelling, skip that week."},
        {"id": "m-2", "text": "My dentist is Dr. Patel."},
    )
    summary = summary_of(memory)
    assert lines_with(summary, "groceries") == [
        "- Order groceries on Sunday. If I'm travelling, skip that week."
    ]
    assert lines_with(summary, "dentist") == ["- My dentist is Dr. Patel."]


def test_a_chat_line_keeps_its_speaker(memory: Memory) -> None:
    add(memory, {"id": "t-1", "text": "I moved to Lisbon last year.", "speaker": "Caroline"})
    summary = summary_of(memory)
    assert lines_with(summary, "Lisbon") == ["- Caroline: I moved to Lisbon last year."]
    recalled = render(memory.recall("user-7", query="Lisbon", budget=200), "markdown")
    assert next(line for line in recalled.splitlines() if "Lisbon" in line).startswith(
        "- Caroline: I moved to Lisbon last year."
    )


FIVE = (
    "We spent the morning at the market. The stalls were crowded. "
    "I bought bread and cheese. My cousin found an old brass telescope. "
    "Then we walked home along the river."
)


def test_a_long_event_is_shown_whole_or_cold_whole_and_found_by_its_fourth_sentence(
    memory: Memory,
) -> None:
    add(memory, {"id": "m-5", "text": FIVE}, {"id": "c-1", "text": "Never call me before 9am."})
    assert lines_with(summary_of(memory), "market") == [f"- {FIVE}"]
    tight = summary_of(memory, budget=1)  # the rule binds; the story goes cold, whole
    assert "market" not in tight and "telescope" not in tight and "Never call me" in tight
    found = memory.recall("user-7", query="brass telescope", budget=200)
    assert [p.text for p in found.context if "m-5" in p.sources] == [FIVE]
    assert FIVE in render(found, "markdown")


def test_two_budgets_of_two_projects_show_their_projects(memory: Memory) -> None:
    add(
        memory,
        {"id": "b-1", "text": "The budget is $5,000.", "project": "orion"},
        {"id": "b-2", "text": "The budget is $8,000.", "project": "vega"},
    )
    summary = summary_of(memory).splitlines()
    assert summary.index("[orion] Observations:") < summary.index("- The budget is $5,000.")
    assert summary.index("[vega] Observations:") < summary.index("- The budget is $8,000.")
    recalled = render(memory.recall("user-7", query="budget", budget=200), "markdown")
    assert "- [orion] The budget is $5,000." in recalled
    assert "- [vega] The budget is $8,000." in recalled


def chat(speaker: str, n: int) -> list[dict[str, Any]]:
    """``n`` chat turns of ``speaker``, all different, none binding (no rule, no aversion)."""
    topics = ["pottery", "hiking", "a new recipe", "the garden", "a road trip", "painting"]
    friends = ["my sister", "an old friend", "the neighbours", "my cousin", "a colleague"]
    places = ["by the lake", "downtown", "at the studio", "in the park", "near the coast"]
    moods = ["it went well", "it was relaxing", "we laughed a lot", "it took ages"]
    return [
        {
            "id": f"{speaker}-{i}",
            "subject": speaker,
            "text": f"{speaker}: I tried {topics[i % 6]} with {friends[i % 5]}"
            f" {places[i % 7 % 5]}, and {moods[i % 4]}.",
            "at": f"2026-02-{1 + i % 28:02d}T10:00:00Z",
        }
        for i in range(n)
    ]


def test_the_hot_summary_of_a_200_event_chat_keeps_its_budget(memory: Memory) -> None:
    memory.add(chat("Caroline", 200))
    result = memory.consolidate("Caroline", force=True, budget=500)
    assert result.switched and result.artifact.manifest.over_budget is False
    summary = memory.recall("Caroline").summary or ""
    assert 0 < default_tokenizer().count(summary) <= 500
    assert "over the budget" not in summary


def test_a_recall_of_two_subjects_keeps_its_budget_in_every_format(memory: Memory) -> None:
    memory.add(chat("Caroline", 120) + chat("Melanie", 120))
    for subject in ("Caroline", "Melanie"):
        memory.consolidate(subject, force=True)
    found = memory.recall(subjects=["Caroline", "Melanie"], query="road trip garden", budget=500)
    tokens = default_tokenizer().count
    for fmt in ("markdown", "text", "json"):
        assert tokens(render(found, fmt)) <= 500, fmt
    assert json.loads(render(found, "json"))["overBudget"] is False


CODE = (
    "Here is the loop I use:\n```python\nfor x in items:\n    if x:\n        total += x\n"
    "print(total)\n```"
)
LAID_OUT = (
    "- Here is the loop I use:\n  ```python\n  for x in items:\n      if x:\n"
    "          total += x\n  print(total)\n  ```"
)


def test_code_keeps_its_layout_in_the_summary_and_in_recall(memory: Memory) -> None:
    """A Python loop flattened onto one line is ambiguous: its lines and indentation stay."""
    memory.add([{"id": "c-1", "subject": "user-7", "text": CODE}])
    assert LAID_OUT in render(memory.recall("user-7", query="loop", budget=300))
    assert memory.consolidate("user-7").switched
    assert LAID_OUT in (memory.recall("user-7").summary or "")
    assert LAID_OUT in render(memory.recall("user-7", query="loop", budget=300), "text")


SCOPED = " ".join(
    [
        "Everything in these notes is about the Madrid office.",
        *[f"Item {n}: the team reviewed the plan and the hiring timeline." for n in range(30)],
        "The office move is planned for the spring, after the lease ends.",
    ]
)


def test_a_later_part_keeps_the_scope_its_first_part_gives(memory: Memory) -> None:
    memory.add([{"id": "m-1", "subject": "user-7", "text": SCOPED}])
    for consolidate in (False, True):
        if consolidate:
            assert memory.consolidate("user-7").switched
        text = render(memory.recall("user-7", query="office move lease", budget=200))
        [line] = [line for line in text.splitlines() if "lease ends" in line]
        assert "Item 0:" not in line  # a later part, not the first
        assert "which opens: Everything in these notes is about the Madrid office.)" in line
