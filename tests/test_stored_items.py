"""Each selected event's items are stored (schema 17), so a process that never read
the subject (another worker, a restart, the command line) extracts only the events it
has not found stored, and builds what a process that extracts everything builds.

Stored items are a derived index: of the current extraction rules or ignored, and
never kept for an erased event.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlineage import Memory
from memlineage.consolidation.consolidate import build
from memlineage.lineage.audit import audit_text
from memlineage.meaning.extract import clear_caches, event_items
from memlineage.meaning.extract import items as extraction
from memlineage.model import Event
from memlineage.store.rows import items_from_text, items_text

TEXTS = [
    "Never call me before 9am.",
    "The budget is 4,500 EUR for the Lisbon trip.",
    "I moved to 12 Rue Mouffetard on 3 March 2026.",
    "My passport number is QX-7781234.",
    "We decided to use PostgreSQL 15, not MySQL.",
    "I love jazz, but I don't like loud bars.",
    "TODO: renew the insurance before the 1st of June.",
    "Thanks, see you tomorrow!",
    "The rack holds 40 servers and draws 12.5 kW.",
    "I'm allergic to peanuts.",
]


def said(start: int, count: int, subject: str = "user-7") -> list[dict[str, Any]]:
    return [
        {"id": f"m-{n}", "subject": subject, "text": TEXTS[n % len(TEXTS)] + f" (note {n})",
         "at": f"2026-03-{1 + n % 28:02d}T09:00:00Z",
         **({"facts": [{"key": "seat", "value": f"{n}A"}]} if n % 7 == 3 else {})}
        for n in range(start, start + count)
    ]  # fmt: skip


def extracted_events(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the events whose items are extracted from now on (not read stored)."""
    seen: list[str] = []
    real = extraction._event_items

    def counted(event: Event) -> Any:
        seen.append(event.id)
        return real(event)

    monkeypatch.setattr(extraction, "_event_items", counted)
    return seen


def stored_rows(memory: Memory) -> dict[int, tuple[int, str]]:
    with memory.store._read() as tx:  # type: ignore[attr-defined]
        rows = tx.all("SELECT seq, rules, items FROM event_items WHERE tenant = ?", ("acme",))
    return {int(seq): (int(rules), text) for seq, rules, text in rows}


def whole_build(memory: Memory) -> dict[str, Any]:
    built = build(memory.store, "acme", "user-7", incremental=False, budget=memory.default_budget)
    assert built.artifact.output is not None
    return built.artifact.output.to_json()


def test_a_process_that_never_read_the_subject_extracts_only_the_new_events(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.add(said(0, 30))
    assert memory.consolidate("user-7").switched
    memory.add(said(30, 3))
    clear_caches()  # what another worker or a restarted one starts with
    extracted = extracted_events(monkeypatch)
    result = memory.consolidate("user-7")
    assert result.switched
    assert not [e for e in extracted if int(e.removeprefix("m-")) < 30]
    text = memory.recall("user-7").summary or ""
    assert "Never call me before 9am. (note 30)" in text
    assert "The budget is 4,500 EUR for the Lisbon trip. (note 31)" in text


def test_a_build_from_stored_items_is_the_build_that_extracts_everything(
    memory: Memory,
) -> None:
    memory.add(said(0, 40))
    assert memory.consolidate("user-7").switched
    assert len(stored_rows(memory)) == 40
    clear_caches()
    from_stored = whole_build(memory)
    with memory.store._write() as tx:  # type: ignore[attr-defined]
        tx.execute("DELETE FROM event_items")
    clear_caches()
    assert json.dumps(whole_build(memory), sort_keys=True) == json.dumps(
        from_stored, sort_keys=True
    )


def test_items_of_other_rules_are_extracted_again_and_replaced(memory: Memory) -> None:
    memory.add(said(0, 12))
    assert memory.consolidate("user-7").switched
    written = stored_rows(memory)
    with memory.store._write() as tx:  # type: ignore[attr-defined]
        tx.execute("UPDATE event_items SET rules = rules - 1, items = '[]'")
    clear_caches()
    memory.add(said(12, 1))
    assert memory.consolidate("user-7").switched
    text = memory.recall("user-7").summary or ""
    assert "My passport number is QX-7781234. (note 3)" in text  # not read from '[]'
    assert {seq: row for seq, row in stored_rows(memory).items() if seq in written} == written


def test_an_event_erased_after_the_read_is_not_stored_by_the_write(memory: Memory) -> None:
    memory.add(said(0, 5))
    built = build(memory.store, "acme", "user-7", budget=memory.default_budget)
    assert len(built.unstored) == 5
    memory.erase("m-3", reason="GDPR art. 17 request", by="dpo@example.com")
    built.write(memory.store, "acme")
    stored = stored_rows(memory)
    assert sorted(stored) == [1, 2, 3, 5]  # seq 4 is m-3
    assert not any("QX-7781234" in text for _, text in stored.values())


def test_an_erasure_deletes_the_stored_items_of_the_event(memory: Memory) -> None:
    memory.add(said(0, 5))
    assert memory.consolidate("user-7").switched
    assert "QX-7781234" in stored_rows(memory)[4][1]
    memory.erase("m-3", reason="GDPR art. 17 request", by="dpo@example.com")
    assert 4 not in stored_rows(memory)


def test_an_audit_fails_on_stored_items_left_behind_by_an_erasure(memory: Memory) -> None:
    memory.add(said(0, 5))
    assert memory.consolidate("user-7").switched
    (kept,) = [text for seq, (_, text) in stored_rows(memory).items() if seq == 4]
    memory.erase("m-3", reason="GDPR art. 17 request", by="dpo@example.com")
    report = memory.audit("user-7")
    assert report.ok and report.to_json()["erased_items"] == []
    with memory.store._write() as tx:  # type: ignore[attr-defined]  # as a bug would
        tx.execute(
            "INSERT INTO event_items (tenant, subject, seq, rules, items)"
            " VALUES ('acme', 'user-7', 4, 1, ?)",
            (kept,),
        )
    report = memory.audit("user-7")
    assert not report.ok and report.erased_items == ("m-3",)
    assert "LEFTOVER: erased m-3 still has stored items" in audit_text(report)


def test_another_tenant_never_reads_these_items(db_url: str) -> None:
    with Memory(db_url, tenant="acme") as acme, Memory(db_url, tenant="globex") as globex:
        acme.add(said(0, 5))
        assert acme.consolidate("user-7").switched
        globex.add([{"id": f"m-{n}", "subject": "user-7", "text": f"I prefer tea number {n}."}
                    for n in range(5)])  # fmt: skip
        clear_caches()
        result = globex.consolidate("user-7")
        assert result.switched and result.artifact.output is not None
        claims = json.dumps([c.to_json() for c in result.artifact.output.claims])
        assert "tea" in claims
        assert "QX-7781234" not in claims and "seat" not in claims and "9am" not in claims


@settings(max_examples=200, deadline=None)
@given(
    st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=200).filter(
        str.strip
    ),
    st.sampled_from(["note", "constraint", "preference", "decision"]),
)
def test_stored_items_read_back_as_extracted(text: str, kind: str) -> None:
    event = Event(id="e-1", subject="s", text=text, at="2026-03-01T09:00:00Z", kind=kind, seq=1)
    found = event_items(event)
    assert list(items_from_text(items_text(found), "e-1")) == found


# What an array literal would have to escape: quotes, backslashes, braces, commas, a
# NULL look-alike, white space at the ends, a newline and text outside ASCII.
ARRAY_PUNCTUATION = [
    ('q"1', 'She said "no" to {A, B}; budget 4,500 EUR.'),
    ("b\\2", "Path C:\\temp\\new costs 12 EUR, not 13."),
    ("NULL", "NULL"),
    ("{x,y}", " I prefer tea, {not} coffee. "),
    ("é ☃", "Ünïcödé: I'm allergic to peanuts.\nNever before 9am."),
]


def test_texts_and_ids_with_array_punctuation_are_stored_and_linked_exactly(
    memory: Memory,
) -> None:
    memory.add([{"id": i, "subject": "user-7", "text": t} for i, t in ARRAY_PUNCTUATION])
    result = memory.consolidate("user-7")
    assert result.switched
    stored = stored_rows(memory)
    for seq, (event_id, text) in enumerate(ARRAY_PUNCTUATION, start=1):
        event = Event(id=event_id, subject="user-7", text=text, seq=seq)
        assert list(items_from_text(stored[seq][1], event_id)) == event_items(event)
    with memory.store._read() as tx:  # type: ignore[attr-defined]
        parents = tx.all(
            "SELECT parent FROM derivation WHERE tenant = ? AND child = ?",
            ("acme", result.artifact.id),
        )
    assert sorted(p for (p,) in parents) == sorted(i for i, _ in ARRAY_PUNCTUATION)
    assert [e.id for e in memory.events("user-7")] == [i for i, _ in ARRAY_PUNCTUATION]
