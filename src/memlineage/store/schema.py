"""The schema: numbered migrations per backend, applied once, never downgraded."""

from __future__ import annotations

from importlib import resources

from memlineage.errors import SchemaTooNew, StoreError
from memlineage.raw.ingest import utc_now
from memlineage.store.core import StoreCore
from memlineage.store.sql import Tx


class SchemaMixin(StoreCore):
    def migrations(self) -> list[tuple[int, str]]:
        folder = resources.files("memlineage.store").joinpath("migrations", self.dialect)
        found = []
        for entry in folder.iterdir():
            if entry.name.endswith(".sql"):
                found.append((int(entry.name.split("_", 1)[0]), entry.read_text("utf-8")))
        return sorted(found)

    def migrate(self, *, create: bool = True) -> int:
        """Apply missing migrations; refuse a schema newer than this code knows.

        A current schema is confirmed by a read, so opening a store never waits
        for the write lock of another process's transaction. A database without
        memlineage's schema is created only when ``create`` is true, and never
        over tables of the same names that memlineage did not create.
        """
        known = self.migrations()
        latest = known[-1][0]
        with self._read() as tx:
            tables = self._table_names(tx)
            current = self._schema_version(tx, tables)
        if current == 0:
            self._refuse_to_create(tables, known, create)
        if current < latest:
            with self._write() as tx:
                self._lock_for_migration(tx)
                tx.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations"
                    " (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
                )
                current = self._schema_version(tx, self._table_names(tx))  # raced by another?
                for version, script in known:
                    if version > current:
                        self._run_script(tx, script)
                        tx.execute(
                            "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
                            (version, utc_now()),
                        )
        if current > latest:
            raise SchemaTooNew(
                f"database schema is version {current}, this memlineage knows up to"
                f" {latest}: upgrade memlineage to open {self.url}"
            )
        return latest

    def _refuse_to_create(
        self, tables: set[str], known: list[tuple[int, str]], create: bool
    ) -> None:
        if not create:
            raise StoreError(f"no memlineage database at {self.url}")
        ours = _created_tables(known[0][1])
        foreign = sorted(ours & tables)
        if foreign:
            raise StoreError(
                f"{self.url} already has a table {foreign[0]!r} that memlineage did not"
                " create; refusing to touch it (use another database or schema)"
            )

    def schema_version(self) -> int:
        """The version of the schema this database is at."""
        with self._read() as tx:
            return self._schema_version(tx)

    def _schema_version(self, tx: Tx, tables: set[str] | None = None) -> int:
        if "schema_migrations" not in (self._table_names(tx) if tables is None else tables):
            return 0
        row = tx.one("SELECT MAX(version) FROM schema_migrations")
        return int(row[0]) if row and row[0] is not None else 0

    def own_tables(self, tx: Tx) -> list[str]:
        """The tables memlineage's migrations created that are there now, by name (a
        schema may hold other tables beside them)."""
        ours = set().union(*(_created_tables(script) for _, script in self.migrations()))
        return sorted(ours & self._table_names(tx))

    def _run_script(self, tx: Tx, script: str) -> None:
        for statement in _split_sql(script):
            tx.execute(statement)


def _created_tables(script: str) -> set[str]:
    """The tables a migration script creates (``CREATE TABLE name (``)."""
    names = set()
    for statement in _split_sql(script):
        words = statement.split()
        if [w.upper() for w in words[:2]] == ["CREATE", "TABLE"]:
            names.add(words[2].lower().strip("("))
    return names


def _split_sql(script: str) -> list[str]:
    """Statements of a migration file, one per line-final ``;``.

    A trigger body (``BEGIN`` … ``END;``, SQLite) or a dollar-quoted function body
    (``$$`` … ``$$``, PostgreSQL) holds semicolons of its own and stays one statement.
    """
    statements: list[str] = []
    current: list[str] = []
    in_dollar = in_trigger = False
    for line in script.splitlines():
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("--")):
            continue
        if stripped.startswith("--") and not (in_dollar or in_trigger):
            continue
        current.append(line)
        in_dollar ^= stripped.count("$$") % 2 == 1
        if not in_dollar and stripped.upper().endswith("BEGIN"):
            in_trigger = True
        if in_trigger and stripped.upper() == "END;":
            in_trigger = False
        if stripped.endswith(";") and not (in_dollar or in_trigger):
            statements.append("\n".join(current).strip().removesuffix(";").strip())
            current = []
    if current and "\n".join(current).strip():
        statements.append("\n".join(current).strip())
    return statements
