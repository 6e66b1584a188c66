"""Erasure: the text is found nowhere afterwards, not in a table, not in the file bytes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memlineage import Memory
from memlineage.errors import BadInput
from memlineage.store.base import SqlStore

SECRET = "My passport number is QX-7781234 and I live at 12 Rue Mouffetard."
PIECES = ["QX-7781234", "Rue Mouffetard", "passport number"]


def fill(memory: Memory) -> None:
    memory.add(
        [
            {"id": "s-1", "subject": "user-7", "text": SECRET, "kind": "fact",
             "facts": [{"key": "passport", "value": "QX-7781234"}]},
            {"id": "s-2", "subject": "user-7", "text": "Never call before 9 am.",
             "kind": "constraint"},
        ]
    )  # fmt: skip
    assert memory.consolidate("user-7").switched
    memory.add([{"id": "s-3", "subject": "user-7", "text": "I prefer trains."}])
    assert memory.consolidate("user-7").switched
    memory.add([{"id": "s-4", "subject": "user-7", "text": "Forget what I said."}])
    memory.revoke("s-4", reason="quoted: " + SECRET)


def every_text(store: SqlStore) -> list[tuple[str, Any]]:
    """Every value of every row of every table of the database."""
    with store._read() as tx:
        if store.dialect == "sqlite":
            tables = [r[0] for r in tx.all("SELECT name FROM sqlite_master WHERE type = 'table'")]
        else:
            tables = [
                r[0]
                for r in tx.all(
                    "SELECT table_name FROM information_schema.tables"
                    " WHERE table_schema = current_schema()"
                )
            ]
        found = []
        for table in tables:
            for row in tx.all(f"SELECT * FROM {table}"):
                found += [(table, value) for value in row]
    return found


def leaks(haystack: str) -> list[str]:
    folded = haystack.casefold()
    return [p for p in PIECES if p.casefold() in folded]


def test_erasure_leaves_the_text_nowhere(memory: Memory) -> None:
    fill(memory)
    assert any(leaks(str(v)) for _, v in every_text(memory.store))  # it was copied around
    before = {e.id: (e.seq, e.hash) for e in memory.store.subject_history("acme", "user-7").events}  # type: ignore[attr-defined]
    result = memory.erase("s-1", reason="GDPR art. 17 request #812", by="dpo@example.com")
    assert result.changed and result.stale and result.scrubbed
    assert [(t, v) for t, v in every_text(memory.store) if leaks(str(v))] == []
    if memory.store.dialect == "sqlite":  # type: ignore[attr-defined]
        assert result.purged
        path = Path(memory.store.path)  # type: ignore[attr-defined]
        for file in (path, Path(f"{path}-wal")):
            if file.exists():
                data = file.read_bytes()
                assert all(p.encode() not in data for p in PIECES), file
    history = memory.store.subject_history("acme", "user-7")  # type: ignore[attr-defined]
    after = {e.id: (e.seq, e.hash) for e in history.events}
    assert after == before  # id, seq and hash stay
    assert memory.audit("user-7").ok  # so every manifest still verifies
    (erasure,) = history.erasures
    assert (erasure.event_id, erasure.erased_by, erasure.reason) == (
        "s-1", "dpo@example.com", "GDPR art. 17 request #812",
    )  # fmt: skip
    recalled = memory.recall("user-7")
    assert recalled.mode == "raw" and "s-1" not in [e.id for e in recalled.events]
    rebuilt = memory.consolidate("user-7")
    assert rebuilt.switched and "s-1" not in rebuilt.artifact.manifest.input_ids
    assert not leaks(str(memory.recall("user-7").to_json()))


def test_erasing_twice_is_a_no_op_and_a_reason_is_required(memory: Memory) -> None:
    fill(memory)
    with pytest.raises(BadInput, match="reason"):
        memory.erase("s-1", reason=" ")
    assert memory.erase("s-1", reason="request").changed
    again = memory.erase("s-1", reason="request")
    assert not again.changed
    assert memory.recall("user-7").events[0].id != "s-1"


def test_an_erased_event_stays_invalid_whatever_happens_next(memory: Memory) -> None:
    memory.add([{"id": "a", "subject": "user-7", "text": "I love jazz."},
                {"id": "b", "subject": "user-7", "text": "I hate jazz."}])  # fmt: skip
    memory.detect("user-7")
    (conflict,) = [o for o in memory.audit("user-7").doc["operations"] if o["kind"] == "conflict"]
    memory.erase("b", reason="request")
    memory.dismiss(str(conflict["conflict_id"]))
    assert [e.id for e in memory.recall("user-7").events] == ["a"]
