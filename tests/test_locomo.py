"""The LoCoMo loader: its two views (observations, dialogue turns) and the QA evidence.

The tests on the real file read it where it is kept (the shared data folder);
without it they are skipped, except under ``CI=true``. The eval tests use a
small file in the same format, on both backends.
"""

from __future__ import annotations

import functools
import io
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memlineage import Memory
from memlineage.interfaces.cli import main
from memlineage.operations import locomo

# per conversation: observations, dialogue turns (counted in the file by hand)
COUNTS = {
    "conv-26": (184, 419),
    "conv-30": (169, 369),
    "conv-41": (324, 663),
    "conv-42": (266, 629),
    "conv-43": (267, 680),
    "conv-44": (277, 675),
    "conv-47": (268, 689),
    "conv-48": (291, 681),
    "conv-49": (240, 509),
    "conv-50": (255, 568),
}
# Evidence entries of categories 1-4 that name no turn of their conversation: the
# dataset's own slips (a turn that is not there, "D", "D:11:26", "D30:05", ids joined
# by spaces). The loader keeps them as given, so that figures measured before stay.
UNRESOLVED = {
    ("conv-42", "D10:19"),
    ("conv-42", "D"),
    ("conv-43", "D:11:26"),
    ("conv-47", "D4:36"),
    ("conv-49", "D9:1 D4:4 D4:6"),
    ("conv-49", "D22:1 D22:2 D9:10 D9:11"),
    ("conv-49", "D21:18 D21:22 D11:15 D11:19"),
    ("conv-50", "D30:05"),
}


@pytest.fixture
def loaded(shared_data: Path) -> list[locomo.Conversation]:
    return _load(shared_data / "locomo" / "locomo10.json")


@functools.cache
def _load(path: Path) -> list[locomo.Conversation]:
    return locomo.load(path)


def test_both_views_count_their_events_per_conversation(
    loaded: list[locomo.Conversation],
) -> None:
    counts = {c.sample_id: (len(c.observations), len(c.turns)) for c in loaded}
    assert counts == COUNTS
    for conversation in loaded:
        assert conversation.events("observations") == conversation.observations
        assert conversation.events("turns") == conversation.turns


def test_event_ids_are_unique_and_name_their_conversation(
    loaded: list[locomo.Conversation],
) -> None:
    ids = [e.id for c in loaded for view in locomo.VIEWS for e in c.events(view)]
    assert [i for i, n in Counter(ids).items() if n > 1] == []
    first = loaded[0]
    assert first.turns[2].id == "26-D1:3"
    assert [o.id for o in first.observations[:2]] == ["26-0", "26-1"]


def test_turns_are_speaker_and_words_and_speakers_become_subjects(
    loaded: list[locomo.Conversation],
) -> None:
    first = loaded[0].turns[0]
    assert first.subject == "conv-26/Caroline"
    assert first.text == "Caroline: Hey Mel! Good to see you! How have you been?"
    assert first.at == "2023-05-08T13:56:00Z"  # "1:56 pm on 8 May, 2023": its session's
    for conversation in loaded:
        for view in locomo.VIEWS:
            subjects = {e.subject for e in conversation.events(view)}
            assert subjects == set(conversation.subjects), (conversation.sample_id, view)
        for turn in conversation.turns:
            speaker = turn.subject.split("/", 1)[1]
            assert turn.text.startswith(f"{speaker}: ")


def test_every_answerable_evidence_id_resolves_to_a_turn(
    loaded: list[locomo.Conversation],
) -> None:
    unresolved = set()
    items = 0
    for conversation in loaded:
        turns = conversation.by_dia_id("turns")
        for item in conversation.qa:
            if item.category not in locomo.ANSWERED:
                continue
            items += 1
            for dia_id in item.evidence:
                if dia_id in turns:
                    (turn,) = turns[dia_id]
                    assert turn.dia_ids == (dia_id,)
                else:
                    unresolved.add((conversation.sample_id, dia_id))
    assert items == 1540
    assert unresolved == UNRESOLVED


def test_an_observation_stands_for_every_turn_it_names(
    loaded: list[locomo.Conversation],
) -> None:
    # "Jon is working on opening a dance studio..." names two turns, as a list
    studio = next(
        o for c in loaded for o in c.observations if o.text.startswith("Jon is working on opening")
    )
    assert studio.dia_ids == ("D15:3", "D15:5")
    conversation = next(c for c in loaded if c.sample_id == "conv-30")
    assert studio in conversation.by_dia_id("observations")["D15:5"]
    for c in loaded:
        for o in c.observations:
            assert o.dia_ids and all(re.fullmatch(r"D\d+:\d+", d) for d in o.dia_ids), o


# ---------------------------------------------------------------------------
# a small file in LoCoMo's format: eval owes the evidence of either view


def _sample() -> list[dict[str, Any]]:
    turns = [
        ("Ann", "D1:1", "My budget for the trip is 4,500 EUR."),
        ("Bob", "D1:2", "Nice. I run 10 km every morning."),
        ("Ann", "D1:3", "I moved to Lisbon in May."),
    ]
    return [
        {
            "sample_id": "conv-1",
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Bob",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [{"speaker": s, "dia_id": d, "text": t} for s, d, t in turns],
            },
            "observation": {
                "session_1_observation": {
                    "Ann": [["Ann's trip budget is 4,500 EUR.", "D1:1"]],
                    "Bob": [["Bob runs 10 km every morning.", ["D1:2"]]],
                }
            },
            "qa": [
                {"question": "Ann's budget?", "answer": "4,500 EUR", "evidence": ["D1:1"],
                 "category": 4},
                {"question": "Where?", "answer": "Lisbon", "evidence": ["D1:3"], "category": 1},
                {"question": "Bob's car?", "adversarial_answer": "red", "evidence": ["D1:2"],
                 "category": 5},
            ],
        }
    ]  # fmt: skip


def test_a_small_file_reads_in_both_views(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(_sample()))
    (conversation,) = locomo.load(path)
    assert [(e.id, e.subject, e.text) for e in conversation.turns] == [
        ("1-D1:1", "conv-1/Ann", "Ann: My budget for the trip is 4,500 EUR."),
        ("1-D1:2", "conv-1/Bob", "Bob: Nice. I run 10 km every morning."),
        ("1-D1:3", "conv-1/Ann", "Ann: I moved to Lisbon in May."),
    ]
    assert [(e.id, e.dia_ids) for e in conversation.observations] == [
        ("1-0", ("D1:1",)),
        ("1-1", ("D1:2",)),
    ]
    # category 5 is not answerable: its evidence is not owed
    assert locomo.owed_evidence([conversation], "turns") == {"conv-1/Ann": ["1-D1:1", "1-D1:3"]}
    assert locomo.owed_evidence([conversation]) == {"conv-1/Ann": ["1-0"]}


@pytest.mark.parametrize("view", locomo.VIEWS)
def test_cli_eval_owes_the_evidence_of_the_stored_view(
    db_url: str, tmp_path: Path, view: locomo.View
) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(_sample()))
    (conversation,) = locomo.load(path)
    with Memory(db_url, tenant="acme") as memory:
        memory.add([e.as_added() for e in conversation.events(view)])
    out = io.StringIO()
    argv = ["eval", "--locomo", str(path), "--locomo-view", view, "--no-save"]
    assert main([*argv, "--db", db_url, "--tenant", "acme", "--json"], stdout=out) == 0
    report = json.loads(out.getvalue())
    owed = {s["subject"]: s["counts"]["evidence"] for s in report["subjects"]}
    assert owed == ({"conv-1/Ann": 2, "conv-1/Bob": 0} if view == "turns" else
                    {"conv-1/Ann": 1, "conv-1/Bob": 0})  # fmt: skip
    assert report["metrics"]["key_fact_recall"] == 1.0
