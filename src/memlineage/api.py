"""The library API: one ``Memory`` per tenant over a store.

>>> from memlineage import Memory
>>> with Memory("memlineage.db", tenant="acme") as memory:
...     memory.add([{"id": "m-1", "subject": "user-7", "text": "Never email after 9 pm."}])
...     memory.consolidate("user-7")
...     memory.recall("user-7").mode
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

from . import consolidate as consolidation
from . import queue as job_queue
from . import worker
from .errors import BadInput
from .generators.base import Generator
from .ingest import parse_event
from .model import Artifact, NewEvent
from .recall import Recall, recall
from .store import open_store
from .store.protocol import Appended, Job, OpResult, Store
from .worker import JobReport


class Memory:
    """Memory of one tenant. Every method is one or a few short transactions."""

    def __init__(
        self,
        db: str | None = None,
        *,
        tenant: str = "default",
        store: Store | None = None,
        default_budget: int | None = consolidation.DEFAULT_BUDGET,
    ):
        """``default_budget``: the tenant's token budget of a rendered summary (None: none)."""
        if not tenant:
            raise BadInput("must not be empty", field="tenant")
        if default_budget is not None and default_budget < 1:
            raise BadInput("must be a positive number of tokens", field="default_budget")
        self.store = store or open_store(db)
        self.tenant = tenant
        self.default_budget = default_budget

    # -- raw layer --

    def add(self, events: Iterable[Mapping[str, Any] | NewEvent]) -> list[Appended]:
        """Append events (validated first: a bad one leaves the store unchanged)."""
        parsed: list[NewEvent] = []
        for index, event in enumerate(events):
            try:
                parsed.append(event if isinstance(event, NewEvent) else parse_event(dict(event)))
            except BadInput as exc:
                raise BadInput(exc.reason, field=f"[{index}].{exc.field or ''}") from exc
        return self.store.append(self.tenant, parsed)

    def revoke(self, event_id: str, reason: str | None = None) -> OpResult:
        return self.store.revoke(self.tenant, event_id, reason)

    def trust(
        self, event_id: str, level: str | None = None, taint: Sequence[str] | None = None
    ) -> OpResult:
        return self.store.set_trust(self.tenant, event_id, level, taint)

    def conflict(self, a: str, b: str, key: str | None = None) -> OpResult:
        return self.store.declare_conflict(self.tenant, a, b, key)

    def resolve(self, conflict_id: str, winner: str) -> OpResult:
        return self.store.resolve_conflict(self.tenant, conflict_id, winner)

    # -- derived layer --

    def consolidate(
        self,
        subject: str,
        generator: Generator | None = None,
        *,
        force: bool = False,
        budget: int | None = None,
    ) -> consolidation.Consolidation:
        """One consolidation; switches the alias when the gate passes (release mode auto).

        ``budget`` is the token budget of the rendered summary for this call
        (default: the tenant's ``default_budget``). Over it, low-salience
        statements move to cold; what must be kept is kept, and an output
        still over budget is published whole with ``overBudget`` in its manifest.
        """
        if budget is not None and budget < 1:
            raise BadInput("must be a positive number of tokens", field="budget")
        chosen = self.default_budget if budget is None else budget
        return consolidation.consolidate(
            self.store, self.tenant, subject, generator, force=force, budget=chosen
        )

    def recall(self, subject: str) -> Recall:
        with self.store.reader(self.tenant) as reader:
            return recall(reader, subject, self.store.policy)

    def artifacts(self, subject: str | None = None) -> list[Artifact]:
        with self.store.reader(self.tenant) as reader:
            return reader.artifacts(subject)

    # -- consolidation jobs --

    def queue(self, subjects: Sequence[str], *, force: bool = False) -> list[Job]:
        """Queue a consolidation of each subject (a manual trigger; revives a dead job)."""
        return job_queue.queue(self.store, self.tenant, subjects, force)

    def schedule(self) -> list[Job]:
        """Queue every subject whose summary misses events or is no longer fresh."""
        return job_queue.schedule(self.store, self.tenant)

    def jobs(self, state: str | None = None) -> list[Job]:
        """The tenant's job queue: one row per subject ever queued, due first."""
        if state is not None and state not in job_queue.JOB_STATES:
            raise BadInput(f"must be one of {', '.join(job_queue.JOB_STATES)}", field="state")
        return self.store.jobs(self.tenant, state)

    @property
    def tail_threshold(self) -> int:
        """A consolidation is queued when more events than this are unconsolidated (0: off)."""
        return self.store.tail_threshold(self.tenant)

    def set_tail_threshold(self, threshold: int) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 0:
            raise BadInput("must be a whole number >= 0 (0 turns the trigger off)", field="tail")
        self.store.set_tail_threshold(self.tenant, threshold)

    def work(
        self, generator: Generator | None = None, *, retry: job_queue.RetryPolicy | None = None
    ) -> list[JobReport]:
        """Run this tenant's due jobs here, one after the other, until none is due.

        ``memlineage worker`` runs them in worker processes instead; this is for
        scripts and tests.
        """
        return worker.drain(self.store, self.tenant, generator, retry)

    # -- lifetime --

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
