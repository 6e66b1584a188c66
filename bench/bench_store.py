"""Append throughput on SQLite and PostgreSQL, and recall latency on SQLite.

Baselines, measured in the same run:
- append: the bare driver writing the same rows into the same ``events``
  table, in the same transactions: ``executemany`` (both backends) and
  ``COPY`` (PostgreSQL). Each is measured twice: a *first import* into a
  fresh database (PostgreSQL: a fresh schema, tables without statistics) and
  a *warm import* into a database that holds the first import already
  (PostgreSQL: analyzed). Two of ours: ``store.append`` of parsed events (the
  store's own work: locks, checks, rows; the baseline is spared the same
  parsing and hashing) and ``Memory.add`` of JSON objects (validation and
  hashing included);
- recall: p50/p99 of ``Memory.recall`` over 10,000 subjects and 1,000,000 events
  (``--subjects``/``--per-subject`` scale it down for a quick look).

    python bench/bench_store.py [--subjects 10000 --per-subject 100] [--pg URL | --no-pg]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from common import PG_URL, open_memory, percentile, report, store_url
from memlineage import Memory
from memlineage.model import NewEvent
from memlineage.raw.ingest import parse_event, utc_now
from memlineage.store.rows import EVENT_COLUMNS, event_row

TEXTS = [
    "Never deploy {p} on Fridays; the budget is at most {n},500 EUR.",
    "I prefer tea over coffee in the {p} stand-up.",
    "Ticket {P}-{n} must be closed before 2026-12-{d:02d}.",
    "The agent may use read:billing but not write:billing for {p}.",
    "Daily run is {n} km; remind me at 07:{d:02d}.",
]
# tenant and every event column (speaker included: the bare row is the full row)
INSERT = (
    f"INSERT INTO events (tenant, {EVENT_COLUMNS})"
    f" VALUES ({', '.join('?' * (EVENT_COLUMNS.count(',') + 2))})"
)


def make_events(subject: str, start: int, count: int) -> list[dict[str, object]]:
    out = []
    for i in range(start, start + count):
        project = f"proj{i % 7}"
        text = TEXTS[i % len(TEXTS)].format(p=project, P=project.upper(), n=i % 97, d=i % 28 + 1)
        out.append(
            {
                "id": f"{subject}:m{i}",
                "subject": subject,
                "text": text,
                "at": "2026-11-02T09:00:00Z",
                "project": project,
            }
        )
    return out


def import_file(start: int, total: int, subjects: int) -> list[dict[str, object]]:
    """One import: ``total`` lines round-robin over ``subjects`` subjects, as a JSONL file."""
    per = total // subjects
    columns = [make_events(f"user-{s}", start, per) for s in range(subjects)]
    return [columns[s][i] for i in range(per) for s in range(subjects)]


def bare_rows(lines: list[dict[str, object]]) -> list[tuple[Any, ...]]:
    """The rows Memory.add writes for ``lines`` (seqs continue per subject), hashed up front."""
    now, seqs, rows = utc_now(), dict[str, int](), []
    for raw in lines:
        event = parse_event(raw)
        seqs[event.subject] = seqs.get(event.subject, 0) + 1
        rows.append(event_row("default", event, seqs[event.subject], event.content_hash, now))
    return rows


class Backend:
    name = ""
    kind = ""  # as store_url names it
    pg = PG_URL

    @contextmanager
    def fresh(self) -> Iterator[str]:
        """A URL of a new, migrated, empty database, dropped after."""
        with store_url(self.kind, pg=self.pg) as url:
            Memory(url).close()
            yield url

    def bare(self, url: str, how: str, batches: list[list[tuple[Any, ...]]]) -> None:
        raise NotImplementedError

    def analyze(self, url: str) -> None:
        """Let the warm database have statistics, as a long-running one has."""


class SqliteBackend(Backend):
    name = "SQLite"
    kind = "sqlite"

    def bare(self, url: str, how: str, batches: list[list[tuple[Any, ...]]]) -> None:
        conn = sqlite3.connect(url, isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        for chunk in batches:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(INSERT, chunk)
            conn.execute("COMMIT")
        conn.close()


class PostgresBackend(Backend):
    name = "PostgreSQL"
    kind = "postgres"

    def __init__(self, pg: str):
        import psycopg

        self.psycopg = psycopg
        self.pg = pg

    def bare(self, url: str, how: str, batches: list[list[tuple[Any, ...]]]) -> None:
        with self.psycopg.connect(url) as conn:
            for chunk in batches:
                with conn.transaction(), conn.cursor() as cur:
                    if how == "COPY":
                        with cur.copy(f"COPY events (tenant, {EVENT_COLUMNS}) FROM STDIN") as copy:
                            for row in chunk:
                                copy.write_row(row)
                    else:
                        cur.executemany(INSERT.replace("?", "%s"), chunk)

    def analyze(self, url: str) -> None:
        with self.psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE")


def bench_append(backend: Backend, total: int, batch: int, subjects: int, repeats: int) -> None:
    """First and warm imports: ours against the bare driver, in ``repeats`` rounds.

    Each round runs every variant once, in an order that rotates from round to
    round, and each ratio is the median of the rounds' own ratios: the load of a
    shared machine drifts over minutes, and a ratio of two runs minutes apart
    measures the drift (they moved by 0.3 or more when run one block after another).
    """
    first_lines = import_file(0, total, subjects)
    warm_lines = import_file(total // subjects, total, subjects)
    first_events = [parse_event(r) for r in first_lines]
    warm_events = [parse_event(r) for r in warm_lines]
    bare_first = split(bare_rows(first_lines), batch)
    bare_warm = split(bare_rows(first_lines + warm_lines)[total:], batch)  # seqs continue

    def once(phase: str, run: Callable[[str], None]) -> float:
        with backend.fresh() as url:
            if phase == "warm":
                with Memory(url) as memory:
                    for chunk in split(first_events, batch):
                        memory.store.append("default", chunk)
                backend.analyze(url)
            started = time.perf_counter()
            run(url)
            return time.perf_counter() - started

    def ours_append(events: list[NewEvent]) -> Callable[[str], None]:
        def run(url: str) -> None:
            with Memory(url) as memory:
                for chunk in split(events, batch):
                    memory.store.append("default", chunk)

        return run

    def ours_add(lines: list[dict[str, object]]) -> Callable[[str], None]:
        def run(url: str) -> None:
            with Memory(url) as memory:
                for chunk in split(lines, batch):
                    memory.add(chunk)

        return run

    hows = ["executemany", "COPY"] if isinstance(backend, PostgresBackend) else ["executemany"]
    for phase, lines, events, rows in (
        ("first", first_lines, first_events, bare_first),
        ("warm", warm_lines, warm_events, bare_warm),
    ):
        label = f"{backend.name} {phase} import"
        variants: dict[str, Callable[[str], None]] = {
            f"bare {how}": lambda url, how=how, rows=rows: backend.bare(url, how, rows)
            for how in hows
        }
        variants["store.append"] = ours_append(events)
        variants["Memory.add"] = ours_add(lines)
        rounds = interleaved(variants, repeats, lambda run, phase=phase: once(phase, run))
        for how in hows:
            report(f"{label}: bare {how}", total / median_of(rounds, f"bare {how}"), "events/s")
        for name in ("store.append", "Memory.add"):
            for how in hows:
                ratio = statistics.median(r[f"bare {how}"] / r[name] for r in rounds)
                report(
                    f"{label}: {name}",
                    total / median_of(rounds, name),
                    "events/s",
                    f"bare {how}",
                    ratio,
                )


def interleaved(
    variants: dict[str, Callable[[str], None]],
    repeats: int,
    measure: Callable[[Callable[[str], None]], float],
) -> list[dict[str, float]]:
    """``repeats`` rounds of every variant's seconds, the order rotated each round."""
    names = list(variants)
    rounds = []
    for r in range(repeats):
        order = names[r % len(names) :] + names[: r % len(names)]
        rounds.append({name: measure(variants[name]) for name in order})
    return rounds


def median_of(rounds: list[dict[str, float]], name: str) -> float:
    return statistics.median(r[name] for r in rounds)


def split(values: list[Any], size: int) -> list[list[Any]]:
    return [values[i : i + size] for i in range(0, len(values), size)]


def build_recall_store(memory: Memory, subjects: int, per_subject: int, consolidated: int) -> None:
    started = time.perf_counter()
    for s in range(subjects):
        memory.add(make_events(f"user-{s}", 0, per_subject))
    built = time.perf_counter() - started
    report(f"build: {subjects * per_subject:,} events", subjects * per_subject / built, "events/s")
    for s in range(consolidated):
        memory.consolidate(f"user-{s}")
        memory.add(make_events(f"user-{s}", per_subject, 3))  # a raw tail


def bench_recall(memory: Memory, subjects: int, consolidated: int, samples: int) -> None:
    rng = random.Random(7)
    for mode, pool in (("summary", range(consolidated)), ("raw", range(consolidated, subjects))):
        if not pool:
            continue
        latencies = []
        for _ in range(samples):
            subject = f"user-{rng.choice(pool)}"
            start = time.perf_counter()
            recalled = memory.recall(subject)
            latencies.append((time.perf_counter() - start) * 1000)
            assert recalled.mode == mode, (subject, recalled.reason)
        report(f"recall ({mode}) p50", percentile(latencies, 50), "ms")
        report(f"recall ({mode}) p99", percentile(latencies, 99), "ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--subjects", type=int, default=10_000)
    parser.add_argument("--per-subject", type=int, default=100)
    parser.add_argument("--consolidated", type=int, default=500)
    parser.add_argument("--append-events", type=int, default=20_000)
    parser.add_argument("--append-subjects", type=int, default=100)
    parser.add_argument("--batch", type=int, default=5_000, help="lines per add (one file)")
    parser.add_argument("--pg", default=PG_URL, help="PostgreSQL URL for the append benchmark")
    parser.add_argument("--no-pg", action="store_true", help="skip PostgreSQL")
    parser.add_argument("--append-only", action="store_true", help="skip the recall benchmark")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--samples", type=int, default=5_000)
    args = parser.parse_args()
    backends: list[Backend] = [SqliteBackend()]
    if not args.no_pg:
        backends.append(PostgresBackend(args.pg))
    for backend in backends:
        bench_append(backend, args.append_events, args.batch, args.append_subjects, args.repeats)
    if args.append_only:
        return
    with open_memory("sqlite") as memory:
        build_recall_store(memory, args.subjects, args.per_subject, args.consolidated)
        bench_recall(memory, args.subjects, args.consolidated, args.samples)


if __name__ == "__main__":
    main()
