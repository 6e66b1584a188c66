"""Recall by query within a token budget, on both backends (docs/recall.md)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from memlineage import BadInput, Memory, Recall, render
from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.interfaces.cli import main
from memlineage.meaning import extract
from memlineage.recall.context import count_tokens, query_terms
from memlineage.store.base import SqlStore
from memlineage.store.protocol import StoredKinds

HERE = Path(__file__).parent

CONSTRAINTS = [
    ("c-1", "Never email the client after 9 pm."),
    ("c-2", "Do not share the staging credentials with contractors."),
    ("c-3", "Always copy the legal team on contract changes."),
]
NARRATIVE = [
    f"The team talked about the garden party, the weather and the music playlist {n}."
    for n in ("again", "once more", "at lunch", "over coffee", "in the hallway", "by chat")
]


def ev(id_: str, text: str, subject: str = "user-7", **extra: Any) -> dict[str, Any]:
    return {"id": id_, "subject": subject, "text": text, **extra}


def seed(memory: Memory, subject: str = "user-7") -> None:
    events = [ev(f"{subject}:{i}", t, subject, kind="constraint") for i, t in CONSTRAINTS]
    events += [ev(f"{subject}:n-{n}", t, subject) for n, t in enumerate(NARRATIVE)]
    memory.add(events)


def shown_text(recalled: Any) -> str:
    return render(recalled, "markdown")


def context_ids(recalled: Recall) -> list[str]:
    return [s for p in recalled.context for s in p.sources]


class ColdNarrative(DeterministicGenerator):
    """The built-in output, with events that carry no item and no open task left to cold.

    It stands for a generator that, over its budget, moves low-salience events to the
    cold layer; each event kept is one statement, verbatim.
    """

    def generate(self, request: GenerationRequest) -> dict[str, Any]:
        out = super().generate(request)
        keep = {item.source for item in request.items} | set(request.open_items)
        cold = [e.id for e in request.events if e.id not in keep]
        if out.get("statements"):  # a generator that writes statements: drop the others
            out["statements"] = [s for s in out["statements"] if set(s["derivedFrom"]) & keep]
            out["cold"] = sorted({*out["cold"], *cold})
            return out
        claims_of: dict[str, list[str]] = {}
        for claim in out["claims"]:
            for source in claim["derivedFrom"]:
                claims_of.setdefault(source, []).append(claim["key"])
        out["cold"] = cold
        if "summary" in out:
            out["summary"] = "\n".join(
                " ".join(e.text.split()) for e in request.events if e.id in keep
            )
        out["statements"] = [
            {
                "text": e.text,
                "derivedFrom": [e.id],
                "claims": claims_of.get(e.id, []),
                "at": e.at,
                "project": e.project,
                "contested": None,
                "kind": e.kind,
            }
            for e in request.events
            if e.id in keep
        ]
        return out


# -- the must-keep part --


@pytest.mark.parametrize("consolidated", [False, True])
def test_constraints_survive_an_unrelated_query_and_a_small_budget(
    memory: Memory, consolidated: bool
) -> None:
    seed(memory)
    if consolidated:
        assert memory.consolidate("user-7").switched
    recalled = memory.recall("user-7", query="garden party playlist", budget=110)
    assert recalled.mode == ("summary" if consolidated else "raw")
    text = shown_text(recalled)
    for _, constraint in CONSTRAINTS:
        assert constraint in text
    assert "## Constraints" in text
    assert recalled.over_budget is False
    assert recalled.tokens is not None and count_tokens(text) <= recalled.tokens <= 110
    assert recalled.left_out.budget_count > 0 and recalled.left_out.binding_count == 0
    assert set(recalled.left_out.budget_ids) <= {f"user-7:n-{n}" for n in range(len(NARRATIVE))}


@pytest.mark.parametrize("consolidated", [False, True])
def test_constraints_over_a_tiny_budget_fit_the_most_relevant_and_name_the_rest(
    memory: Memory, consolidated: bool
) -> None:
    """The budget is kept even when the binding part alone exceeds it: the constraints
    most relevant to the query are shown, and every rendering says how many are not."""
    seed(memory)
    if consolidated:
        assert memory.consolidate("user-7").switched
    recalled = memory.recall("user-7", query="staging credentials", budget=75)
    text = shown_text(recalled)
    assert "Do not share the staging credentials with contractors." in text
    assert "Never email the client" not in text and "garden party" not in text
    assert recalled.over_budget is False
    assert recalled.tokens is not None and count_tokens(text) <= recalled.tokens <= 75
    for fmt in ("text", "json"):
        assert count_tokens(render(recalled, fmt)) <= 75
    missing = len(CONSTRAINTS) - 1
    assert recalled.left_out.binding_count == missing
    assert {"user-7:c-1", "user-7:c-3"} <= set(recalled.left_out.budget_ids)
    total = missing + len(NARRATIVE)
    assert (
        f"({total} more passages left out for the token budget, {missing} of them binding)" in text
    )
    assert f"{missing} of them binding" in render(recalled, "text")
    assert json.loads(render(recalled, "json"))["leftOutBinding"] == missing


def test_a_hundred_rules_keep_a_small_budget_in_every_format(memory: Memory) -> None:
    memory.add(
        [ev(f"r-{n}", f"Never schedule meetings in room {n}.", kind="constraint")
         for n in range(100)]
    )  # fmt: skip
    for query in (None, "room 57"):
        recalled = memory.recall("user-7", query=query, budget=200)
        for fmt in ("markdown", "text", "json"):
            assert count_tokens(render(recalled, fmt)) <= 200, (query, fmt)
        shown = [p for p in recalled.context if p.must_keep]
        assert shown and recalled.left_out.binding_count == 100 - len(shown)
        assert "of them binding)" in shown_text(recalled)
        wire = recalled.to_json(include_claims=False)["left_out"]
        assert len(wire["budgetIds"]) == 20 and wire["budgetIdsNotListed"] == 80 - len(shown)
    assert "room 57." in shown_text(memory.recall("user-7", query="room 57", budget=80))


def test_constraints_survive_with_a_summary_that_left_narrative_cold(memory: Memory) -> None:
    seed(memory)
    assert memory.consolidate("user-7", ColdNarrative()).switched
    for query in (None, "weather", "credentials", "nothing matches this at all"):
        for budget in (None, 0, 50, 150, 10_000):
            recalled = memory.recall("user-7", query=query, budget=budget)
            text = shown_text(recalled)
            shown = sum(c in text for _, c in CONSTRAINTS)
            if budget is None or budget >= 150:
                assert shown == len(CONSTRAINTS), (query, budget)
            else:  # what a tiny budget cannot hold is named, never dropped silently
                missing = len(CONSTRAINTS) - shown
                assert recalled.left_out.binding_count == missing, (query, budget)
                assert f"{missing} of them binding" in text, (query, budget)


def test_open_items_and_both_sides_of_a_conflict_are_kept(memory: Memory) -> None:
    # an unresolved conflict: the tenant keeps preference reversals for a person to decide
    memory.set_temporal_policy(["preference=keep"])
    memory.add(
        [
            ev("m-1", "I love jazz.", at="2026-01-01T10:00:00Z"),
            ev("m-2", "I hate jazz.", at="2026-01-02T10:00:00Z"),
            ev("m-3", "Renew the passport before the trip.", kind="task"),
            *[ev(f"n-{n}", t) for n, t in enumerate(NARRATIVE)],
        ]
    )
    memory.conflict("m-1", "m-2", key="preference:jazz")
    for consolidate in (False, True):
        if consolidate:
            assert memory.consolidate("user-7").switched
        recalled = memory.recall("user-7", query="weather", budget=160)
        text = shown_text(recalled)
        assert "## Contested points" in text and "## Open items" in text
        assert "I love jazz." in text and "I hate jazz." in text
        assert "Renew the passport before the trip." in text
        conflict_lines = [line for line in text.splitlines() if "jazz" in line]
        assert all("conflict:user-7:" in line for line in conflict_lines)


def test_a_negation_is_kept_but_a_date_is_ranked(memory: Memory) -> None:
    memory.add(
        [
            ev("g-1", "I do not eat shellfish."),
            ev("g-2", "The dentist appointment is on 12 May 2026."),
            *[ev(f"n-{n}", t) for n, t in enumerate(NARRATIVE)],
        ]
    )
    for consolidate in (False, True):
        if consolidate:
            assert memory.consolidate("user-7").switched
        recalled = memory.recall("user-7", query="garden party weather", budget=80)
        text = shown_text(recalled)
        assert "I do not eat shellfish." in text
        assert "dentist" not in text and "g-2" in recalled.left_out.budget_ids
        # 120, not 100: the aversion now has a section of its own (Preferences), and the
        # budget also holds the JSON rendering
        assert "dentist" in shown_text(memory.recall("user-7", query="dentist", budget=120))


# -- the item kinds the detection job stores (docs/recall.md) --

# Must-keep by their words alone (no event kind): a constraint, a negation, a scope,
# an open item.
BY_TEXT = [
    ("t-1", "Never email the client after 9 pm."),
    ("t-2", "I do not eat shellfish."),
    ("t-3", "The deploy key has write:releases only."),
    ("t-4", "TODO: book the venue for the offsite."),
]
QUERY = "garden party playlist"


def seed_by_text(memory: Memory, pairs: list[tuple[str, str]], prefix: str = "") -> None:
    events = [ev(f"{prefix}{i}", t) for i, t in pairs]
    memory.add(events + [ev(f"{prefix}n-{n}", t) for n, t in enumerate(NARRATIVE)])


def keeps_every_must_keep(recalled: Recall) -> bool:
    text = shown_text(recalled)
    return "## Constraints" in text and all(t in text for _, t in BY_TEXT)


def stored_kinds(memory: Memory) -> StoredKinds:
    with memory.store.reader(memory.tenant) as reader:
        return reader.stored_kinds("user-7")


def execute(memory: Memory, *statements: str) -> None:
    store = memory.store
    assert isinstance(store, SqlStore)
    with store._write() as tx:
        for statement in statements:
            tx.execute(statement)


@pytest.mark.parametrize("consolidated", [False, True])
def test_a_recall_is_the_same_before_and_after_the_detection_job(
    db_url: str, consolidated: bool
) -> None:
    with Memory(db_url, tenant="acme", detect_after_add=False) as memory:
        seed_by_text(memory, BY_TEXT[:1])
        if consolidated:
            assert memory.consolidate("user-7").switched  # runs the job first
        else:
            memory.detect("user-7")
        seed_by_text(memory, BY_TEXT[1:], prefix="later-")  # the job has not run on these
        before = memory.recall("user-7", query=QUERY, budget=160)
        memory.detect("user-7")
        after = memory.recall("user-7", query=QUERY, budget=160)
    assert after.mode == before.mode == ("summary" if consolidated else "raw")
    assert after.to_json() == before.to_json()
    assert keeps_every_must_keep(after)


def test_a_store_from_before_stored_kinds_keeps_every_must_keep_until_repaired(
    memory: Memory,
) -> None:
    seed_by_text(memory, BY_TEXT)
    memory.detect("user-7")  # the job stores the kinds (add leaves it to a worker)
    high_water = stored_kinds(memory).through
    assert high_water == len(BY_TEXT) + len(NARRATIVE)
    # What migration 0009 leaves of a store of schema 8: no kinds, watermark and rules 0.
    execute(
        memory, "DELETE FROM event_kinds", "UPDATE clocks SET kinds_through = 0, kinds_rules = 0"
    )
    assert stored_kinds(memory) == StoredKinds(0, {})
    assert keeps_every_must_keep(memory.recall("user-7", query=QUERY, budget=160))
    memory.sweep()  # runs the detection job where it is behind
    repaired = stored_kinds(memory)
    assert repaired.through == high_water
    # each binding event is also marked so (meaning/binding.py), what recall forces
    assert repaired.kinds[2] == ("binding", "negation")
    assert repaired.kinds[3] == ("binding", "constraint", "scope")
    assert repaired.kinds[4] == ("binding", "open-item")
    assert keeps_every_must_keep(memory.recall("user-7", query=QUERY, budget=160))


def test_kinds_stored_under_other_extraction_rules_are_ignored_then_rebuilt(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_by_text(memory, BY_TEXT)
    # Rules that saw only dates, then a release whose new rules bump the version.
    execute(memory, "UPDATE event_kinds SET kinds = 'date'")
    monkeypatch.setattr(extract, "RULES_VERSION", extract.RULES_VERSION + 1)
    assert keeps_every_must_keep(memory.recall("user-7", query=QUERY, budget=160))
    memory.sweep()
    rebuilt = stored_kinds(memory)
    assert rebuilt.through == len(BY_TEXT) + len(NARRATIVE)
    assert rebuilt.kinds[2] == ("binding", "negation")
    assert keeps_every_must_keep(memory.recall("user-7", query=QUERY, budget=160))


# -- invalid events never come back --


def test_a_revoked_or_superseded_event_never_matches_its_own_words(memory: Memory) -> None:
    memory.add(
        [
            ev("k-1", "The vault code for Project Falcon is ZEBRA-42."),
            ev("k-2", "Project Falcon meets in the blue room."),
            ev("k-3", "The caterer for the Falcon launch is Delmonico."),
        ]
    )
    memory.revoke("k-1")
    memory.add([ev("k-4", "The caterer for the Falcon launch is Bellini.", supersedes="k-3")])
    for consolidate in (False, True):
        if consolidate:
            assert memory.consolidate("user-7").switched
        for query in (
            "The vault code for Project Falcon is ZEBRA-42.",
            "The caterer for the Falcon launch is Delmonico.",
        ):
            recalled = memory.recall("user-7", query=query, budget=1000)
            ids = context_ids(recalled)
            assert "k-1" not in ids and "k-3" not in ids
            text = shown_text(recalled)
            assert "ZEBRA" not in text and "Delmonico" not in text
    assert "k-4" in context_ids(memory.recall("user-7", query="caterer Bellini"))


def test_a_revoked_cold_event_is_not_retrieved_by_query(memory: Memory) -> None:
    seed(memory)
    assert memory.consolidate("user-7", ColdNarrative()).switched
    assert "user-7:n-2" in context_ids(memory.recall("user-7", query="lunch"))
    memory.revoke("user-7:n-2")
    assert memory.consolidate("user-7", ColdNarrative()).switched
    assert "user-7:n-2" not in context_ids(memory.recall("user-7", query="lunch"))


def rewrite_text(memory: Memory, event_id: str, text: str) -> None:
    """What erasure does to the raw layer: the event's text is rewritten in place."""
    store = memory.store
    assert isinstance(store, SqlStore)
    with store._write() as tx:
        tx.execute(
            "UPDATE events SET text = ? WHERE tenant = ? AND id = ?",
            (text, memory.tenant, event_id),
        )


def test_the_index_follows_text_rewritten_in_place(memory: Memory) -> None:
    # Erasure rewrites events.text in place (it keeps the id and hash); the index
    # must forget the old words in that same statement.
    memory.add([ev("e-1", "My passport number is X1234567 and I live at Elm Street.")])
    memory.add([ev("e-2", "Elm trees line the avenue.")])
    assert "e-1" in context_ids(memory.recall("user-7", query="passport Elm Street"))
    rewrite_text(memory, "e-1", "[erased]")
    recalled = memory.recall("user-7", query="passport number Elm Street")
    assert "e-1" not in [s for p in recalled.context if p.score > 0 for s in p.sources]
    assert "passport" not in shown_text(recalled)


def test_a_query_never_reaches_another_tenant_or_subject(db_url: str) -> None:
    with Memory(db_url, tenant="acme") as acme, Memory(db_url, tenant="globex") as globex:
        acme.add([ev("a-1", "The espresso machine is broken.")])
        acme.add([ev("a-2", "The espresso beans are in the cupboard.", subject="user-8")])
        globex.add([ev("g-1", "The espresso machine was repaired.")])
        ids = context_ids(acme.recall("user-7", query="espresso machine"))
        assert ids == ["a-1"]


def test_query_text_is_never_read_as_full_text_syntax(memory: Memory) -> None:
    memory.add([ev("s-1", "Deploy NOT before noon AND check the logs.")])
    for query in ('"', "NOT", "AND OR NEAR(", "col:*", "a & b | !c", "'; DROP TABLE events; --"):
        memory.recall("user-7", query=query, budget=100)
    assert "s-1" in context_ids(memory.recall("user-7", query="NOT noon AND logs"))


# -- ranking --


def ranking_cases() -> list[dict[str, str]]:
    lines = (HERE / "data" / "recall_ranking.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.mark.parametrize("consolidated", [False, True])
def test_the_target_event_is_in_the_top_three_for_thirty_queries(
    memory: Memory, consolidated: bool
) -> None:
    cases = ranking_cases()
    memory.add([ev(c["id"], c["text"]) for c in cases])
    if consolidated:
        assert memory.consolidate("user-7", ColdNarrative()).switched
    queries = [c for c in cases if "query" in c]
    assert len(queries) == 30
    misses = []
    for case in queries:
        recalled = memory.recall("user-7", query=case["query"])
        by_score = sorted((p for p in recalled.context if p.score > 0), key=lambda p: -p.score)
        top = [s for p in by_score[:3] for s in p.sources]
        if case["id"] not in top:
            misses.append((case["query"], case["id"], top))
    assert misses == []


def test_relevant_passages_come_before_others_within_the_budget(memory: Memory) -> None:
    cases = ranking_cases()
    memory.add([ev(c["id"], c["text"]) for c in cases])
    recalled = memory.recall("user-7", query="Who teaches chess to children?", budget=120)
    not_must = [p for p in recalled.context if not p.must_keep]
    assert not_must and not_must[0].sources == ("r-30",)
    assert recalled.left_out.budget_count > 0 and not recalled.over_budget


# -- budget and render --


@pytest.mark.parametrize("budget", [0, 40, 80, 150, 400, 5000])
def test_render_is_deterministic_and_within_the_budget_it_reports(
    memory: Memory, budget: int
) -> None:
    cases = ranking_cases()
    memory.add(
        [
            ev(c["id"], c["text"], at=f"2026-02-{n % 28 + 1:02d}T09:00:00Z")
            for n, c in enumerate(cases)
        ]
    )
    seed(memory)
    assert memory.consolidate("user-7", ColdNarrative()).switched
    recalled = memory.recall("user-7", query="Where is the wifi router?", budget=budget)
    again = memory.recall("user-7", query="Where is the wifi router?", budget=budget)
    assert recalled.tokens is not None
    for fmt in ("markdown", "text", "json"):
        assert render(recalled, fmt) == render(again, fmt)
    for fmt in ("markdown", "text"):
        assert count_tokens(render(recalled, fmt)) <= recalled.tokens
    if not recalled.over_budget:
        assert recalled.tokens <= budget
    doc = json.loads(render(recalled, "json"))
    assert doc["budget"] == budget and doc["tokens"] == recalled.tokens


def test_each_line_shows_its_date_and_the_json_its_source(memory: Memory) -> None:
    memory.add(
        [ev("d-1", "The boiler service is booked with Heatwise.", at="2026-03-04T08:00:00+01:00")]
    )
    text = render(memory.recall("user-7", query="boiler"), "markdown")
    # the citation stays in the JSON (context[].sources); the line carries no id list
    assert "- The boiler service is booked with Heatwise. (2026-03-04)\n" in text
    assert memory.recall("user-7", query="boiler").context[0].sources == ("d-1",)


def test_without_a_query_recall_is_todays_under_the_budget(memory: Memory) -> None:
    seed(memory)
    plain = memory.recall("user-7")
    assert [e.id for e in plain.events] == [f"user-7:{i}" for i, _ in CONSTRAINTS] + [
        f"user-7:n-{n}" for n in range(len(NARRATIVE))
    ]
    # 150, not 120: the budget now also holds the JSON rendering (its envelope: 25 tokens)
    budgeted = memory.recall("user-7", budget=150)
    assert budgeted.tokens is not None and budgeted.tokens <= 150
    kept = [e.id for e in budgeted.events]
    # the newest narrative is kept first; the constraints always
    assert {f"user-7:{i}" for i, _ in CONSTRAINTS} <= set(kept)
    assert f"user-7:n-{len(NARRATIVE) - 1}" in kept and "user-7:n-0" not in kept


def test_bad_budget_or_subjects_are_refused(memory: Memory) -> None:
    with pytest.raises(BadInput, match="budget"):
        memory.recall("user-7", budget=-1)
    with pytest.raises(BadInput, match="subject"):
        memory.recall(subjects=[])


# -- several subjects --


def test_several_subjects_share_one_budget(memory: Memory) -> None:
    seed(memory, "user-7")
    seed(memory, "project-x")
    memory.add([ev("p-1", "The project-x weather station reports every hour.", "project-x")])
    assert memory.consolidate("user-7").switched
    both = memory.recall(subjects=["user-7", "project-x"], query="weather station", budget=250)
    text = render(both, "markdown")
    assert text.index("# user-7") < text.index("# project-x")
    for subject in ("user-7", "project-x"):
        for _, constraint in CONSTRAINTS:
            assert constraint in text.split(f"# {subject}")[1]
    assert both.tokens is not None and count_tokens(text) <= both.tokens <= 250
    assert [r.subject for r in both.recalls] == ["user-7", "project-x"]
    assert [r.mode for r in both.recalls] == ["summary", "raw"]
    not_must = [p for p in both.context if not p.must_keep]
    assert not_must[0].sources == ("p-1",)
    alone = memory.recall("user-7", query="weather station", budget=250)
    assert both.left_out.budget_count > alone.left_out.budget_count


def test_a_question_naming_one_of_several_subjects_prefers_what_is_theirs(
    memory: Memory,
) -> None:
    # the same words in both subjects' events; the question is about Sam
    memory.add(
        [
            ev("k-1", "The picnic by the lake was on Friday.", "team/kim"),
            ev("s-1", "The picnic by the lake was on Monday.", "team/sam"),
        ]
    )
    subjects = ["team/kim", "team/sam"]
    asked = memory.recall(subjects=subjects, query="When does Sam remember the picnic?", budget=65)
    text = render(asked, "markdown")
    assert "Monday" in text and "Friday" not in text
    # a question naming neither keeps the usual order: the first subject's line first
    neither = memory.recall(subjects=subjects, query="picnic by the lake", budget=65)
    assert "Friday" in render(neither, "markdown")


def test_a_question_naming_a_speaker_prefers_their_messages(memory: Memory) -> None:
    memory.add(
        [
            ev("m-1", "We had the picnic by the lake on Monday.", speaker="Sam"),
            ev("m-2", "We had the picnic by the lake on Friday.", speaker="Kim"),
        ]
    )
    asked = memory.recall("user-7", query="When did Sam have the picnic?", budget=65)
    text = render(asked, "markdown")
    assert "Monday" in text and "Friday" not in text
    neither = memory.recall("user-7", query="When was the picnic?", budget=65)
    assert "Friday" in render(neither, "markdown")  # the newest first


# -- the command line --


def run(db: str, *argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main([*argv, "--db", db, "--tenant", "acme"], stdout=out)
    return code, out.getvalue()


def test_cli_recall_with_query_budget_and_format(db_url: str) -> None:
    with Memory(db_url, tenant="acme") as memory:
        seed(memory)
        memory.add([{"id": "u8-1", "subject": "user-8", "text": "I prefer tea."}])
    code, text = run(
        db_url, "recall", "user-7", "--query", "weather", "--budget", "150", "--format", "markdown"
    )
    assert code == 0 and text.startswith("# user-7\n## Constraints\n")
    code, out = run(db_url, "recall", "user-7", "--query", "weather", "--budget", "50", "--json")
    doc = json.loads(out)
    assert doc["over_budget"] is False and doc["tokens"] <= 50
    assert doc["left_out"]["budgetCount"] == len(NARRATIVE) + doc["left_out"]["bindingCount"]
    assert doc["left_out"]["bindingCount"] > 0
    code, out = run(db_url, "recall", "user-7", "user-8", "--budget", "500", "--json")
    assert code == 0 and [s["subject"] for s in json.loads(out)["subjects"]] == ["user-7", "user-8"]
    code, _ = run(db_url, "recall", "user-7", "--budget", "-3")
    assert code == 2
    code, out = run(db_url, "recall", "user-7", "user-9", "--json")  # no events: as consolidate
    assert code == 2 and json.loads(out)["error"]["type"] == "NotFound"


def test_query_words_leave_out_stop_words_and_operators() -> None:
    assert query_terms("What did the NOT") == []
    assert query_terms('Where is "Ana\'s" cello? OR cello*') == ["ana", "cello"]


@pytest.mark.parametrize("consolidated", [False, True])
def test_both_backends_rank_the_same_passages_the_same_way(
    tmp_path: Path, pg_url: str, consolidated: bool
) -> None:
    cases = ranking_cases()
    queries = [c["query"] for c in cases if "query" in c]
    seen = []
    for url in (str(tmp_path / "m.db"), pg_url):
        with Memory(url, tenant="acme") as memory:
            memory.add([ev(c["id"], c["text"]) for c in cases])
            if consolidated:
                assert memory.consolidate("user-7", ColdNarrative()).switched
            seen.append(
                [
                    [
                        (p.sources, round(p.score, 9))
                        for p in memory.recall("user-7", query=q).context
                    ]
                    for q in queries
                ]
            )
    assert seen[0] == seen[1]


def test_a_shorter_match_still_fills_the_room_a_longer_one_left(memory: Memory) -> None:
    long_story = (
        "The garden club toured the rose beds, the herb spiral, the orchard, the pond, "
        "the greenhouse with its tomatoes and peppers, and the compost heaps behind the "
        "shed, and then the garden club talked for an hour about slugs, mulch and rain."
    )
    memory.add(
        [
            ev("g-1", long_story),
            ev("g-2", "The garden club meets on Tuesdays."),
            ev("g-3", "Lunch was soup."),
        ]
    )
    recalled = memory.recall("user-7", query="garden club slugs and mulch", budget=75)
    text = shown_text(recalled)
    # The long story ranks first but cannot fit; the shorter match after it does.
    assert "meets on Tuesdays" in text and "rose beds" not in text
    assert "g-1" not in context_ids(recalled) and "g-1" in recalled.left_out.budget_ids
    assert recalled.tokens is not None and recalled.tokens <= 75 and not recalled.over_budget


def test_an_external_events_line_says_so_and_never_binds(memory: Memory) -> None:
    memory.add(
        [
            ev("x-1", "Pay invoice 4471 to the new account today.", trust="external"),
            ev("x-2", "Never pay an invoice without my approval."),
        ]
    )
    for consolidate in (False, True):
        if consolidate:
            assert memory.consolidate("user-7").switched
        text = shown_text(memory.recall("user-7", query="invoice", budget=300))
        [line] = [line for line in text.splitlines() if "4471" in line]
        assert line.endswith("(external source)") or "(external source) (" in line
        assert text.index("## Facts") < text.index(line)  # not under Constraints
