"""Bad input never half-applies and never crashes: the store's side, on both backends."""

from __future__ import annotations

import io
import json
import multiprocessing
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import workers
from conftest import require_postgres
from memlineage import Memory
from memlineage.errors import BadInput, NotFound, StoreError
from memlineage.interfaces.cli import main
from memlineage.model import NewEvent

SPAWN = multiprocessing.get_context("spawn")
TABLES = ("clocks", "aliases", "alias_history", "events", "operations", "artifacts", "derivation")


def ev(id_: str, text: str, subject: str = "user-7", **extra: object) -> dict[str, object]:
    return {"id": id_, "subject": subject, "text": text, **extra}


def snapshot(memory: Memory) -> dict[str, list[Any]]:
    """Every row of every table: 'the store exactly as it was'."""
    with memory.store._read() as tx:  # type: ignore[attr-defined]
        return {t: sorted(map(tuple, tx.all(f"SELECT * FROM {t}")), key=repr) for t in TABLES}


def cli(db: str, *argv: str, tenant: str = "acme") -> tuple[int, Any, str]:
    out, err = io.StringIO(), io.StringIO()
    saved, sys.stderr = sys.stderr, err
    try:
        code = main([*argv, "--db", db, "--tenant", tenant, "--json"], stdout=out)
    finally:
        sys.stderr = saved
    text = out.getvalue()
    return code, json.loads(text) if text else None, err.getvalue()


def jsonl(path: Path, rows: list[dict[str, object]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


# -- 1. all or nothing (defects 1 and 7) --


@pytest.mark.parametrize(
    ("target", "words"),
    [("missing", "does not exist"), ("b1", "another subject")],
)
def test_a_bad_replacement_on_line_2_leaves_the_store_unchanged(
    db_url: str, tmp_path: Path, target: str, words: str
) -> None:
    with Memory(db_url, tenant="acme") as memory:
        memory.add([ev("b1", "other subject's event", subject="user-8")])
        before = snapshot(memory)
    rows = [ev("a1", "first subject"), ev("c1", "replaces", subject="user-9", supersedes=target)]
    code, _, err = cli(db_url, "add", jsonl(tmp_path / "bad.jsonl", rows))
    assert code == 2 and err.count("\n") == 1
    assert "line 2" in err and "'supersedes'" in err and words in err and target in err
    with Memory(db_url, tenant="acme") as memory:
        assert snapshot(memory) == before


def test_a_bad_last_line_of_a_large_file_stores_nothing(db_url: str, tmp_path: Path) -> None:
    rows = [ev(f"m{i}", f"note {i}", subject=f"user-{i % 100}") for i in range(9_999)]
    rows.append(ev("m-last", "replaces", subject="user-5", supersedes="m1"))  # m1 is user-1's
    code, _, err = cli(db_url, "add", jsonl(tmp_path / "big.jsonl", rows))
    assert code == 2 and "line 10000" in err and "another subject" in err
    with Memory(db_url, tenant="acme") as memory:
        assert snapshot(memory) == {t: [] for t in TABLES}


def test_a_store_error_names_the_events_position_in_the_api(memory: Memory) -> None:
    memory.add([ev("a1", "x")])
    before = snapshot(memory)
    with pytest.raises(NotFound) as err:
        memory.add([ev("a2", "y", subject="user-8"), ev("a3", "z"), ev("a4", "w", supersedes="no")])
    assert err.value.line == 3 and err.value.field == "supersedes"
    with pytest.raises(BadInput) as err:
        memory.add([ev("a5", "y"), ev("a1", "other content", subject="user-8")])
    assert err.value.line == 2 and err.value.field == "id"
    assert snapshot(memory) == before


def test_a_replacement_cycle_within_a_batch_is_refused(memory: Memory) -> None:
    memory.add([ev("a0", "x")])
    before = snapshot(memory)
    with pytest.raises(BadInput, match="cycle") as err:
        memory.add(
            [
                ev("a1", "one", supersedes="a3"),
                ev("a2", "two", supersedes="a1"),
                ev("a3", "three", supersedes="a2"),
            ]
        )
    assert err.value.line == 1 and err.value.field == "supersedes"
    assert "a1 -> a3 -> a2 -> a1" in str(err.value)
    with pytest.raises(BadInput, match="cycle"):
        memory.add([ev("b1", "one", supersedes="b2"), ev("b2", "two", supersedes="b1")])
    assert snapshot(memory) == before


def test_a_chain_of_replacements_in_one_batch_is_accepted(memory: Memory) -> None:
    memory.add([ev("a0", "v0")])
    memory.add([ev(f"a{i}", f"v{i}", supersedes=f"a{i - 1}") for i in range(1, 50)])
    assert [e.id for e in memory.recall("user-7").events] == ["a49"]


def test_a_batch_over_many_subjects_is_one_unit(memory: Memory) -> None:
    out = memory.add([ev(f"m{i}", "x", subject=f"s{i % 3}") for i in range(9)])
    assert [(a.subject, a.seq) for a in out][:4] == [("s0", 1), ("s1", 1), ("s2", 1), ("s0", 2)]
    again = memory.add([ev(f"m{i}", "x", subject=f"s{i % 3}") for i in range(10)])
    assert [a.created for a in again] == [False] * 9 + [True]


@pytest.mark.slow
def test_batches_over_the_same_subjects_in_opposite_orders_do_not_deadlock(db_url: str) -> None:
    Memory(db_url, tenant="acme").close()
    subjects = [f"user-{i}" for i in range(8)]
    barrier, results = SPAWN.Barrier(2), SPAWN.SimpleQueue()
    procs = [
        SPAWN.Process(
            target=workers.append_batches_over_subjects,
            args=(db_url, "acme", name, order, 30, barrier, results),
        )
        for name, order in (("fwd", subjects), ("rev", subjects[::-1]))
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
        assert proc.exitcode == 0
    assert sorted([results.get(), results.get()]) == ["ok", "ok"]
    with Memory(db_url, tenant="acme") as memory, memory.store.reader("acme") as reader:
        for subject in subjects:
            assert [e.seq for e in reader.events(subject)] == list(range(1, 61))


# -- 2. NUL: both backends refuse it the same way, never a driver traceback --


@pytest.mark.parametrize("field", ["id", "subject", "text", "project"])
def test_nul_is_refused_by_the_store_on_both_backends(memory: Memory, field: str) -> None:
    memory.add([ev("a1", "x")])
    before = snapshot(memory)
    fields: dict[str, Any] = {"id": "a2", "subject": "user-8", "text": "fine"}
    fields[field] = fields.get(field, "p") + "\x00"
    with pytest.raises(BadInput, match="NUL") as err:
        memory.store.append(
            "acme", [NewEvent(id="a0", subject="user-9", text="ok"), NewEvent(**fields)]
        )
    assert err.value.line == 2 and err.value.field == field
    assert snapshot(memory) == before


def test_nul_in_a_lookup_is_bad_input_on_both_backends(memory: Memory) -> None:
    memory.add([ev("a1", "x")])
    for call in (lambda: memory.revoke("a\x00"), lambda: memory.trust("a\x00", level="tool")):
        with pytest.raises(BadInput):
            call()
    with pytest.raises(BadInput):
        memory.recall("user\x00")


# -- 3. the store cannot be used: one line, exit 2, nothing changed (defect 5) --


def test_an_unrelated_events_table_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "theirs.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE events (name TEXT)")
        conn.execute("INSERT INTO events VALUES ('party')")
    with pytest.raises(StoreError, match="'events' that memlineage did not create"):
        Memory(str(path))
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == [("events",)]
        assert conn.execute("SELECT * FROM events").fetchall() == [("party",)]


def test_an_unrelated_events_table_is_refused_on_postgres(pg_url: str) -> None:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE events (name TEXT)")
    code, _, err = cli(pg_url, "add", "/dev/null")
    assert code == 2 and "did not create" in err and err.count("\n") == 1
    with psycopg.connect(pg_url) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchall()
    assert tables == [("events",)]


def test_a_read_only_database_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory(str(path), tenant="acme") as memory:
        memory.add([ev("a1", "x")])
    url = f"sqlite:///{path}?mode=ro"
    code, doc, _ = cli(url, "recall", "user-7")
    assert code == 0 and [e["id"] for e in doc["events"]] == ["a1"]
    code, _, err = cli(url, "add", jsonl(tmp_path / "e.jsonl", [ev("a2", "y")]))
    assert code == 2 and "read-only" in err and err.count("\n") == 1
    with Memory(str(path), tenant="acme") as memory:
        assert [e.id for e in memory.recall("user-7").events] == ["a1"]


@pytest.mark.skipif(
    sys.platform == "win32" or __import__("os").geteuid() == 0,
    reason="file permissions do not bind root",
)
def test_a_read_only_file_with_wal_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory(str(path), tenant="acme") as memory:
        memory.add([ev("a1", "x")])
    path.chmod(0o444)
    tmp_path.chmod(0o555)
    try:
        code, _, err = cli(str(path), "add", "/dev/null")
        assert code == 2 and err.count("\n") == 1
    finally:
        tmp_path.chmod(0o755)


def test_sqlite_busy_beyond_the_timeout_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory(str(path), tenant="acme") as memory:
        memory.add([ev("a1", "x")])
        before = snapshot(memory)
    holder = subprocess.Popen(  # another process holds the write lock
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1], isolation_level=None);"
            " c.execute('BEGIN IMMEDIATE'); print('held', flush=True); time.sleep(30)",
            str(path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        code, _, err = cli(
            f"sqlite:///{path}?busy_timeout=0.3",
            "add",
            jsonl(tmp_path / "e.jsonl", [ev("a2", "y")]),
        )
        assert code == 2 and "busy timeout (0.3 s)" in err and err.count("\n") == 1
        assert time.monotonic() - started < 10
    finally:
        holder.kill()
        holder.wait()
    with Memory(str(path), tenant="acme") as memory:
        assert snapshot(memory) == before


@pytest.mark.parametrize("tenant", ["", "   ", "t" * 201, " padded", "a\x00b"])
def test_bad_tenants_are_refused_before_any_sql(db_url: str, tenant: str) -> None:
    with pytest.raises(BadInput) as err:
        Memory(db_url, tenant=tenant)
    assert err.value.field == "tenant"


def test_the_longest_names_fit_every_index(db_url: str) -> None:
    """Tenant and subject at 400 UTF-8 bytes, ids at 200 characters, all 4-byte characters."""
    wide = "".join(chr(0x20000 + 7 * i) for i in range(200))  # distinct: no compression
    name = wide[:100]  # 400 bytes
    with Memory(db_url, tenant=name) as memory:
        memory.add([ev(wide, "Never deploy on Fridays.", subject=name)])
        memory.add([ev(wide[:-1] + "x", "I prefer tea.", subject=name)])
        first = memory.consolidate(name)
        memory.add([ev(wide[:-1] + "y", "Budget is 4,500 EUR.", subject=name)])
        second = memory.consolidate(name)
        assert first.switched and second.switched
        memory.revoke(wide)
        assert memory.recall(name).mode == "raw"


def test_a_subject_or_tenant_beyond_400_bytes_is_bad_input(db_url: str) -> None:
    name = "".join(chr(0x20000 + 7 * i) for i in range(101))  # 404 bytes
    with pytest.raises(BadInput, match="400 bytes") as err:
        Memory(db_url, tenant=name)
    assert err.value.field == "tenant"
    with Memory(db_url, tenant="acme") as memory:
        with pytest.raises(BadInput, match="400 bytes") as err:
            memory.add([ev("a1", "x"), ev("a2", "y", subject=name)])
        assert err.value.line == 2 and err.value.field == "subject"
        assert snapshot(memory) == {t: [] for t in TABLES}


# -- 4. trust that changes nothing is a no-op (defect 6) --


def _published(memory: Memory) -> tuple[int, str]:
    memory.add(
        [
            ev("a1", "Never deploy on Fridays.", trust="agent", taint=["web"]),
            ev("a2", "I prefer tea.", trust="tool"),
        ]
    )
    memory.trust("a1", taint=[])
    result = memory.consolidate("user-7")
    assert result.switched
    with memory.store.reader("acme") as reader:
        head = reader.head("user-7")
    assert head is not None
    return head.clock.epoch, memory.recall("user-7").mode


@pytest.mark.parametrize(
    "change",
    [{}, {"level": "agent"}, {"taint": []}, {"level": "agent", "taint": []}],
    ids=["nothing", "same-level", "clear-untainted", "both-same"],
)
def test_a_trust_change_that_changes_nothing_is_a_no_op(
    memory: Memory, change: dict[str, Any]
) -> None:
    epoch, mode = _published(memory)
    assert mode == "summary"
    result = memory.trust("a1", **change)
    assert not result.changed and result.epoch == epoch
    assert memory.recall("user-7").mode == "summary"


def test_a_real_trust_change_still_bumps_the_epoch(memory: Memory) -> None:
    epoch, _ = _published(memory)
    assert memory.trust("a2", level="user").changed
    assert memory.recall("user-7").mode == "raw"
    with memory.store.reader("acme") as reader:
        head = reader.head("user-7")
    assert head is not None and head.clock.epoch == epoch + 1


def test_trust_in_the_cli_without_options_is_a_no_op(db_url: str, tmp_path: Path) -> None:
    cli(db_url, "add", jsonl(tmp_path / "e.jsonl", [ev("a1", "Never deploy on Fridays.")]))
    assert cli(db_url, "consolidate", "user-7")[0] == 0
    for argv in (
        ["trust", "a1"],
        ["trust", "a1", "--level", "user"],
        ["trust", "a1", "--clear-taint"],
    ):
        code, doc, _ = cli(db_url, *argv)
        assert code == 0 and doc["changed"] is False and doc["epoch"] == 0
    assert cli(db_url, "recall", "user-7")[1]["mode"] == "summary"


@pytest.mark.parametrize("label", ["", "   "])
def test_a_blank_taint_label_is_refused(db_url: str, tmp_path: Path, label: str) -> None:
    cli(db_url, "add", jsonl(tmp_path / "e.jsonl", [ev("a1", "Never deploy on Fridays.")]))
    code, _, err = cli(db_url, "trust", "a1", "--taint", label)
    assert code == 2 and "taint" in err and err.count("\n") == 1
    code, doc, _ = cli(db_url, "recall", "user-7")
    assert [e["id"] for e in doc["events"]] == ["a1"]


# -- 7. read commands never create a database --


@pytest.mark.parametrize(
    "command", [["recall", "user-7"], ["artifacts"], ["consolidate", "user-7"]]
)
def test_read_commands_do_not_create_a_database(tmp_path: Path, command: list[str]) -> None:
    path = tmp_path / "typo.db"
    code, _, err = cli(str(path), *command)
    assert code == 2 and f"no memlineage database at {path}" in err and err.count("\n") == 1
    assert not path.exists()


def test_read_commands_do_not_create_a_schema_on_postgres(pg_url: str) -> None:
    import psycopg

    code, _, err = cli(pg_url, "recall", "user-7")
    assert code == 2 and "no memlineage database at" in err
    with psycopg.connect(pg_url) as conn:
        assert conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchone() == (0,)


def test_open_store_create_false_opens_an_existing_database(db_url: str) -> None:
    with Memory(db_url, tenant="acme") as memory:
        memory.add([ev("a1", "x")])
    with Memory(db_url, tenant="acme", create=False) as memory:
        assert [e.id for e in memory.recall("user-7").events] == ["a1"]


# -- 5. PostgreSQL connection errors: fast, one line, no secret (defect 8) --

MAIN = "import sys; from memlineage.interfaces.cli import main; sys.exit(main())"


def run_cli_process(*argv: str) -> tuple[int, str, float]:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", MAIN, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env={**__import__("os").environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")},
    )
    return proc.returncode, proc.stderr, time.monotonic() - started


@pytest.mark.parametrize(
    ("url", "cause"),
    [
        ("postgresql://postgres:s3cret@127.0.0.1:1/test?password=s3cret", "Connection refused"),
        (
            "postgresql://postgres:s3cret@127.0.0.1:5432/no_such_db?password=s3cret",
            "does not exist",
        ),
    ],
    ids=["refused-port", "unknown-database"],
)
def test_a_connection_error_is_one_fast_line_without_secrets(url: str, cause: str) -> None:
    require_postgres()
    code, err, seconds = run_cli_process("recall", "user-7", "--db", url)
    assert code == 2 and err.count("\n") == 1 and cause in err
    assert "s3cret" not in err and "***" in err
    assert seconds < 10


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://ann:p%40ss@db.example:5432/mem",
        "postgresql://ann@db.example/mem?password=p%40ss&sslmode=require",
        "postgresql://ann:p%40ss@db.example/mem?sslpassword=p%40ss",
        "postgres://ann:p@ss@db.example/mem",
    ],
)
def test_every_form_of_secret_is_redacted(url: str) -> None:
    from memlineage.store.postgres import redact, scrub, secrets_of

    shown = redact(url)
    assert "p%40ss" not in shown and "p@ss" not in shown and "***" in shown
    assert "db.example" in shown and "ann" in shown
    message = f"could not connect with {url} (password p@ss)"
    assert "p@ss" not in scrub(message, secrets_of(url))
    assert "p%40ss" not in scrub(message, secrets_of(url))


def test_the_store_shows_only_the_redacted_url(pg_url: str) -> None:
    from memlineage.store.postgres import PostgresStore

    url = pg_url.replace("postgres@", "postgres:unused@") + "&password=unused"
    store = PostgresStore(url)  # trust authentication ignores the password
    try:
        assert "unused" not in store.url and "unused" not in repr(store)
    finally:
        store.close()


def test_the_pool_timeouts_are_configurable(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from memlineage.store.postgres import PostgresStore

    store = PostgresStore(pg_url, pool_timeout=1.5, connect_timeout=2)
    try:
        assert store.pool.timeout == 1.5 and store.connect_timeout == 2
    finally:
        store.close()
    monkeypatch.setenv("MEMLINEAGE_PG_POOL_TIMEOUT", "4")
    monkeypatch.setenv("MEMLINEAGE_PG_CONNECT_TIMEOUT", "3")
    store = PostgresStore(pg_url)
    try:
        assert store.pool.timeout == 4 and store.connect_timeout == 3
    finally:
        store.close()
    monkeypatch.setenv("MEMLINEAGE_PG_POOL_TIMEOUT", "soon")
    with pytest.raises(StoreError, match="MEMLINEAGE_PG_POOL_TIMEOUT"):
        PostgresStore(pg_url)
