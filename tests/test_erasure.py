"""Erasure: the text is found nowhere afterwards, not in a table, not in the file bytes."""

from __future__ import annotations

import dataclasses
import gc
import os
import subprocess
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import PG_URL
from memlineage import Memory
from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.errors import BadInput
from memlineage.operations.evaluate import GoldFact
from memlineage.operations.queue import RetryPolicy
from memlineage.recall.prompt import render
from memlineage.store import scrub as erasure
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


TOKEN = "zqvmkilimanjaroflute"
TAIL = b"manjaroflut"  # FTS5 keeps stemmed terms with shared prefixes cut: look for the tail


def test_no_byte_of_the_erased_text_stays_in_the_sqlite_files(tmp_path: Path) -> None:
    """FTS5 keeps a deleted term in its old segments until they merge: erase merges them."""
    db = tmp_path / "erase.db"
    with Memory(str(db), tenant="acme") as memory:
        memory.add([{"id": "s-1", "subject": "user-7", "text": f"My code word is {TOKEN}."}])
        for batch in range(20):  # several FTS5 segments, the token's among the older ones
            memory.add(
                [{"id": f"f-{batch}-{i}", "subject": "user-7", "text": f"Filler {batch} {i}."}
                 for i in range(5)]
            )  # fmt: skip
        assert TAIL in db.read_bytes() + Path(f"{db}-wal").read_bytes()
        result = memory.erase("s-1", reason="request", by="dpo")
        assert result.purged
        for file in (db, Path(f"{db}-wal")):
            if file.exists():
                assert TAIL not in file.read_bytes(), file
        assert "s-1" not in [e.id for e in memory.recall("user-7", query=TOKEN).events]
        ranked = memory.rank("user-7", "filler 7", ["f-7-1", "f-8-1"])
        assert ranked[0][0] == "f-7-1"  # the merged index still answers


def _schema_of(pg_url: str) -> str:
    return pg_url.rsplit("search_path%3D", 1)[-1]


def _relation_bytes(pg_url: str) -> bytes:
    """The files of every table, index and TOAST table of the test schema."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")  # the pages on disk, not only in shared buffers
        root = Path(str(conn.execute("SHOW data_directory").fetchone()[0]))  # type: ignore[index]
        paths = [
            str(r[0])
            for r in conn.execute(
                "SELECT pg_relation_filepath(c.oid) FROM pg_class c"
                " JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname IN (current_schema(), 'pg_toast') AND c.relkind IN ('r','i','t')"
                " AND pg_relation_filepath(c.oid) IS NOT NULL"
            )
        ]
    if not os.access(root, os.R_OK):
        pytest.skip(f"the server's data directory {root} is not readable here")
    return b"".join((root / p).read_bytes() for p in paths if (root / p).exists())


def test_postgresql_dump_holds_no_byte_and_vacuum_full_clears_the_files(pg_url: str) -> None:
    """What docs/lineage.md promises on PostgreSQL: the logical content is gone at once (a
    dump shows none of it); old row versions stay in the relation files until VACUUM FULL."""
    with Memory(pg_url, tenant="acme") as memory:
        memory.add([{"id": "s-1", "subject": "user-7", "text": f"My code word is {TOKEN}."}])
        memory.add([{"id": "s-2", "subject": "user-7", "text": "Never call before 9 am."}])
        assert memory.consolidate("user-7").switched
        result = memory.erase("s-1", reason="request", by="dpo")
        assert result.changed and not result.purged  # PostgreSQL cannot promise it at once
    dumped = subprocess.run(
        ["pg_dump", "--schema", _schema_of(pg_url), "--data-only", PG_URL],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    assert TOKEN.encode() not in dumped.lower() and TAIL not in dumped.lower()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        )]  # fmt: skip
        for table in tables:
            conn.execute(f'VACUUM FULL "{table}"')
    assert TAIL not in _relation_bytes(pg_url)


class Rejected(DeterministicGenerator):
    """Leaves every claim out: the gate rejects the output, its report naming the keys lost."""

    name = "rejected"

    def generate(self, request: GenerationRequest) -> dict[str, Any]:
        output = super().generate(request)
        output["claims"] = []
        return output


class Failing(DeterministicGenerator):
    """Fails with a message quoting an event, as a remote model's error body may."""

    name = "failing"

    def generate(self, request: GenerationRequest) -> dict[str, Any]:
        raise RuntimeError(f"upstream refused: {request.events[0].text}")


def everything_that_writes(memory: Memory, token: str) -> None:
    memory.add(
        [
            {"id": "s-1", "subject": "user-7", "kind": "constraint",
             "text": f"Never share {token} password with anyone."},
            {"id": "s-2", "subject": "user-7", "text": f"My locker code is {token}7.",
             "facts": [{"key": "locker", "value": f"{token}7"}]},
            {"id": "s-3", "subject": "user-7", "text": "I prefer trains."},
        ]
    )  # fmt: skip
    assert memory.consolidate("user-7").switched
    assert not memory.consolidate("user-7", Rejected(), force=True).switched
    memory.eval(["user-7"], gold=[GoldFact("s-2", f"{token}7", key="locker")], save=True)
    memory.add([{"id": "s-4", "subject": "user-7", "text": "Forget the locker."}])
    memory.revoke("s-4", reason=f"user said: forget {token} please")
    memory.conflict("s-3", "s-4", key=f"about {token}")
    memory.queue(["user-7"], force=True)
    memory.work(Failing(), retry=RetryPolicy(max_attempts=1))
    memory.erase("s-1", reason=f"GDPR: erase {token}", by="dpo")
    memory.erase("s-2", reason="GDPR", by="dpo")


@settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(word=st.text(alphabet="bcdfghjklmnpqrstvwxz", min_size=8, max_size=14))
def test_erasure_leaves_no_derived_copy_of_a_secret_token(db_url: str, word: str) -> None:
    """A random token through every command that writes, then erased: no table holds it."""
    token = f"qz{word}"
    tenant = f"t{uuid.uuid4().hex[:8]}"
    with Memory(db_url, tenant=tenant) as memory:
        everything_that_writes(memory, token)
        assert memory.jobs()[0].state == "dead"  # the failure was recorded
        found = [(t, v) for t, v in every_text(memory.store) if token in str(v).casefold()]
        assert found == []
        audit_doc = str(memory.audit("user-7").to_json())
        assert token not in audit_doc.casefold()
        if memory.store.dialect == "sqlite":  # type: ignore[attr-defined]
            files = [Path(db_url), Path(f"{db_url}-wal")]
            data = b"".join(f.read_bytes() for f in files if f.exists()).lower()
            assert token[-8:].encode() not in data


def test_own_words_are_scrubbed_as_whole_words_only() -> None:
    own = erasure.own_words("My code word is Flute-77.", ["The codes are wrong.", "my word"])
    assert own == ["code", "flute"]  # 'my', 'word' and 'is' are another event's or too short
    found = erasure.pattern([], own)
    assert erasure.scrub("share-FLUTE-code; codes stay; flutes stay", found) == (
        "share-[erased]-[erased]; codes stay; flutes stay"
    )


def test_erase_on_a_full_disk_commits_and_says_the_purge_is_pending(tmp_path: Path) -> None:
    """The merge and checkpoint need free pages; without them the erasure still holds,
    ``purged`` is false, and erasing again once there is room finishes the purge."""
    db = tmp_path / "full.db"
    with Memory(str(db), tenant="acme") as memory:
        memory.add([{"id": "s-1", "subject": "user-7", "text": f"My code word is {TOKEN}."}])
        for batch in range(30):
            text = "Filler words {} number {} here."
            memory.add(
                [{"id": f"f-{batch}-{i}", "subject": "user-7", "text": text.format(batch, i)}
                 for i in range(5)]
            )  # fmt: skip
        conn = memory.store.conn  # type: ignore[attr-defined]
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")  # the disk is full
        first = memory.erase("s-1", reason="request", by="dpo")
        assert first.changed and not first.purged
        assert "s-1" not in [e.id for e in memory.recall("user-7").events]
        conn.execute("PRAGMA max_page_count = 1073741823")  # room again
        again = memory.erase("s-1", reason="request", by="dpo")
        assert not again.changed and again.purged
        for file in (db, Path(f"{db}-wal")):
            if file.exists():
                assert TAIL not in file.read_bytes(), file


def _objects_holding(needle: str) -> list[str]:
    """Every live container or object whose strings hold ``needle``: what a memory dump
    of this process would show."""
    gc.collect()
    found = []
    for obj in gc.get_objects():
        if isinstance(obj, dict):
            values: Iterable[object] = (*obj.keys(), *obj.values())
        elif isinstance(obj, list | tuple | set | frozenset):
            values = obj
        elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            values = (getattr(obj, f.name, None) for f in dataclasses.fields(obj))
        else:
            continue
        if any(isinstance(v, str) and needle in v for v in values):
            found.append(type(obj).__name__)
    return found


def test_the_erasing_process_keeps_no_copy_of_the_text(memory: Memory) -> None:
    """Extraction, rendering, token counts, parsed summaries and the gate keep what they
    read per process; an erasure empties them in the process that erased."""
    secret = f"Quokka{uuid.uuid4().hex[:10]}"
    memory.add(
        [{"id": "m-1", "subject": "u", "text": f"My locker code is {secret}, never share it."}]
    )
    memory.add([{"id": "m-2", "subject": "u", "text": "We talked about lunch."}])
    memory.consolidate("u")
    memory.add([{"id": "m-3", "subject": "u", "text": "The gym opens at 6."}])
    memory.consolidate("u")
    assert "Quokka" in render(memory.recall("u", query="locker code", budget=200), "markdown")
    assert _objects_holding(secret)  # it was read and remembered
    memory.erase("m-1", reason="asked by the user")
    assert _objects_holding(secret) == []
