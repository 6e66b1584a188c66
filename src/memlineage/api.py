"""The library API: one ``Memory`` per tenant over a store.

>>> from memlineage import Memory
>>> with Memory("memlineage.db", tenant="acme") as memory:
...     memory.add([{"id": "m-1", "subject": "user-7", "text": "Never email after 9 pm."}])
...     memory.consolidate("user-7")
...     memory.recall("user-7").mode
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

from . import consolidate as consolidation
from . import evaluate, keys, release, worker
from . import queue as job_queue
from .errors import BadInput, NotFound
from .generators.base import Generator
from .ingest import MAX_ID_LENGTH, parse_event
from .model import Artifact, Event, NewEvent
from .recall import Recall, recall
from .select import source_state
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
        self._owns_store = store is None  # a store handed in is closed by whoever opened it
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
        """One consolidation; under release mode ``auto`` it switches the alias when the
        gate passes, under ``shadow`` the candidate waits for review.

        Without a ``generator``, the tenant's active configuration chooses one
        (the built-in generator when none was rolled out).

        ``budget`` is the token budget of the rendered summary for this call
        (default: the tenant's ``default_budget``). Over it, low-salience
        statements move to cold; what must be kept is kept, and an output
        still over budget is published whole with ``overBudget`` in its manifest.
        """
        if budget is not None and budget < 1:
            raise BadInput("must be a positive number of tokens", field="budget")
        chosen = self.default_budget if budget is None else budget
        version = None
        if generator is None:
            active = release.active_config(self.store, self.tenant)
            generator, version = release.generator_for(active.config), active.version
        return consolidation.consolidate(
            self.store,
            self.tenant,
            subject,
            generator,
            force=force,
            budget=chosen,
            config_version=version,
        )

    def recall(self, subject: str) -> Recall:
        if "\x00" in subject:  # no backend can hold it; PostgreSQL would refuse the query
            raise BadInput("must not contain NUL (U+0000)", field="subject")
        with self.store.reader(self.tenant) as reader:
            return recall(reader, subject, self.store.policy)

    def artifacts(self, subject: str | None = None) -> list[Artifact]:
        with self.store.reader(self.tenant) as reader:
            return reader.artifacts(subject)

    def artifact(self, artifact_id: str) -> Artifact:
        """One artifact of this tenant; NotFound for a missing one or another tenant's."""
        with self.store.reader(self.tenant) as reader:
            found = reader.artifact(artifact_id)
        if found is None:
            raise NotFound(f"no artifact {artifact_id!r}", field="artifact")
        return found

    def subjects(self) -> list[str]:
        """Every subject of this tenant that has events."""
        with self.store.reader(self.tenant) as reader:
            return reader.subjects()

    def events(self, subject: str, *, valid_only: bool = False) -> list[Event]:
        """A subject's raw events in seq order; ``valid_only`` keeps what the raw layer admits."""
        with self.store.reader(self.tenant) as reader:
            events = reader.events(subject)
            if not valid_only:
                return events
            state = source_state(events, reader.operations(subject), self.store.policy)
        return [e for e in events if state.is_valid(e)]

    def rank(self, subject: str, query: str, event_ids: Sequence[str]) -> list[tuple[str, float]]:
        """``event_ids`` of ``subject`` ordered by relevance to ``query``, with their scores."""
        wanted = set(event_ids)
        terms = {t for t in query.lower().split() if t}
        scored = []
        for event in self.events(subject):
            if event.id in wanted:
                words = set(event.text.lower().split())
                scored.append((event.id, float(len(terms & words))))
        return sorted(scored, key=lambda pair: -pair[1])

    def has_subject(self, subject: str) -> bool:
        with self.store.reader(self.tenant) as reader:
            return reader.head(subject) is not None

    # -- release --

    def release_mode(self, mode: str | None = None) -> str:
        """The tenant's release mode; with ``mode`` (auto or shadow), set it first."""
        if mode is not None:
            release.set_mode(self.store, self.tenant, mode)
        return self.store.release_state(self.tenant)[0]

    def rollout(self, config: Mapping[str, Any]) -> int:
        """Add a generator configuration version and make it active; returns the version."""
        return release.rollout(self.store, self.tenant, config)

    def configs(self) -> list[tuple[int, dict[str, Any], str]]:
        """Every generator configuration version: (version, configuration, created_at)."""
        return self.store.generator_configs(self.tenant)

    def reviews(self, state: str | None = "pending") -> list[dict[str, Any]]:
        """The shadow review queue (``state=None``: every decision too)."""
        return self.store.reviews(self.tenant, state)

    def review(self, artifact_id: str) -> dict[str, Any]:
        """A candidate beside the published summary, with its must-preserve set and gate report."""
        candidate = self.artifact(artifact_id)
        return release.review_sheet(self.store, self.tenant, candidate)

    def approve(
        self, artifact_id: str, reviewer: str, reason: str | None = None
    ) -> release.Decision:
        """Approve a candidate in review: it switches through the CAS, or is refused."""
        return release.approve(self.store, self.tenant, artifact_id, reviewer, reason)

    def reject(
        self, artifact_id: str, reviewer: str, reason: str | None = None
    ) -> release.Decision:
        """Reject a candidate in review; it is kept as rejected, with the reviewer and reason."""
        return release.reject(self.store, self.tenant, artifact_id, reviewer, reason)

    def release_fail(self) -> dict[str, Any]:
        """A failed release: bypass, fall back to the previous configuration, recover forward."""
        return release.fail(self.store, self.tenant, self.default_budget)

    # -- evaluation --

    def eval(
        self,
        subjects: Sequence[str] | None = None,
        *,
        sample: int | None = None,
        gold: Sequence[evaluate.GoldFact] = (),
        evidence: Mapping[str, Sequence[str]] | None = None,
        generator: Generator | None = None,
        progress: Callable[[str], None] | None = None,
        save: bool = True,
    ) -> evaluate.EvalReport:
        """Rebuild summaries from the raw layer without switching and score them.

        ``report.passed`` is False on any erroneous new fact or visible stale artifact.
        """
        return evaluate.run_eval(
            self.store,
            self.tenant,
            subjects,
            sample=sample,
            gold=gold,
            evidence=evidence,
            generator=generator,
            budget=self.default_budget,
            progress=progress,
            save=save,
        )

    def eval_runs(self, limit: int = 100) -> list[dict[str, Any]]:
        """The stored evaluation runs, oldest first."""
        return self.store.eval_runs(self.tenant, limit)

    # -- API keys of the HTTP service --

    def create_key(self, label: str | None = None) -> tuple[str, str]:
        """A new API key for this tenant: (key_id, key). The key is shown only once."""
        return keys.create_key(self.store, self.tenant, label)

    def list_keys(self) -> list[keys.ApiKey]:
        return keys.list_keys(self.store, self.tenant)

    def revoke_key(self, key_id: str) -> bool:
        """Revoke a key of this tenant; False when it was revoked already."""
        return keys.revoke_key(self.store, self.tenant, key_id)

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
        if self._owns_store:
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
