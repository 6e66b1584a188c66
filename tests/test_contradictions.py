"""Contradictions over time, decided by the raw layer under the tenant's temporal policy."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlineage import Memory
from memlineage.errors import BadInput
from memlineage.store import detect as detect_job


def ev(id_: str, text: str, at: str, subject: str = "user-7", **extra: object) -> dict[str, object]:
    return {"id": id_, "subject": subject, "text": text, "at": at, **extra}


LOVE = ev("p-1", "I love jazz.", "2026-01-10T09:00:00Z")
HATE = ev("p-2", "I hate jazz.", "2026-06-02T18:30:00Z")


@pytest.fixture
def memory(db_url: str) -> Iterator[Memory]:
    """These tests read what detection decided right after an add: the synchronous mode."""
    with Memory(db_url, tenant="acme", detect_after_add=True) as mem:
        yield mem


def valid(memory: Memory, subject: str = "user-7") -> list[str]:
    return [e.id for e in memory.recall(subject).events]


def detected_ops(memory: Memory, subject: str = "user-7") -> list[dict[str, object]]:
    return [
        op
        for op in memory.audit(subject).to_json()["operations"]
        if op["kind"] in ("conflict", "resolve", "dismiss")
    ]


def test_a_reversed_preference_is_won_by_the_newer_one_by_default(memory: Memory) -> None:
    memory.add([LOVE])
    memory.add([HATE])
    assert valid(memory) == ["p-2"]
    conflict, resolution = detected_ops(memory)
    assert (conflict["target"], conflict["other"]) == ("p-1", "p-2")
    assert conflict["key"] and "jazz" in str(conflict["key"])
    assert conflict["reason"] == "detected: opposite-polarity"
    assert resolution["other"] == "p-2" and resolution["target"] == "p-1"
    assert resolution["reason"] == "latest-wins for preference (temporal policy v1)"
    result = memory.consolidate("user-7")
    assert result.switched
    recalled = memory.recall("user-7")
    assert recalled.mode == "summary" and "hate jazz" in (recalled.summary or "")
    assert "love jazz" not in (recalled.summary or "")


def test_latest_wins_follows_the_time_of_the_statement_not_the_order_of_arrival(
    memory: Memory,
) -> None:
    memory.add([HATE])
    memory.add([LOVE])  # told later, but said earlier: the June statement still wins
    assert valid(memory) == ["p-2"]


def test_under_keep_both_sides_stay_and_the_summary_shows_them_contested(
    memory: Memory,
) -> None:
    memory.set_temporal_policy(["preference=keep"], reason="let the user decide")
    memory.add([LOVE, HATE])
    assert valid(memory) == ["p-1", "p-2"]
    (conflict,) = memory.recall("user-7").conflicts
    assert (conflict.a, conflict.b) == ("p-1", "p-2")
    result = memory.consolidate("user-7")
    assert result.switched, result.reason
    summary = memory.recall("user-7").summary or ""
    assert "love jazz" in summary and "hate jazz" in summary
    assert "contested" in summary.casefold()


def test_dismissing_a_detected_conflict_restores_both_sides(memory: Memory) -> None:
    memory.add([LOVE, HATE])
    assert valid(memory) == ["p-2"]
    conflict = detected_ops(memory)[0]["conflict_id"]
    epoch = memory.audit("user-7").doc["clock"]["epoch"]
    result = memory.dismiss(str(conflict), reason="both were true at the time")
    assert result.changed and result.epoch == epoch + 1
    assert valid(memory) == ["p-1", "p-2"]
    assert memory.recall("user-7").conflicts == ()
    assert memory.dismiss(str(conflict)).changed is False


def test_a_user_resolves_a_kept_conflict(memory: Memory) -> None:
    memory.set_temporal_policy(["preference=keep"])
    memory.add([LOVE, HATE])
    (conflict,) = memory.recall("user-7").conflicts
    memory.resolve(conflict.id, winner="p-1")
    assert valid(memory) == ["p-1"]


def test_a_user_overturns_the_policys_resolution(memory: Memory) -> None:
    memory.add([LOVE, HATE])
    conflict = str(detected_ops(memory)[0]["conflict_id"])
    result = memory.resolve(conflict, winner="p-1")
    assert result.changed and result.stale == ()
    assert valid(memory) == ["p-1"]
    with pytest.raises(BadInput, match="resolved"):
        memory.resolve(conflict, winner="p-2")  # a user's own resolution stands


def test_a_changed_value_is_kept_contested_for_facts_by_default(memory: Memory) -> None:
    memory.add([ev("b-1", "The budget is 4,500 EUR.", "2026-01-01T00:00:00Z")])
    memory.add([ev("b-2", "The budget is 5,000 EUR.", "2026-03-01T00:00:00Z")])
    assert valid(memory) == ["b-1", "b-2"]
    (conflict,) = memory.recall("user-7").conflicts
    assert (conflict.a, conflict.b) == ("b-1", "b-2")
    memory.set_temporal_policy(["fact=latest-wins"])
    memory.add([ev("b-3", "The budget is 6,000 EUR.", "2026-04-01T00:00:00Z")])
    assert "b-3" in valid(memory)
    ops = detected_ops(memory)
    assert ops[-1]["reason"] == "latest-wins for fact (temporal policy v2)"


def test_unrelated_facts_never_retire_each_other(memory: Memory) -> None:
    memory.add(
        [
            ev("c-1", "Alice's favourite colour is blue.", "2026-01-01T00:00:00Z"),
            ev("c-2", "Bob's favourite colour is blue.", "2026-02-01T00:00:00Z"),
            ev("c-3", "Bob's favourite colour is green.", "2026-03-01T00:00:00Z"),
            ev("f-1", "x", "2026-01-01T00:00:00Z",
               facts=[{"key": "alice.favourite_colour", "value": "blue", "kind": "preference"}]),
            ev("f-2", "y", "2026-02-01T00:00:00Z",
               facts=[{"key": "bob.favourite_colour", "value": "green", "kind": "preference"}]),
            ev("j-1", "The budget is 4,500 EUR.", "2026-01-01T00:00:00Z", project="apollo"),
            ev("j-2", "The budget is 9,000 EUR.", "2026-02-01T00:00:00Z", project="zeus"),
            ev("t-1", "Ticket T-1 costs 5 EUR.", "2026-01-01T00:00:00Z"),
            ev("t-2", "Ticket T-2 costs 7 EUR.", "2026-02-01T00:00:00Z"),
            ev("n-1", "Read chapter 3 first.", "2026-01-01T00:00:00Z"),
            ev("n-2", "Read chapter 4 first.", "2026-02-01T00:00:00Z"),
        ]
    )  # fmt: skip
    assert valid(memory) == ["c-1", "c-2", "c-3", "f-1", "f-2", "j-1", "j-2", "t-1", "t-2",
                              "n-1", "n-2"]  # fmt: skip
    assert memory.recall("user-7").conflicts == ()
    assert detected_ops(memory) == []


def test_the_same_preference_in_two_subjects_never_meets(memory: Memory) -> None:
    memory.add([LOVE, {**HATE, "subject": "user-8"}])
    assert valid(memory) == ["p-1"] and valid(memory, "user-8") == ["p-2"]


def test_an_explicit_fact_changed_later_is_detected(memory: Memory) -> None:
    memory.add(
        [
            ev("f-1", "x", "2026-01-01T00:00:00Z",
               facts=[{"key": "favourite_colour", "value": "blue", "kind": "preference"}]),
            ev("f-2", "y", "2026-05-01T00:00:00Z",
               facts=[{"key": "favourite_colour", "value": "green", "kind": "preference"}]),
        ]
    )  # fmt: skip
    assert valid(memory) == ["f-2"]
    assert detected_ops(memory)[0]["reason"] == "detected: other-value"


def test_detection_is_a_job_that_catches_up_and_runs_once(memory: Memory) -> None:
    memory.store.append(memory.tenant, [])  # nothing to do
    from memlineage.raw.ingest import parse_event

    memory.store.append(memory.tenant, [parse_event(LOVE), parse_event(HATE)])  # no job yet
    assert valid(memory) == ["p-1", "p-2"]
    assert memory.sweep() == []  # the sweep catches detection up
    assert valid(memory) == ["p-2"]
    again = memory.detect("user-7")
    assert again.conflicts == ()


def test_a_bulk_load_may_defer_detection_to_the_next_consolidation(db_url: str) -> None:
    with Memory(db_url, tenant="acme", detect_after_add=False) as memory:
        memory.add([LOVE, HATE])
        assert valid(memory) == ["p-1", "p-2"]
        result = memory.consolidate("user-7")  # the raw layer decides first
        assert result.switched and result.artifact.manifest.input_ids == ("p-2",)
        assert memory.recall("user-7").mode == "summary"


def test_bad_policy_input_changes_nothing(memory: Memory) -> None:
    with pytest.raises(BadInput, match="rumour"):
        memory.set_temporal_policy(["rumour=keep"])
    with pytest.raises(BadInput, match="sometimes"):
        memory.set_temporal_policy(["fact=sometimes"])
    assert memory.policy()["temporal"]["version"] == 1
    assert memory.policy_history() == []


def test_a_reversal_said_with_now_is_the_same_topic(memory: Memory) -> None:
    """ "I love opera." (2025) then "I hate opera now." (2026): the user hates opera now."""
    memory.add(
        [
            {"id": "o-1", "subject": "u", "text": "I love opera.", "at": "2025-06-02T09:01:00Z"},
            {
                "id": "o-2",
                "subject": "u",
                "text": "I hate opera now.",
                "at": "2026-02-10T09:00:00Z",
            },
        ]
    )
    assert [e.id for e in memory.events("u", valid_only=True)] == ["o-2"]
    assert memory.consolidate("u").switched
    summary = memory.recall("u").summary or ""
    assert "I hate opera now." in summary and "I love opera." not in summary


def _stream() -> list[dict[str, object]]:
    """Events whose conflicts need the earlier events of their own batch, and a window.

    "I love jazz." twenty times (more than the window of earlier items per key),
    then a reversal, then a return said before the reversal; a budget that changes
    and comes back (the same key more than the window); a reversal within a few
    events. Times out of order, so latest-wins picks either side, and its losers
    are invalid for the events after them.
    """

    def day(n: int) -> str:
        return f"2026-{n // 28 + 1:02d}-{n % 28 + 1:02d}T09:00:00Z"

    out = [ev(f"jazz-{i}", "I love jazz.", day(i)) for i in range(20)]
    out += [ev("jazz-hate", "I hate jazz.", day(60)), ev("jazz-back", "I love jazz.", day(50))]
    out += [ev(f"budget-{i}", f"The budget is {4_500 + 500 * (i % 3)} EUR.", day(i))
            for i in range(18)]  # fmt: skip
    out += [ev("tea-1", "I love green tea.", day(71)), ev("tea-2", "I hate green tea.", day(70))]
    out += [ev(f"jazz-late-{i}", ("I hate jazz.", "I love jazz.")[i % 2], day(80 + i))
            for i in range(4)]  # fmt: skip
    return out


def _what_detection_left(memory: Memory) -> dict[str, object]:
    ops = [{k: v for k, v in op.items() if k != "recorded_at"} for op in detected_ops(memory)]
    conflicts = [(c.id, c.a, c.b, c.key) for c in memory.recall("user-7").conflicts]
    return {"operations": ops, "valid": valid(memory), "unresolved": conflicts}


def _added_in_batches_of(
    size: int, events: list[dict[str, object]], db_url: str, tenant: str
) -> dict[str, object]:
    with Memory(db_url, tenant=tenant, detect_after_add=True) as memory:
        for start in range(0, len(events), size):
            memory.add(events[start : start + size])
        return _what_detection_left(memory)


def test_a_batch_detects_what_the_same_events_added_one_by_one_detect(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Detection in one run over a batch sees the batch's earlier events as they arrive."""
    events = _stream()
    one_by_one = _added_in_batches_of(1, events, db_url, "one-by-one")
    assert _added_in_batches_of(len(events), events, db_url, "one-batch") == one_by_one
    assert _added_in_batches_of(13, events, db_url, "batches-of-13") == one_by_one
    monkeypatch.setattr(detect_job, "RUN_CHUNK", 7)  # a long run, checked in chunks
    assert _added_in_batches_of(len(events), events, db_url, "chunks-of-7") == one_by_one
    assert len(one_by_one["operations"]) > 20  # type: ignore[arg-type]
    assert one_by_one["unresolved"]  # the budget's changes stay contested (fact: keep)


def test_two_values_of_one_key_in_one_event_meet_the_window_in_one_order(db_url: str) -> None:
    """Two rents in one event, then fifteen repeats of one: which of the two is the
    sixteenth earlier item of "950 EUR" decides whether the first event conflicts with
    it, the same way whether the events came together or apart (PostgreSQL's plan once
    decided it for batches of 13)."""
    events = _stream()
    events += [ev("rent-both", "The rent is 900 EUR and later 950 EUR.", "2026-01-01T09:00:00Z")]
    events += [ev(f"rent-{i}", "The rent is 900 EUR.", f"2026-02-{i + 1:02d}T09:00:00Z")
               for i in range(15)]  # fmt: skip
    events += [ev("rent-last", "The rent is 950 EUR.", "2026-03-01T09:00:00Z")]
    one_by_one = _added_in_batches_of(1, events, db_url, "one-by-one")
    for size in (len(events), 13, 4):
        assert _added_in_batches_of(size, events, db_url, f"batches-of-{size}") == one_by_one
    last = [(op["target"], op["other"]) for op in one_by_one["operations"]][-15:]  # type: ignore[index]
    assert last == [(f"rent-{i}", "rent-last") for i in range(15)]  # the latest 900 EUR only


# -- precision on chat text (what the agent reads): negated third values, days, speakers --


def conflicts(memory: Memory, subject: str = "user-7") -> list[dict[str, object]]:
    return [op for op in detected_ops(memory, subject) if op["kind"] == "conflict"]


def test_a_negated_other_date_is_not_a_contradiction(memory: Memory) -> None:
    memory.add([ev("r-1", "The review is on June 4.", "2026-05-01T09:00:00Z")])
    memory.add([ev("r-2", "The review is not on June 3.", "2026-05-02T09:00:00Z")])
    assert conflicts(memory) == []
    assert valid(memory) == ["r-1", "r-2"]


def test_a_negated_same_date_still_contradicts(memory: Memory) -> None:
    memory.add([ev("d-1", "The deadline is March 3.", "2026-02-01T09:00:00Z")])
    memory.add([ev("d-2", "The deadline is not March 3.", "2026-02-02T09:00:00Z")])
    assert [(c["target"], c["other"]) for c in conflicts(memory)] == [("d-1", "d-2")]


def test_a_quantity_of_one_day_does_not_contradict_the_next_days(memory: Memory) -> None:
    memory.add([ev("s-1", "I walked 1650 steps today.", "2026-05-01T20:00:00Z")])
    memory.add([ev("s-2", "I walked 8356 steps today.", "2026-05-02T20:00:00Z")])
    memory.add([ev("k-1", "I biked 20 km this week.", "2026-05-04T20:00:00Z")])
    memory.add([ev("k-2", "I biked 35 km this week.", "2026-05-13T20:00:00Z")])
    assert conflicts(memory) == []
    assert valid(memory) == ["s-1", "s-2", "k-1", "k-2"]


def test_a_quantity_corrected_the_same_day_still_contradicts(memory: Memory) -> None:
    memory.add([ev("s-1", "I ran 5 km today.", "2026-05-01T12:00:00Z")])
    memory.add([ev("s-2", "I ran 10 km today.", "2026-05-01T21:00:00Z")])
    memory.add([ev("s-3", "I ran 12 km today.", "2026-05-02T21:00:00Z")])  # the next day
    assert [(c["target"], c["other"]) for c in conflicts(memory)] == [("s-1", "s-2")]


def test_a_speaker_name_is_never_a_key(memory: Memory) -> None:
    """Two unrelated chat lines of one speaker ("it" is not the same thing) never meet."""
    lines = ["I love it!", "I hate it.", "Yes, on June 4!", "Sure, it was June 9."]
    for n, line in enumerate(lines, 1):
        at = f"2026-05-0{n}T09:00:00Z"
        memory.add([ev(f"c-{n}", f"Caroline: {line}", at, subject="Caroline")])
    assert conflicts(memory, "Caroline") == []
    assert valid(memory, "Caroline") == ["c-1", "c-2", "c-3", "c-4"]


def test_a_speaker_prefix_does_not_hide_a_real_reversal(memory: Memory) -> None:
    memory.add([ev("j-1", "Jon: I love jazz.", "2026-05-01T09:00:00Z", subject="Jon")])
    memory.add([ev("j-2", "Jon: I hate jazz.", "2026-05-02T09:00:00Z", subject="Jon")])
    (conflict,) = conflicts(memory, "Jon")
    assert (conflict["target"], conflict["other"]) == ("j-1", "j-2")
    assert "jon" not in str(conflict["key"]).lower()


PAIRS = Path(__file__).parent / "data" / "contradiction_pairs.jsonl"


def _pair_scores(split: str) -> tuple[float, float]:
    """(precision, recall) of detection over the labelled pairs of one split."""
    tp = fp = fn = 0
    for case in (json.loads(line) for line in PAIRS.read_text().splitlines()):
        if case["split"] != split:
            continue
        with Memory(":memory:", detect_after_add=True) as memory:
            memory.add([ev("a", case["a"], case.get("a_at", "2024-05-01T10:00:00Z"))])
            memory.add([ev("b", case["b"], case.get("b_at", "2024-05-02T10:00:00Z"))])
            found = bool(conflicts(memory))
        tp += found and case["conflict"]
        fp += found and not case["conflict"]
        fn += not found and case["conflict"]
    return tp / max(tp + fp, 1), tp / max(tp + fn, 1)


@pytest.mark.parametrize(
    ("split", "floor_precision", "floor_recall"),
    # Measured before the chat-text rules: tuning 0.58 / 0.88, holdout 0.64 / 0.78
    # (negated third values, records of a day or a week, speaker names as keys).
    # After: 1.00 / 0.88 and 1.00 / 0.78; the holdout was written before the rules.
    [("tuning", 1.0, 0.875), ("holdout", 0.95, 0.75)],
)
def test_detection_precision_on_labelled_pairs(
    split: str, floor_precision: float, floor_recall: float
) -> None:
    precision, recall = _pair_scores(split)
    assert precision >= floor_precision, f"{split}: precision {precision:.2f}"
    assert recall >= floor_recall, f"{split}: recall {recall:.2f}"


SPENDS = [
    ("s-1", "I spent $40 on groceries.", "2026-03-01T10:00:00Z"),
    ("s-2", "I spent $65 on groceries.", "2026-03-08T10:00:00Z"),
    ("s-3", "I spent $12 on groceries.", "2026-03-15T10:00:00Z"),
    ("s-4", "Paid 30 EUR for the taxi.", "2026-03-16T10:00:00Z"),
    ("s-5", "Paid 45 EUR for the taxi.", "2026-03-17T10:00:00Z"),
]


def test_separate_spends_are_not_one_changed_value(memory: Memory) -> None:
    for id_, text, at in SPENDS:
        memory.add([ev(id_, text, at)])
    assert detected_ops(memory) == []
    assert valid(memory) == [id_ for id_, _, _ in SPENDS]
    memory.add([ev("r-1", "The rent is 1,200 EUR.", "2026-03-20T10:00:00Z")])
    memory.add([ev("r-2", "The rent is 1,300 EUR.", "2026-03-21T10:00:00Z")])
    assert [op["reason"] for op in detected_ops(memory)][:1] == ["detected: other-value"]


def test_values_of_different_quantities_never_contest(memory: Memory) -> None:
    memory.add([ev("q-1", "The office is kept at 18 °C.", "2026-03-01T10:00:00Z")])
    memory.add([ev("q-2", "Humidity in the office is 80 %.", "2026-03-02T10:00:00Z")])
    memory.add([ev("q-3", "The office is kept at 18 °C.", "2026-03-03T10:00:00Z")])
    assert detected_ops(memory) == []
    assert valid(memory) == ["q-1", "q-2", "q-3"]
