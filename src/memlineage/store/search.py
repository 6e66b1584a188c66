"""Full-text lookups over one subject's events: the SQL that differs per backend.

Both backends answer the same question, "which events of this subject match
any of these terms, and how well", inside the reader's snapshot:

- SQLite: the FTS5 table ``events_fts`` (migration 0005), whose ``scope``
  column holds one token per (tenant, subject); the MATCH names that token
  first, so FTS5 walks one subject's postings. Ranked by ``bm25()``.
- PostgreSQL: the generated ``tsv`` column (configuration ``'english'``),
  read through the primary key's (tenant, subject) prefix, ranked by
  ``ts_rank_cd``.

Scores are "higher is better" on both; they are compared only within one
backend. Validity is not decided here: the caller keeps only the matches that
the raw layer's rules hold valid in the same snapshot (recall.py).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass

from memlineage.store.sql import Statement, Tx


@dataclass(frozen=True)
class Match:
    """One event that matched a query (its id), and its relevance (higher is better)."""

    id: str
    score: float


class TextSearch(abc.ABC):
    """A backend's full-text lookup; ``terms`` are plain words (see context.query_terms).

    ``matching`` is what recall uses: the ids of the subject's events that
    contain any term, unranked (relevance.py ranks them). ``search`` adds the
    engine's own score: the plain-RAG baseline of the benchmarks.
    """

    @abc.abstractmethod
    def search(self, tx: Tx, tenant: str, subject: str, terms: list[str]) -> list[Match]: ...

    def matching(self, tx: Tx, tenant: str, subject: str, terms: list[str]) -> list[str]:
        if not terms:
            return []
        return [r[0] for r in tx.all(*self.matching_statement(tenant, subject, terms))]

    @abc.abstractmethod
    def matching_statement(self, tenant: str, subject: str, terms: Sequence[str]) -> Statement:
        """``matching``'s statement, for terms that are not empty."""


def scope_token(tenant: str, subject: str) -> str:
    """The FTS5 token of one (tenant, subject); the same expression as migration 0005's."""
    return (tenant + "\x1f" + subject).encode("utf-8").hex().upper() + "0"


class Fts5Search(TextSearch):
    # CROSS JOIN keeps the full-text match as the outer loop: left to itself the
    # planner may walk the subject's rows and re-run the MATCH for each one.
    FROM = (
        " FROM events_fts CROSS JOIN events e ON e.rowid = events_fts.rowid"
        " WHERE events_fts MATCH ? AND e.tenant = ? AND e.subject = ?"
    )
    SQL = "SELECT e.id, -bm25(events_fts, 0.0, 1.0)" + FROM
    MATCHING_SQL = "SELECT e.id" + FROM

    def search(self, tx: Tx, tenant: str, subject: str, terms: list[str]) -> list[Match]:
        if not terms:
            return []
        rows = tx.all(self.SQL, (self._expression(tenant, subject, terms), tenant, subject))
        return [Match(r[0], float(r[1])) for r in rows]

    def matching_statement(self, tenant: str, subject: str, terms: Sequence[str]) -> Statement:
        return self.MATCHING_SQL, (self._expression(tenant, subject, terms), tenant, subject)

    @staticmethod
    def _expression(tenant: str, subject: str, terms: Sequence[str]) -> str:
        # Terms are word characters only, so quoting each makes it a plain token
        # (never an operator such as AND, NOT or NEAR).
        words = " OR ".join(f'"{t}"' for t in terms)
        return f'scope : "{scope_token(tenant, subject)}" AND text : ({words})'


class TsvectorSearch(TextSearch):
    CONFIG = "english"
    FROM = (
        f" FROM events e, to_tsquery('{CONFIG}'::regconfig, ?) q"
        " WHERE e.tenant = ? AND e.subject = ? AND e.tsv @@ q"
    )
    SQL = "SELECT e.id, ts_rank_cd(e.tsv, q)" + FROM
    MATCHING_SQL = "SELECT e.id" + FROM

    def search(self, tx: Tx, tenant: str, subject: str, terms: list[str]) -> list[Match]:
        if not terms:
            return []
        rows = tx.all(self.SQL, (" | ".join(terms), tenant, subject))
        return [Match(r[0], float(r[1])) for r in rows]

    def matching_statement(self, tenant: str, subject: str, terms: Sequence[str]) -> Statement:
        return self.MATCHING_SQL, (" | ".join(terms), tenant, subject)
