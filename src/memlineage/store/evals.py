"""Stored evaluation runs: one row per run of ``memlineage eval``, per tenant.

Runs are not subject data (they read many subjects and change none), so these
transactions take no clock lock.
"""

from __future__ import annotations

import json
from typing import Any

from memlineage.store.core import StoreCore
from memlineage.store.rows import dumps


class EvalRunsMixin(StoreCore):
    def insert_eval_run(
        self,
        tenant: str,
        run_id: str,
        started_at: str,
        finished_at: str,
        passed: bool,
        report: dict[str, Any],
    ) -> None:
        with self._write() as tx:
            tx.execute(
                "INSERT INTO eval_runs (tenant, run_id, started_at, finished_at, passed, report)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (tenant, run_id, started_at, finished_at, int(passed), dumps(report)),
            )

    def eval_runs(self, tenant: str, limit: int = 100) -> list[dict[str, Any]]:
        """The tenant's latest runs, oldest first: run_id, times, passed and the report."""
        with self._read() as tx:
            rows = tx.all(
                "SELECT run_id, started_at, finished_at, passed, report FROM eval_runs"
                " WHERE tenant = ? ORDER BY started_at DESC, run_id DESC LIMIT ?",
                (tenant, limit),
            )
        return [
            {
                "run_id": r[0],
                "started_at": r[1],
                "finished_at": r[2],
                "passed": bool(r[3]),
                "report": json.loads(r[4]),
            }
            for r in reversed(rows)
        ]
