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
from typing import Any, overload

from . import consolidate as consolidation
from . import queue as job_queue
from . import worker
from .errors import BadInput
from .generators.base import Generator
from .ingest import MAX_ID_LENGTH, parse_event
from .model import Artifact, NewEvent
from .recall import Recall, RecallSet, finish, gather, ranks
from .store import open_store
from .store.append import MAX_NAME_BYTES, name_too_long
from .store.protocol import Appended, Job, OpResult, Store
from .worker import JobReport


def check_tenant(tenant: str) -> None:
    """A tenant is an identifier like an event id: not blank, at most MAX_ID_LENGTH, no NUL."""
    if not isinstance(tenant, str) or not tenant.strip():
        raise BadInput("must not be blank", field="tenant")
    if len(tenant) > MAX_ID_LENGTH or tenant != tenant.strip():
        raise BadInput(
            f"must be at most {MAX_ID_LENGTH} characters, no outer spaces", field="tenant"
        )
    if "\x00" in tenant:
        raise BadInput("must not contain NUL (U+0000)", field="tenant")
    if name_too_long(tenant):
        raise BadInput(f"must be at most {MAX_NAME_BYTES} bytes in UTF-8", field="tenant")


class Memory:
    """Memory of one tenant. Every method is one or a few short transactions."""

    def __init__(
        self,
        db: str | None = None,
        *,
        tenant: str = "default",
        store: Store | None = None,
        default_budget: int | None = consolidation.DEFAULT_BUDGET,
        create: bool = True,
    ):
        """Open the store at ``db`` (see ``open_store``) for ``tenant``.

        ``default_budget``: the tenant's token budget of a rendered summary
        (None: none). ``create=False`` refuses to create a database that does
        not exist yet (``StoreError``), as read-only commands want for a
        mistyped path.
        """
        check_tenant(tenant)
        if default_budget is not None and default_budget < 1:
            raise BadInput("must be a positive number of tokens", field="default_budget")
        self.store = store or open_store(db, create=create)
        self.tenant = tenant
        self.default_budget = default_budget

    # -- raw layer --

    def add(
        self,
        events: Iterable[Mapping[str, Any] | NewEvent],
        *,
        lines: Sequence[int] | None = None,
    ) -> list[Appended]:
        """Append events, all or nothing: a bad one leaves the store exactly as it was.

        Every check runs before the first write, those that need the store
        included (ids stored with other content, ``supersedes`` targets that
        are missing or in another subject, replacement cycles). ``BadInput``
        names the offending event as ``line``: ``lines[i]`` for ``events[i]``
        when given (a JSONL reader passes the file's line numbers), else the
        1-based position in ``events``.
        """
        parsed: list[NewEvent] = []
        for index, event in enumerate(events):
            try:
                parsed.append(event if isinstance(event, NewEvent) else parse_event(dict(event)))
            except BadInput as exc:
                line = lines[index] if lines is not None else index + 1
                # the field keeps its "[index]." prefix, as before lines were reported
                raise BadInput(exc.reason, line=line, field=f"[{index}].{exc.field or ''}") from exc
        try:
            return self.store.append(self.tenant, parsed)
        except BadInput as exc:  # the store names the 1-based position as the line
            if lines is None or exc.line is None or not 1 <= exc.line <= len(lines):
                raise
            raise type(exc)(exc.reason, line=lines[exc.line - 1], field=exc.field) from exc

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

    @overload
    def recall(
        self, subject: str, query: str | None = None, budget: int | None = None
    ) -> Recall: ...

    @overload
    def recall(
        self,
        subject: None = None,
        query: str | None = None,
        budget: int | None = None,
        *,
        subjects: Sequence[str],
    ) -> RecallSet: ...

    def recall(
        self,
        subject: str | None = None,
        query: str | None = None,
        budget: int | None = None,
        *,
        subjects: Sequence[str] | None = None,
    ) -> Recall | RecallSet:
        """What an agent should know: one subject (a ``Recall``) or several (a ``RecallSet``).

        ``query`` ranks the summary's statements, the cold events and the raw tail
        by full-text relevance; ``budget`` (tokens of the rendered context, see
        :func:`memlineage.render`) keeps the best that fit after the must-keep part,
        which is never cut. Several ``subjects`` share one budget; each is read in
        its own snapshot (nothing reads across subjects in one transaction).
        """
        if budget is not None and (isinstance(budget, bool) or budget < 0):
            raise BadInput("must be a non-negative number of tokens", field="budget")
        if (subject is None) == (subjects is None):
            raise BadInput("give either one subject or a list of subjects", field="subjects")
        names = [subject] if subject is not None else list(dict.fromkeys(subjects or ()))
        if not names or not all(names):
            raise BadInput("must name at least one non-empty subject", field="subjects")
        if any("\x00" in name for name in names):  # no backend can hold it
            raise BadInput("must not contain NUL (U+0000)", field="subject")
        gathered = []
        for name in names:
            with self.store.reader(self.tenant) as reader:
                gathered.append(
                    gather(reader, name, self.store.policy, query, with_items=ranks(query, budget))
                )
        result = finish(gathered, query, budget)
        return result.recalls[0] if subject is not None else result

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
