"""Versioned schema migrations applied at open; a newer schema is refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memlineage import Memory, SchemaTooNew, open_store, render
from memlineage.store.base import SqlStore
from memlineage.store.postgres import PostgresStore
from memlineage.store.protocol import StoredKinds
from memlineage.store.rows import dumps
from memlineage.store.sqlite import SqliteStore

NARRATIVE = "The team talked about the garden party, the weather and the music playlist."


def with_extra_migration(store_class: type[SqlStore]) -> type[SqlStore]:
    class Newer(store_class):  # type: ignore[valid-type,misc]
        def migrations(self) -> list[tuple[int, str]]:
            # Numbers are reserved per feature, so the files may have gaps: one past the last.
            extra = (
                super().migrations()[-1][0] + 1,  # numbers are reserved per feature: gaps
                "CREATE TABLE upgrade_probe (tenant TEXT NOT NULL, note TEXT)",
            )
            return [*super().migrations(), extra]

    return Newer


def schema_version(store: SqlStore) -> int:
    with store._read() as tx:
        return store._schema_version(tx)


def test_opening_migrates_and_reopening_is_a_no_op(db_url: str) -> None:
    store = open_store(db_url)
    latest = schema_version(store)
    store.close()
    again = open_store(db_url)
    assert schema_version(again) == latest == again.migrations()[-1][0]
    again.close()


def test_an_older_schema_is_migrated_and_keeps_its_data(db_url: str) -> None:
    with Memory(db_url, tenant="acme") as memory:
        memory.add([{"id": "m-1", "subject": "user-7", "text": "keep me"}])
        store_class = type(memory.store)
        url = memory.store.url if store_class.dialect == "postgres" else memory.store.path  # type: ignore[attr-defined]
    newer = with_extra_migration(store_class)(url)
    assert schema_version(newer) == newer.migrations()[-1][0]
    with Memory(store=newer, tenant="acme") as memory:
        assert [e.id for e in memory.recall("user-7").events] == ["m-1"]


def test_a_newer_schema_is_refused_with_a_clear_message(db_url: str) -> None:
    store = open_store(db_url)
    url = store.url if store.dialect == "postgres" else store.path  # type: ignore[attr-defined]
    store_class = type(store)
    store.close()
    with_extra_migration(store_class)(url).close()
    with pytest.raises(SchemaTooNew, match="upgrade memlineage"):
        open_store(db_url)


def at_schema(store_class: type[SqlStore], version: int) -> type[SqlStore]:
    class Older(store_class):  # type: ignore[valid-type,misc]
        def migrations(self) -> list[tuple[int, str]]:
            return [m for m in super().migrations() if m[0] <= version]

    return Older


def test_a_store_of_schema_8_keeps_its_negations_and_catches_up_its_item_kinds(
    db_url: str,
) -> None:
    store_class = PostgresStore if db_url.startswith("postgresql") else SqliteStore
    old = at_schema(store_class, 8)(db_url)
    assert schema_version(old) == 8
    with Memory(store=old, tenant="acme", detect_after_add=False) as memory:
        memory.add(
            [{"id": "m-1", "subject": "user-7", "text": "I do not eat shellfish."}]
            + [{"id": f"n-{n}", "subject": "user-7", "text": NARRATIVE} for n in range(8)]
        )
        with old._write() as tx:  # schema 8's detection job had checked every event
            tx.execute("UPDATE clocks SET detected_through = high_water")
    with Memory(db_url, tenant="acme") as memory:
        assert memory.store.schema_version() >= 9
        recalled = memory.recall("user-7", query="garden party", budget=120)
        assert "I do not eat shellfish." in render(recalled)
        memory.add([{"id": "m-2", "subject": "user-7", "text": "I prefer trains."}])
        memory.detect("user-7")  # the job's next run (add leaves it to a worker)
        with memory.store.reader("acme") as reader:  # the job's next run caught up
            assert reader.stored_kinds("user-7") == StoredKinds(
                10, {1: ("binding", "negation"), 10: ("binding", "preference")}
            )


def test_a_store_of_schema_9_gets_vectors_for_the_events_it_had(db_url: str) -> None:
    store_class = PostgresStore if db_url.startswith("postgresql") else SqliteStore
    old = at_schema(store_class, 9)(db_url)
    assert schema_version(old) == 9
    # what schema 9 held; today's detection reads columns of later schemas
    with Memory(store=old, tenant="acme", detect_after_add=False) as memory:
        memory.add([{"id": f"m-{n}", "subject": "user-7", "text": f"fact {n}"} for n in range(3)])
    with Memory(db_url, tenant="acme") as memory:
        assert memory.store.schema_version() == memory.store.migrations()[-1][0] >= 11
        assert memory.store.pending_embedding("acme") == []  # no embedder set yet
        (run,) = memory.embed()
        assert (run.embedded, run.through, run.done) == (3, 3, True)
        assert sorted(memory.store.vectors("acme", "user-7", ["m-0", "m-1", "m-2"])) == [
            "m-0", "m-1", "m-2",
        ]  # fmt: skip


def test_a_store_of_schema_12_keeps_each_artifact_status_and_stales_after_upgrade(
    db_url: str, tmp_path: Path
) -> None:
    """Schema 13 moves status, reason and status_at out of the artifact row: nothing moves."""
    events = [
        {"id": "m-1", "subject": "user-7", "text": "Never deploy on Fridays."},
        {"id": "m-2", "subject": "user-7", "text": "The budget is at most 4,500 EUR."},
    ]
    with Memory(str(tmp_path / "source.db"), tenant="acme") as source:  # real artifacts
        source.add(events)
        source.consolidate("user-7")
        source.add([{"id": "m-3", "subject": "user-7", "text": "We met at the harbour café."}])
        source.consolidate("user-7")
        with source.store.reader("acme") as reader:
            first, second = reader.artifacts("user-7")
    statuses = {  # what schema 12 held, every kind of status that stays or goes stale
        first.id: ("superseded", None, "2026-01-01T00:00:01.000000Z"),
        second.id: ("published", "fallback: built-in output", "2026-01-01T00:00:02.000000Z"),
        "a-rejected": ("rejected", "rejected in review by ana: no", "2026-01-01T00:00:03.000000Z"),
    }
    bodies = {first.id: first, second.id: second, "a-rejected": second}
    store_class = PostgresStore if db_url.startswith("postgresql") else SqliteStore
    old = at_schema(store_class, 12)(db_url)
    with old._write() as tx:
        for artifact_id, (status, reason, at) in statuses.items():
            body = bodies[artifact_id]
            tx.execute(
                "INSERT INTO artifacts (tenant, subject, id, status, reason, manifest, output,"
                " gate, created_at, status_at) VALUES ('acme', 'user-7', ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    artifact_id, status, reason, dumps(body.manifest.to_json()),
                    dumps(body.output.to_json()) if body.output else None,
                    dumps(body.gate.to_json()), at, at,
                ),
            )  # fmt: skip
            parents = [*body.manifest.input_ids, body.manifest.derived_from_artifact or "m-1"]
            tx.executemany(
                "INSERT INTO derivation (tenant, subject, parent, child) VALUES (?, ?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                [("acme", "user-7", p, artifact_id) for p in parents],
            )
    old.close()
    with Memory(db_url, tenant="acme") as memory:
        assert memory.store.schema_version() >= 13
        assert isinstance(memory.store, SqlStore)
        with memory.store._read() as tx:
            kept = tx.all("SELECT id, status, reason, status_at FROM artifact_status")
        assert sorted(kept) == sorted((k, *v) for k, v in statuses.items())
        assert {a.id: (str(a.status), a.reason) for a in memory.artifacts("user-7")} == {
            k: v[:2] for k, v in statuses.items()
        }
        memory.add(events)
        memory.add([{"id": "m-9", "subject": "user-7", "text": "5,000 EUR.", "supersedes": "m-2"}])
        assert {a.id: str(a.status) for a in memory.artifacts("user-7")} == {
            first.id: "stale",
            second.id: "stale",
            "a-rejected": "rejected",
        }


def test_a_store_of_schema_12_rewrites_its_float16_vectors_as_int8(db_url: str) -> None:
    store_class = PostgresStore if db_url.startswith("postgresql") else SqliteStore
    old = at_schema(store_class, 12)(db_url)
    texts = [f"fact number {n} about the garden party" for n in range(3)]
    with Memory(store=old, tenant="acme", detect_after_add=False) as memory:
        memory.add([{"id": f"m-{n}", "subject": "user-7", "text": t} for n, t in enumerate(texts)])
        memory.embed()
        exact = memory.embedder.embed(texts)
        with old._write() as tx:  # the float16 rows schema 12 wrote
            for n in range(3):
                tx.execute(
                    "UPDATE event_vectors SET vector = ? WHERE seq = ?",
                    (exact[n].astype("<f2").tobytes(), n + 1),
                )
    with Memory(db_url, tenant="acme") as memory:
        store: SqlStore = memory.store  # type: ignore[assignment]
        assert store.schema_version() >= 15
        ids = ["m-0", "m-1", "m-2"]
        before = store.vectors("acme", "user-7", ids)  # read as float16 until rewritten
        assert all(np.array_equal(before[f"m-{n}"], exact[n].astype("<f2")) for n in range(3))
        assert store.pending_embedding("acme") == ["user-7"]
        (run,) = memory.embed()
        assert (run.embedded, run.through, run.done) == (3, 3, True)
        with store._read() as tx:
            sizes = [len(bytes(r[0])) for r in tx.all("SELECT vector FROM event_vectors")]
        assert sizes == [memory.embedder.dims] * 3  # int8: one byte a dimension
        after = store.vectors("acme", "user-7", ids)
        assert all(float(after[f"m-{n}"] @ exact[n]) > 0.9995 for n in range(3))


class Billed:
    """A stand-in for a remote embedder, billed per text: it counts what it is asked."""

    name, version, dims = "openai:some-model", "1", 4

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.seen += texts
        rows = np.array([[len(t), 1.0, 0.5, 2.0] for t in texts], dtype=np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_schema_15_does_not_embed_again_with_an_embedder_other_than_the_built_in(
    db_url: str,
) -> None:
    store_class = PostgresStore if db_url.startswith("postgresql") else SqliteStore
    old = at_schema(store_class, 12)(db_url)
    billed = Billed()
    with Memory(store=old, tenant="acme", detect_after_add=False, embedder=billed) as memory:
        memory.add([{"id": f"m-{n}", "subject": "user-7", "text": "x" * n} for n in range(1, 3)])
        memory.embed()
        exact = billed.embed(["x", "xx"])
        with old._write() as tx:  # the float16 rows schema 12 wrote
            for n in range(2):
                tx.execute(
                    "UPDATE event_vectors SET vector = ? WHERE seq = ?",
                    (exact[n].astype("<f2").tobytes(), n + 1),
                )
    asked = len(billed.seen)
    with Memory(db_url, tenant="acme", embedder=billed) as memory:
        assert memory.store.schema_version() >= 15
        assert memory.store.pending_embedding("acme") == []  # its float16 rows stay
        assert memory.embed() == [] and len(billed.seen) == asked  # nothing paid again
        found = memory.store.vectors("acme", "user-7", ["m-1", "m-2"])
        assert np.array_equal(found["m-1"], exact[0].astype("<f2").astype(np.float32))
