"""Summaries that keep every statement: what a reader of the rendered summary sees.

The expected sentences are written by hand from the issue's examples, never
taken from the extractor or the generator: the rendered summary must say
them verbatim, with their dates, contested where a conflict is open.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from memlineage import Memory
from memlineage.consolidation.render import CONTESTED_HEADER
from memlineage.meaning.values import canonical


def add(memory: Memory, *events: dict[str, Any], subject: str = "user-7") -> None:
    memory.add([{"subject": subject, **e} for e in events])


def summary_of(memory: Memory, subject: str = "user-7", **kw: Any) -> str:
    result = memory.consolidate(subject, force=True, **kw)
    assert result.switched, result.to_json()
    recalled = memory.recall(subject)
    assert recalled.mode == "summary"
    assert recalled.summary is not None
    return recalled.summary


_DAY = re.compile(r"^(\d{4}-\d{2}-\d{2}|undated):$")
_OWN_DATE = re.compile(r"^(?P<line>- .*) \((?P<date>\d{4}-\d{2}-\d{2})\)$")


def dated(summary: str) -> list[tuple[str, str | None]]:
    """Each statement line of a rendered summary with the date a reader reads for it.

    A contested line carries its own ``(date)``; other lines take the day line above.
    """
    found: list[tuple[str, str | None]] = []
    day: str | None = None
    for line in summary.splitlines():
        if match := _DAY.match(line):
            day = None if match[1] == "undated" else match[1]
        elif not line.startswith("- "):
            day = None  # a group header
        elif own := _OWN_DATE.match(line):
            found.append((own["line"], own["date"]))
        else:
            found.append((line, day))
    return found


def line_with(summary: str, sentence: str) -> str:
    lines = [line for line in summary.splitlines() if sentence in line]
    assert len(lines) == 1, f"{sentence!r} should be on exactly one line of:\n{summary}"
    return lines[0]


def test_withdrawn_and_refused_permissions_are_said_as_they_were(memory: Memory) -> None:
    add(
        memory,
        {"id": "p-1", "text": "The bot's delete:records permission was withdrawn.",
         "at": "2026-03-02T09:00:00Z"},
        {"id": "p-2", "text": "Access to post:slack is refused.", "at": "2026-03-03T09:00:00Z"},
    )  # fmt: skip
    summary = summary_of(memory)
    shown = dated(summary)
    assert ("- The bot's delete:records permission was withdrawn.", "2026-03-02") in shown
    assert ("- Access to post:slack is refused.", "2026-03-03") in shown
    assert "granted" not in summary.lower()


def test_both_sides_of_an_open_conflict_are_shown_together_and_marked(memory: Memory) -> None:
    add(
        memory,
        {"id": "o-1", "text": "My office is in Madrid.", "at": "2026-01-10T09:00:00Z"},
        {"id": "n-1", "text": "I like long walks on the beach.", "at": "2026-01-11T09:00:00Z"},
        {"id": "o-2", "text": "My office is in Seville.", "at": "2026-02-01T09:00:00Z"},
    )
    conflict = memory.conflict("o-1", "o-2", key="office").conflict_id
    assert conflict
    lines = summary_of(memory).splitlines()
    madrid = line_with("\n".join(lines), "My office is in Madrid.")
    seville = line_with("\n".join(lines), "My office is in Seville.")
    assert madrid == f"- [{conflict}] My office is in Madrid. (2026-01-10)"
    assert seville == f"- [{conflict}] My office is in Seville. (2026-02-01)"
    # together, newest first, under the contested header
    at = lines.index(seville)
    assert lines[at + 1] == madrid
    assert CONTESTED_HEADER in lines[:at]
    recalled = memory.recall("user-7")
    assert {s.contested for s in recalled.statements if "office" in s.text} == {conflict}


def test_an_event_is_shown_whole_or_goes_cold_whole(memory: Memory) -> None:
    add(
        memory,
        {"id": "v-1", "text": "I went to the market. I walk about 8,000 steps a day.",
         "at": "2026-01-05T09:00:00Z"},
        {"id": "v-2", "text": "I detest olives, and the gym is 2 km away.",
         "at": "2026-01-06T09:00:00Z"},
        {"id": "n-1", "text": "We talked about the weather for a while.",
         "at": "2026-01-01T09:00:00Z"},
    )  # fmt: skip
    # ("I'm vegan." binds, as an aversion: docs/concepts.md, "Binding events")
    summary = summary_of(memory)  # no budget: every event, each whole on its line
    shown = dated(summary)
    assert ("- I went to the market. I walk about 8,000 steps a day.", "2026-01-05") in shown
    assert ("- I detest olives, and the gym is 2 km away.", "2026-01-06") in shown
    # a budget nothing fits in: the aversion binds and stays; the rest goes cold whole
    summary = summary_of(memory, budget=1)
    assert "I detest olives, and the gym is 2 km away." in summary
    assert "market" not in summary and "8,000" not in summary and "weather" not in summary
    assert summary.splitlines()[-1].startswith("(over the budget of 1 tokens")
    tight = memory.artifacts("user-7")[-1]
    assert tight.manifest.budget == 1 and tight.manifest.over_budget is True
    assert tight.output is not None and tight.output.cold == ("v-1", "n-1")


def test_dates_are_shown_as_said_with_the_day_they_were_said(memory: Memory) -> None:
    add(
        memory,
        {"id": "d-1", "text": "I went sailing on Sunday", "at": "2026-01-07T09:00:00Z"},
        {"id": "d-2", "text": "The review is not on June 3, it's on June 4.",
         "at": "2026-01-08T09:00:00Z"},
        {"id": "d-3", "text": "I never agreed to a $700 fee.", "at": "2026-01-09T09:00:00Z"},
    )  # fmt: skip
    summary = summary_of(memory)
    shown = dated(summary)
    assert ("- I went sailing on Sunday", "2026-01-07") in shown
    assert ("- The review is not on June 3, it's on June 4.", "2026-01-08") in shown
    assert ("- I never agreed to a $700 fee.", "2026-01-09") in shown
    assert "Amounts" not in summary and "700 USD" not in summary


def test_a_change_of_mind_shows_both_with_dates_newest_first(memory: Memory) -> None:
    # The generator never adjudicates. The raw layer's default resolves a preference's
    # reversal by recency (docs/concepts.md); a tenant that keeps it shows both sides.
    memory.set_temporal_policy(["preference=keep"])
    add(
        memory,
        {"id": "op-1", "text": "I love opera.", "at": "2025-05-01T09:00:00Z"},
        {"id": "op-2", "text": "I hate opera now.", "at": "2026-01-09T09:00:00Z"},
    )
    lines = summary_of(memory).splitlines()
    newer = next(i for i, line in enumerate(lines) if "I hate opera now." in line)
    older = next(i for i, line in enumerate(lines) if "I love opera." in line)
    assert newer < older  # newest first, and each with its own date
    assert "(2026-01-09)" in lines[newer] and "(2025-05-01)" in lines[older]
    assert "[conflict:" in lines[newer] and "[conflict:" in lines[older]  # both contested


def test_case_is_kept_small_talk_goes_cold_and_values_keep_their_clause(memory: Memory) -> None:
    add(
        memory,
        {"id": "c-1", "text": "I love jazz", "at": "2026-01-09T09:00:00Z"},
        {"id": "c-2", "text": "Hi! Thanks so much!", "at": "2026-01-09T09:01:00Z"},
        {"id": "c-3", "text": "We have 3 kids, 2 dogs and a house built in 1988.",
         "at": "2026-01-09T09:02:00Z"},
    )  # fmt: skip
    summary = summary_of(memory)
    assert ("- I love jazz", "2026-01-09") in dated(summary)
    assert "i love jazz" not in summary
    assert "Thanks" not in summary and "Hi!" not in summary
    assert "We have 3 kids, 2 dogs and a house built in 1988." in summary
    assert "Quantities" not in summary
    recalled = memory.recall("user-7")
    assert recalled.cold == ("c-2",)
    doc = recalled.to_json()
    assert doc["cold"] == ["c-2"]
    assert doc["summary"] == summary
    assert all("derivedFrom" in s for s in doc["statements"])


def test_every_claim_text_is_a_clause_of_its_source(memory: Memory) -> None:
    texts = {
        "t-1": "Never email me after 9 pm. My budget is at most 4,500 EUR.",
        "t-2": "Grant read:billing but not write:billing to the bot.",
        "t-3": "The run was 5 km, not 5 mi.",
    }
    add(memory, *({"id": k, "text": v} for k, v in texts.items()))
    memory.consolidate("user-7")
    recalled = memory.recall("user-7")
    assert recalled.claims
    for claim in recalled.claims:
        assert claim.text, claim
        assert any(" ".join(claim.text.split()) in texts[s] for s in claim.derived_from), claim
        assert claim.text != str(claim.value)


def test_over_budget_keeps_every_must_preserve_statement_whole(memory: Memory) -> None:
    sentences = [f"Ticket T-{i} must be closed before March {i % 27 + 1}, 2026." for i in range(30)]
    add(memory, *({"id": f"k-{i}", "text": s} for i, s in enumerate(sentences)))
    result = memory.consolidate("user-7", budget=50)
    assert result.switched and result.to_json()["over_budget"] is True
    assert result.artifact.manifest.over_budget is True
    summary = memory.recall("user-7").summary or ""
    for sentence in sentences:  # never truncated
        assert sentence in summary


def test_budget_per_call_and_tenant_default(db_url: str) -> None:
    with Memory(db_url, tenant="tight", default_budget=5) as memory:
        add(
            memory,
            {"id": "a", "text": "We chatted about the match last night."},
            {"id": "b", "text": "Never deploy on Fridays."},
        )
        first = memory.consolidate("user-7")
        assert first.artifact.manifest.budget == 5
        assert first.artifact.output is not None and first.artifact.output.cold == ("a",)
        assert memory.consolidate("user-7").up_to_date  # same budget: nothing to do
        roomy = memory.consolidate("user-7", budget=1000)  # another budget: a new summary
        assert roomy.switched
        assert roomy.artifact.manifest.budget == 1000
        assert roomy.artifact.output is not None and roomy.artifact.output.cold == ()
        assert roomy.artifact.manifest.over_budget is False


# ---------------------------------------------------------------------------
# incremental consolidation (selector v2)


def _must_preserve(memory: Memory, subject: str) -> tuple[set[Any], tuple[str, ...]]:
    recalled = memory.recall(subject)
    assert recalled.mode == "summary"
    claims = {
        (c.key, canonical(c.value, c.unit), c.polarity, c.kind, frozenset(c.derived_from))
        for c in recalled.claims
    }
    return claims, tuple(sorted(c.id for c in recalled.conflicts))


STREAM = [
    {"id": "s-1", "text": "Never deploy on Fridays.", "at": "2026-01-01T09:00:00Z"},
    {"id": "s-2", "text": "My office is in Madrid.", "at": "2026-01-02T09:00:00Z"},
    {"id": "s-3", "text": "My office is in Seville.", "at": "2026-01-03T09:00:00Z"},
    {"id": "s-4", "text": "The budget is $4,500.", "at": "2026-01-04T09:00:00Z"},
    {"id": "s-5", "text": "Hello there!", "at": "2026-01-05T09:00:00Z"},
    {"id": "s-6", "text": "The budget is $4,500.", "at": "2026-01-06T09:00:00Z"},
    {"id": "s-7", "text": "TODO: call ops about ORION-12.", "at": "2026-01-07T09:00:00Z"},
    {"id": "s-8", "text": "We chatted about hiking.", "at": "2026-01-08T09:00:00Z"},
    {"id": "s-9", "text": "Never deploy on Fridays.", "at": "2026-01-09T09:00:00Z"},
]


@pytest.mark.parametrize("runs", [(3, 9), (3, 5, 6, 9), (1, 2, 3, 4, 5, 6, 7, 8, 9)])
def test_incremental_runs_keep_the_must_preserve_and_conflict_sets(
    db_url: str, runs: tuple[int, ...]
) -> None:
    with Memory(db_url, tenant="incremental") as step, Memory(db_url, tenant="full") as full:
        add(full, *STREAM)
        full.conflict("s-2", "s-3", key="office")
        summary_of(full)
        done = 0
        for n, upto in enumerate(runs):
            add(step, *STREAM[done:upto])
            if done < 3 <= upto:
                step.conflict("s-2", "s-3", key="office")
            result = step.consolidate("user-7")
            assert result.switched, result.to_json()
            manifest = result.artifact.manifest
            assert manifest.selector_version == "v2"
            if n and done >= 3:  # a fresh parent was read: a derivation edge to it
                assert manifest.derived_from_artifact is not None
            retry = step.consolidate("user-7", force=True)  # a retry changes nothing
            assert retry.switched
            done = upto
        assert _must_preserve(step, "user-7") == _must_preserve(full, "user-7")
        recalled = step.recall("user-7")
        ids = {e["id"] for e in STREAM}
        for item in (*recalled.claims, *recalled.statements):
            assert set(item.derived_from) <= ids  # raw event ids, never an artifact
        budget = {s.text: s.derived_from for s in recalled.statements}
        assert budget["The budget is $4,500."] == ("s-4", "s-6")
        assert budget["Never deploy on Fridays."] == ("s-1", "s-9")
        assert set(recalled.cold) == {"s-5"}


def test_a_conflict_between_new_events_keeps_the_summary_incremental(memory: Memory) -> None:
    """Issue #26: the epoch moved, but only new events are in conflict: the run builds
    on the published summary (a derivation edge to it), and the reader sees both new
    events contested beside what the summary said before."""
    add(memory, {"id": "w-1", "text": "Never deploy on Fridays.", "at": "2026-01-10T09:00:00Z"})
    first = memory.consolidate("user-7")
    assert first.switched
    add(
        memory,
        {"id": "o-1", "text": "My office is in Madrid.", "at": "2026-02-01T09:00:00Z"},
        {"id": "o-2", "text": "My office is in Seville.", "at": "2026-02-02T09:00:00Z"},
    )
    conflict = memory.conflict("o-1", "o-2", key="office").conflict_id
    second = memory.consolidate("user-7")
    assert second.switched, second.to_json()
    assert second.artifact.manifest.derived_from_artifact == first.artifact.id
    summary = memory.recall("user-7").summary or ""
    assert line_with(summary, "My office is in Madrid.") == (
        f"- [{conflict}] My office is in Madrid. (2026-02-01)"
    )
    assert line_with(summary, "My office is in Seville.") == (
        f"- [{conflict}] My office is in Seville. (2026-02-02)"
    )
    assert "Never deploy on Fridays." in summary


def test_a_conflict_with_a_summarized_event_rebuilds_it(memory: Memory) -> None:
    add(memory, {"id": "o-1", "text": "My office is in Madrid.", "at": "2026-02-01T09:00:00Z"})
    assert memory.consolidate("user-7").switched
    add(memory, {"id": "o-2", "text": "My office is in Seville.", "at": "2026-02-02T09:00:00Z"})
    conflict = memory.conflict("o-1", "o-2", key="office").conflict_id
    second = memory.consolidate("user-7")
    assert second.switched
    assert second.artifact.manifest.derived_from_artifact is None  # a full rebuild
    summary = memory.recall("user-7").summary or ""
    assert line_with(summary, "Madrid") == f"- [{conflict}] My office is in Madrid. (2026-02-01)"


def test_a_tail_after_a_quiet_policy_change_is_judged_under_it(memory: Memory) -> None:
    """A policy that changes no stored event's validity advances no epoch, yet it holds
    for every event added after it: an incremental run on the published summary must
    leave out a new event the policy now quarantines (the delta artifact's fence is the
    operation counter, not the epoch)."""
    memory.set_trust_policy(block=["injection"])  # a 'scraped' label is admitted
    add(memory, {"id": "q-1", "text": "Never deploy on Fridays.", "at": "2026-03-01T09:00:00Z"})
    first = memory.consolidate("user-7")
    assert first.switched
    epoch = memory.audit("user-7").doc["clock"]["epoch"]
    memory.set_trust_policy(block=["injection", "scraped"])
    assert memory.audit("user-7").doc["clock"]["epoch"] == epoch  # nothing it stores moved
    add(
        memory,
        {"id": "q-2", "text": "The deploy key is ORION-77.", "at": "2026-03-02T09:00:00Z",
         "taint": ["scraped"]},
        {"id": "q-3", "text": "The budget is $9,100.", "at": "2026-03-03T09:00:00Z"},
    )  # fmt: skip
    second = memory.consolidate("user-7")
    assert second.switched, second.to_json()
    assert second.artifact.manifest.derived_from_artifact == first.artifact.id
    summary = memory.recall("user-7").summary or ""
    assert "Never deploy on Fridays." in summary
    assert "The budget is $9,100." in summary
    assert "ORION-77" not in summary
    recalled = memory.recall("user-7")
    cited = {source for statement in recalled.statements for source in statement.derived_from}
    assert "q-2" not in {*recalled.cold, *cited}
