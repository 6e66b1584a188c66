"""What is current: a later event that updates an earlier one wins, though nobody wrote
``supersedes`` (meaning/updates.py).

The streams and their expected readings are written by hand. A summary or a
recall that shows the older event shows its update with it, at every budget
(both backends); unrelated facts never update each other.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from memlineage import Memory
from memlineage.consolidation import gate
from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.consolidation.parts import binding_parts, event_parts
from memlineage.consolidation.render import render_summary
from memlineage.lineage.audit import why_text
from memlineage.meaning.extract import expected_open_items, extract_items
from memlineage.meaning.updates import CHANGE_CUE, SAME_SLOT, find_updates
from memlineage.model import Event
from memlineage.recall.prompt import render

# (older, newer, rule): the update the reader must see with the older event
UPDATES = [
    ("I live in Porto, in a flat near the Ribeira.",
     "We moved to Lisbon this weekend; the Porto flat is handed back.", SAME_SLOT),
    ("I can't do flights before 9am.", "Update: I can do the 7am flight after all.", CHANGE_CUE),
    ("I'm vegetarian.", "I've started eating fish again, pescatarian now.", SAME_SLOT),
    ("Never email me after 9 pm.", "You can email me any time now, I changed jobs.", CHANGE_CUE),
    ("Book a table for 6.", "Make that 8 people.", SAME_SLOT),
    ("My number is 555-0100.", "My new number is 555-0199.", SAME_SLOT),
    ("I work at Acme as a data engineer.", "I work at Globex now.", SAME_SLOT),
]  # fmt: skip

# pairs that must NOT update each other: someone else's move, a repeat, chatter
UNRELATED = [
    ("I live in Boston.", "My sister moved to Denver last year."),
    ("Take the blue pill at 8am.", "Take the blue pill at 8am."),
    ("The gym costs 40 dollars per month.", "I'm now reading a novel about Lisbon."),
    ("I like my job.", "The weather is nice now."),
    ("My brother doesn't eat meat.", "I'm vegetarian."),
]

FILLER = [f"Made pancakes for breakfast on day {n}." for n in range(1, 13)]


def events(texts: list[str], speakers: list[str | None] | None = None) -> list[Event]:
    speakers = speakers or [None] * len(texts)
    return [
        Event(id=f"e{n}", subject="s", text=t, seq=n, speaker=speakers[n])
        for n, t in enumerate(texts)
    ]


@pytest.mark.parametrize("older, newer, rule", UPDATES)
def test_a_later_event_updates_the_earlier(older: str, newer: str, rule: str) -> None:
    found = find_updates(events([older, "Made pancakes for breakfast.", newer]))
    assert {k: (u.newer, u.rule) for k, u in found.items()} == {"e0": ("e2", rule)}


@pytest.mark.parametrize("older, newer", UNRELATED)
def test_unrelated_facts_never_update_each_other(older: str, newer: str) -> None:
    assert find_updates(events([older, newer])) == {}


def test_another_speakers_move_updates_nothing_of_mine() -> None:
    said = events(["I live in Boston.", "I moved to Denver last week."], ["Caroline", "Melanie"])
    assert find_updates(said) == {}


def test_the_newest_word_on_a_matter_wins() -> None:
    found = find_updates(events(["I live in Porto.", "I moved to Lisbon.", "I moved to Rome."]))
    assert {k: u.newer for k, u in found.items()} == {"e0": "e2", "e1": "e2"}


def _request(texts: list[str], budget: int | None) -> GenerationRequest:
    said = tuple(
        Event(id=f"e{n}", subject="s", text=t, seq=n, at=f"2024-03-{n + 1:02d}T10:00:00Z")
        for n, t in enumerate(texts)
    )
    items = tuple(extract_items(said))
    return GenerationRequest("s", said, items, (), expected_open_items(said), budget=budget)


def test_the_gate_refuses_an_update_moved_to_cold() -> None:
    request = _request([UPDATES[0][0], *FILLER[:2], UPDATES[0][1]], None)
    honest = DeterministicGenerator().output(request)
    args = (request.items, (), request.open_items)
    assert gate.check(*args, honest, request.events).passed
    newest_cold = replace(
        honest,
        statements=tuple(s for s in honest.statements if "e3" not in s.derived_from),
        cold=(*honest.cold, "e3"),
    )
    report = gate.check(*args, newest_cold, request.events)
    assert [(f.code, f.item) for f in report.failures] == [("updated_shown_as_current", "e0")]


@pytest.mark.parametrize("budget", [20, 40, 60, 90, 150])
def test_a_summary_never_shows_an_old_value_alone(budget: int) -> None:
    older, newer, _ = UPDATES[0]
    request = _request([older, *FILLER, newer], budget)
    output = DeterministicGenerator().output(request)
    shown = {s.text for s in output.statements}
    assert older not in shown or newer in shown
    assert gate.check(request.items, (), request.open_items, output, request.events).passed


@pytest.mark.parametrize("budget", [60, 120, 200, 500])
@pytest.mark.parametrize("older, newer, rule", UPDATES[:5])
def test_recall_never_shows_an_old_value_alone(
    memory: Memory, budget: int, older: str, newer: str, rule: str
) -> None:
    said = [older, *FILLER, newer]
    memory.add([{"id": f"e{n}", "subject": "u", "text": t} for n, t in enumerate(said)])
    for consolidated in (False, True):
        if consolidated:
            memory.consolidate("u", budget=budget)
        for query in (older, None):
            text = render(memory.recall("u", query, budget))
            assert older not in text or newer in text, (budget, query, text)


@pytest.mark.parametrize("budget", [30, 60, 120])
def test_a_warm_build_pairs_updates_as_a_cold_one(budget: int) -> None:
    """The built-in generator's update index is extended by the tail; a warm run over a
    tail that updates an old event gives a fresh process's output."""
    from memlineage.consolidation.generators.deterministic import forget_builds

    said = [UPDATES[0][0], *FILLER, UPDATES[3][0]]
    tail = [UPDATES[3][1], "Made pancakes again.", UPDATES[0][1]]
    forget_builds()
    generator = DeterministicGenerator()
    generator.output(_request(said, budget))  # the base, kept by this process
    warm = generator.output(_request(said + tail, budget))
    forget_builds()
    cold = DeterministicGenerator().output(_request(said + tail, budget))
    assert warm == cold
    shown = {s.text for s in warm.statements}
    for older, newer, _ in (UPDATES[0], UPDATES[3]):
        assert older not in shown or newer in shown


# -- binding over the history: a rule a later word lifts binds no more --

# (older rule or taste, the later word that lifts it): written before the code
LIFTED = [
    ("Never email me after 9 pm.", "You can email me any time now, I changed jobs."),
    ("I'm vegetarian.", "I've started eating fish again, pescatarian now."),
    ("Book a table for 6.", "Make that 8 people."),
    ("Don't call me on Sundays.", "Actually, calls on Sundays are fine now."),
    ("I hate cilantro.", "I actually like cilantro now."),
]
BINDING_HEADERS = ("Constraints:", "Preferences:", "Tasks:")


def _sections(summary: str) -> dict[str, str]:
    """Each line of a rendered summary with the kind header it stands under."""
    where, found = "", {}
    for line in summary.splitlines():
        if line.endswith(":") and not line.startswith("- "):
            where = line if not line[:4].isdigit() and line != "undated:" else where
        elif line.startswith("- "):
            found[line] = where
    return found


@pytest.mark.parametrize("budget", [None, 40, 80, 150])
@pytest.mark.parametrize("older, newer", LIFTED)
def test_a_lifted_rule_is_no_longer_shown_as_binding(
    older: str, newer: str, budget: int | None
) -> None:
    request = _request([older, *FILLER[:4], newer], budget)
    assert "e0" in find_updates(request.events)
    output = DeterministicGenerator().output(request)
    assert gate.check(request.items, (), request.open_items, output, request.events).passed
    shown = {s.text: s for s in output.statements}
    assert newer in shown  # the newest word on a binding matter binds in its place
    if older in shown:
        assert shown[older].kind not in ("constraint", "preference", "task")
    summary = render_summary(output.statements)
    for line, header in _sections(summary).items():
        if older in line:
            assert header not in BINDING_HEADERS, summary


def test_the_gate_refuses_a_lifted_rules_update_moved_to_cold() -> None:
    older, newer = LIFTED[0]
    request = _request([older, *FILLER[:2], newer], None)
    honest = DeterministicGenerator().output(request)
    without = replace(
        honest,
        statements=tuple(s for s in honest.statements if s.text not in (older, newer)),
        cold=(*honest.cold, "e0", "e3"),
    )
    report = gate.check(request.items, (), request.open_items, without, request.events)
    assert ("statement_missing", "e3") in [(f.code, f.item) for f in report.failures]


@pytest.mark.parametrize("older, newer", LIFTED)
def test_recall_shows_a_lifted_rule_under_no_binding_section(
    memory: Memory, older: str, newer: str
) -> None:
    said = [older, *FILLER[:4], newer]
    memory.add([{"id": f"e{n}", "subject": "u", "text": t} for n, t in enumerate(said)])
    for consolidated in (False, True):
        if consolidated:
            memory.consolidate("u")
        for query, budget in ((None, None), (older, 200), (None, 200)):
            recalled = memory.recall("u", query, budget)
            text = render(recalled)
            assert older not in text or newer in text, text
            section = ""
            for line in text.splitlines():
                if line.startswith("## "):
                    section = line
                elif older in line:
                    assert section not in ("## Constraints", "## Preferences"), text
                    assert (
                        line.endswith("(earlier; updated since)")
                        or "(earlier; updated since) (" in line
                    ), text
            assert newer in text or recalled.left_out.budget_count, text


def test_why_shows_the_update_and_the_rule_that_found_it(memory: Memory) -> None:
    older, newer, _ = UPDATES[0]
    said = [older, *FILLER[:2], newer]
    memory.add([{"id": f"e{n}", "subject": "u", "text": t} for n, t in enumerate(said)])
    memory.consolidate("u")
    found = memory.why("u", "Porto").to_json()
    links = {link["event_id"]: link for match in found["matches"] for link in match["chain"]}
    assert links["e0"]["updated_by"] == {"event_id": "e3", "rule": SAME_SLOT, "on": "residence"}
    assert links["e3"]["updates"] == [{"event_id": "e0", "rule": SAME_SLOT, "on": "residence"}]
    assert "updated by e3 (same-slot on 'residence')" in why_text(memory.why("u", "Porto"))


# -- a long document binds by its rule-like part, not whole --

NOTES = " ".join(
    [
        "Everything in these notes is about the Madrid office.",
        *[
            f"Item {n}: the team reviewed the quarterly plan and the hiring timeline."
            for n in range(25)
        ],
        "Never share the client's figures outside the team.",
        *[f"Point {n}: the office move is still planned for the spring." for n in range(20)],
    ]
)


def test_a_long_document_binds_by_its_rule_part(memory: Memory) -> None:
    assert len(NOTES.split()) > 400
    said = [NOTES, "I prefer morning meetings.", "Lunch was great today.", "The printer is fixed."]
    memory.add([{"id": f"e{n}", "subject": "u", "text": t} for n, t in enumerate(said)])
    raw = memory.recall("u", budget=300)  # no summary yet: the raw events
    text = render(raw)
    assert raw.mode == "raw" and raw.tokens is not None and raw.tokens <= 300
    assert "Never share the client's figures outside the team." in text
    assert "I prefer morning meetings." in text
    assert "Item 3:" not in text and "Point 19:" not in text  # the parts that do not bind
    result = memory.consolidate("u", budget=300)
    assert result.switched and result.artifact.manifest.over_budget is False
    output = result.artifact.output
    rule_parts = [s for s in output.statements if "Never share the client's figures" in s.text]
    assert [s.kind for s in rule_parts] == ["constraint"] and rule_parts[0].part is not None
    assert "e0" in output.cold  # the rest of the document, for a query
    assert "I prefer morning meetings." in {s.text for s in output.statements}
    text = render(memory.recall("u", budget=300))
    assert "Never share the client's figures outside the team." in text
    assert "I prefer morning meetings." in text
    assert "Point 19:" in render(memory.recall("u", "office move spring", 2000))


def test_the_gate_refuses_a_document_shown_by_a_part_that_does_not_bind() -> None:
    request = _request([NOTES, "The printer is fixed."], 300)
    honest = DeterministicGenerator().output(request)
    args = (request.items, (), request.open_items)
    assert gate.check(*args, honest, request.events).passed
    [rule] = [s for s in honest.statements if "Never share" in s.text]
    assert rule.part is not None
    first = event_parts(NOTES)[0]
    other = replace(rule, text=first, part=(1, rule.part[1]), kind="observation")
    swapped = replace(
        honest, statements=tuple(other if s is rule else s for s in honest.statements)
    )
    report = gate.check(*args, swapped, request.events)
    assert ("statement_missing", "e0") in [(f.code, f.item) for f in report.failures]


class BothCold(DeterministicGenerator):
    """The built-in output with an update and what it updates both left to cold."""

    def generate(self, request: GenerationRequest) -> dict[str, Any]:
        out = super().generate(request)
        pair = {"e0", f"e{len(request.events) - 1}"}
        out["statements"] = [s for s in out["statements"] if not pair & set(s["derivedFrom"])]
        out["cold"] = sorted(set(out["cold"]) | pair)
        return out


@pytest.mark.parametrize("budget", [60, 120, 500])
def test_a_cold_old_value_found_by_a_query_comes_with_its_cold_update(
    memory: Memory, budget: int
) -> None:
    older, newer = "I work at Acme as a data engineer.", "I work at Globex now."
    said = [older, *FILLER, newer]
    memory.add([{"id": f"e{n}", "subject": "u", "text": t} for n, t in enumerate(said)])
    assert memory.consolidate("u", BothCold()).switched
    recalled = memory.recall("u", "Acme engineer", budget)
    assert recalled.mode == "summary" and {"e0", f"e{len(said) - 1}"} <= set(recalled.cold)
    text = render(recalled)
    assert older not in text or newer in text, text
    if budget >= 120:
        assert older in text and newer in text, text


def test_a_chat_lines_parts_bind_as_the_chat_line_does() -> None:
    """A line that opens with its speaker's name is read as chat, part by part as whole:
    "Send the report on Friday." is said to the other person, not a rule for the agent."""
    filler = " ".join(f"We talked about the garden and the weather, day {n}." for n in range(15))
    text = (
        f"Caroline: {filler} Send the report on Friday. {filler} "
        f"{filler} Please don't email me after 9 pm."
    )
    event = Event(id="c-1", subject="s", text=text, seq=1)
    parts = event_parts(text)
    assert len(parts) > 2
    own = [n for n, part in enumerate(parts) if "don't email me" in part]
    assert binding_parts(event, parts) == frozenset(own)
