"""A consolidation reads only what its process has not read of the subject (store/inputs.py).

Cost follows the work: a worker that consolidated a subject before reads the
new events, not the subject's whole history. What it skips must never be out
of date: a revocation, a trust policy or an erasure made by another process
(another store object here, or a real process for the erasure, since an
erasure empties this process's caches) is read on the next run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from memlineage import Memory
from memlineage.store import inputs


def said(start: int, count: int, subject: str = "user-7") -> list[dict[str, Any]]:
    return [
        {"id": f"m-{n}", "subject": subject, "text": f"Rack {n} holds {n + 10} servers.",
         "at": f"2026-03-{1 + n % 28:02d}T09:00:00Z"}
        for n in range(start, start + count)
    ]  # fmt: skip


def rows_decoded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the event rows a consolidation's read decodes from now on."""
    decoded: list[str] = []
    real = inputs.event_from_row

    def counted(row: Any) -> Any:
        event = real(row)
        decoded.append(event.id)
        return event

    monkeypatch.setattr(inputs, "event_from_row", counted)
    return decoded


def summary(memory: Memory) -> str:
    return memory.recall("user-7").summary or ""


def test_a_second_run_reads_the_new_events_only(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.add(said(0, 40))
    assert memory.consolidate("user-7").switched
    memory.add(said(40, 3))
    decoded = rows_decoded(monkeypatch)
    result = memory.consolidate("user-7")
    assert result.switched
    assert decoded == ["m-39", "m-40", "m-41", "m-42"]  # the last one read, to check it
    assert "Rack 42 holds 52 servers." in summary(memory)
    output = result.artifact.output
    assert output is not None  # every event read before is still shown or cold
    shown = {source for statement in output.statements for source in statement.derived_from}
    assert shown | set(output.cold) == {f"m-{n}" for n in range(43)}


def test_a_conflict_among_the_new_events_reads_only_them(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Detection records conflicts among the new events (one kept, one the temporal
    policy resolves): the older events read as before, so they are not read again."""
    memory.add(said(0, 40))
    first = memory.consolidate("user-7")
    assert first.switched
    day = "2026-04-0{}T09:00:00Z".format
    memory.add([
        {"id": "m-40", "subject": "user-7", "text": "The budget is 4,500 EUR.", "at": day(1)},
        {"id": "m-41", "subject": "user-7", "text": "I love jazz.", "at": day(2)},
        {"id": "m-42", "subject": "user-7", "text": "The budget is 5,000 EUR.", "at": day(3)},
        {"id": "m-43", "subject": "user-7", "text": "I hate jazz.", "at": day(4)},
    ])  # fmt: skip
    decoded = rows_decoded(monkeypatch)
    result = memory.consolidate("user-7")
    assert result.switched
    assert decoded == ["m-39", "m-40", "m-41", "m-42", "m-43"]
    assert result.artifact.manifest.derived_from_artifact == first.artifact.id  # built on it
    output = result.artifact.output
    assert output is not None and len(output.unresolved_conflicts) == 1
    contested = {s.text: s.contested for s in output.statements}
    assert contested["The budget is 4,500 EUR."] == output.unresolved_conflicts[0]
    assert contested["The budget is 5,000 EUR."] == output.unresolved_conflicts[0]
    assert all(mark is None for text, mark in contested.items() if "budget" not in text)
    text = summary(memory)
    assert "I hate jazz." in text and "I love jazz." not in text  # the later one wins
    assert "Rack 39 holds 49 servers." in text


def test_a_revocation_by_another_process_is_read(memory: Memory, db_url: str) -> None:
    memory.add(said(0, 5))
    memory.consolidate("user-7")
    assert "Rack 3 holds 13 servers." in summary(memory)
    with Memory(db_url, tenant="acme") as other:  # a store of its own, as another process
        other.revoke("m-3", "wrong rack")
    memory.add(said(5, 2))
    assert memory.consolidate("user-7").switched
    text = summary(memory)
    assert "Rack 3 holds 13 servers." not in text
    assert "Rack 6 holds 16 servers." in text


def test_a_quiet_policy_by_another_process_holds_for_new_events(
    memory: Memory, db_url: str
) -> None:
    memory.set_trust_policy(block=["injection"])  # a 'scraped' label is admitted
    memory.add(said(0, 3))
    memory.consolidate("user-7")
    with Memory(db_url, tenant="acme") as other:
        other.set_trust_policy(block=["injection", "scraped"])  # no stored event moves
    memory.add([{"id": "q-1", "subject": "user-7", "text": "The deploy key is ORION-77.",
                 "taint": ["scraped"]}, *said(3, 1)])  # fmt: skip
    assert memory.consolidate("user-7").switched
    text = summary(memory)
    assert "ORION-77" not in text
    assert "Rack 3 holds 13 servers." in text


def test_an_erasure_by_another_process_is_read(memory: Memory, db_url: str) -> None:
    memory.add(said(0, 5))
    memory.consolidate("user-7")
    erase = (
        "import sys; from memlineage import Memory\n"
        "with Memory(sys.argv[1], tenant='acme') as m: m.erase('m-2', 'asked to', by='user-7')"
    )
    subprocess.run([sys.executable, "-c", erase, db_url], check=True, timeout=120)
    memory.add(said(5, 1))
    memory.consolidate("user-7")
    recalled = memory.recall("user-7", "rack servers", budget=2000)
    assert "Rack 2 holds 12 servers." not in json.dumps(recalled.to_json())
    assert "Rack 2 holds 12 servers." not in summary(memory)
    assert "Rack 5 holds 15 servers." in summary(memory)


def test_a_database_that_is_not_the_one_read_is_read_whole(tmp_path: Any) -> None:
    """A long-lived process whose database was replaced (a restore, one dropped and made
    again) must not take the old one's events for the new one's, even where the new
    one's counters say nothing happened since."""
    place = type("Place", (), {})()  # one store object over two databases in turn
    with (
        Memory(str(tmp_path / "a.db"), tenant="acme") as first,
        Memory(str(tmp_path / "b.db"), tenant="acme") as second,
    ):
        first.add(said(0, 4))
        second.add([{**e, "text": e["text"].replace("Rack", "Shelf")} for e in said(0, 5)])
        read = inputs.consolidation_input(place, first.store._read_together, "acme", "user-7")
        assert read is not None and read.events[1].text == "Rack 1 holds 11 servers."
        read = inputs.consolidation_input(place, second.store._read_together, "acme", "user-7")
    assert read is not None
    assert [e.text for e in read.events][:2] == [
        "Shelf 0 holds 10 servers.", "Shelf 1 holds 11 servers."
    ]  # fmt: skip


def test_a_summary_another_process_published_is_read_with_its_output(
    memory: Memory, db_url: str
) -> None:
    """The head is read without the summary's output when this process wrote it; one
    another process wrote is read whole, and the next run builds on it."""
    memory.add(said(0, 4))
    memory.consolidate("user-7")
    with Memory(db_url, tenant="acme") as other:
        other.add(said(4, 2))
        published = other.consolidate("user-7").artifact
    memory.add(said(6, 1))
    result = memory.consolidate("user-7")
    assert result.switched
    assert result.artifact.manifest.derived_from_artifact == published.id
    text = summary(memory)
    assert all(f"Rack {n} holds {n + 10} servers." in text for n in range(7))


WHOLE_BUILD = """
import json, sys
from memlineage import Memory
from memlineage.consolidation.consolidate import build
with Memory(sys.argv[1], tenant="acme") as memory:
    built = build(memory.store, "acme", "user-7", incremental=False, budget=memory.default_budget)
    print(json.dumps(built.artifact.output.to_json(), sort_keys=True))
"""


def tail(start: int, texts: list[str]) -> list[dict[str, Any]]:
    return [
        {"id": f"m-{start + n}", "subject": "user-7", "text": text,
         "at": f"2026-05-{1 + (start + n) % 28:02d}T09:00:00Z"}
        for n, text in enumerate(texts)
    ]  # fmt: skip


def test_each_run_on_what_this_process_kept_says_what_a_fresh_process_builds(
    memory: Memory, db_url: str
) -> None:
    """A worker's runs on its kept reads and builds, through quiet tails, conflicts among
    a tail's own events, and one with an older event (a whole run): each published
    summary is the one a process that never saw the subject builds from the store."""
    memory.add(said(0, 30))
    memory.consolidate("user-7")
    tails = [
        ["Rack 90 holds 3 servers.", "Hi!", "TODO: label rack 90.", "The fee is 40 EUR."],
        ["The budget is 4,500 EUR.", "I love jazz.", "The budget is 5,000 EUR.", "I hate jazz."],
        ["Rack 91 holds 4 servers.", "I love opera.", "I hate opera now."],
        ["The fee is 55 EUR."],  # contradicts an older event: built whole
        ["Rack 92 holds 5 servers."],
    ]
    start, built_on_parent = 30, []
    for texts in tails:
        memory.add(tail(start, texts))
        start += len(texts)
        result = memory.consolidate("user-7")
        assert result.switched and result.artifact.output is not None
        built_on_parent.append(result.artifact.manifest.derived_from_artifact is not None)
        fresh = subprocess.run(
            [sys.executable, "-c", WHOLE_BUILD, db_url], capture_output=True, text=True, check=True
        ).stdout
        assert json.loads(fresh) == result.artifact.output.to_json()
    assert built_on_parent == [True, True, True, False, True]
