"""The library API: one ``Memory`` per tenant over a store.

>>> from memlineage import Memory
>>> with Memory("memlineage.db", tenant="acme") as memory:
...     memory.add([{"id": "m-1", "subject": "user-7", "text": "Never email after 9 pm."}])
...     memory.consolidate("user-7")
...     memory.recall("user-7").mode
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, overload

from memlineage.consolidation import consolidate as consolidation
from memlineage.consolidation.generators.base import Generator
from memlineage.consolidation.generators.config import make_generator, resolve
from memlineage.consolidation.verify import Certification, verify
from memlineage.errors import BadInput, NotFound
from memlineage.lineage import audit, prov
from memlineage.meaning import extract
from memlineage.meaning.policy import TemporalPolicy, VersionedTrust, trust_policy, versioned_json
from memlineage.model import Artifact, Event, EventState, Item, NewEvent
from memlineage.operations import evaluate, keys, release, worker
from memlineage.operations import queue as job_queue
from memlineage.operations.worker import JobReport
from memlineage.progress import Progress, begin
from memlineage.raw.ingest import MAX_ID_LENGTH, parse_events, utc_now
from memlineage.raw.messages import parse_messages
from memlineage.raw.validity import event_states
from memlineage.recall.context import meaning_text, query_terms
from memlineage.recall.embed import (
    DEFAULT_KIND,
    LOCAL_KINDS,
    Embedder,
    identity,
    make_embedder,
    reads_whole_queries,
)
from memlineage.recall.fusion import Meaning, relevance, similarities
from memlineage.recall.read import finish, gather, ranks
from memlineage.recall.relevance import bm25
from memlineage.recall.results import Recall, RecallSet
from memlineage.store import open_store
from memlineage.store.append import MAX_NAME_BYTES, name_too_long
from memlineage.store.protocol import (
    Appended,
    Detection,
    Embedded,
    Erased,
    Job,
    OpResult,
    PolicyVersion,
    Reader,
    Rollout,
    Store,
    Swept,
)
from memlineage.strings import check_public_methods, check_text


def check_tenant(tenant: str) -> None:
    """A tenant is an identifier like an event id: not blank, at most MAX_ID_LENGTH, no NUL."""
    if not isinstance(tenant, str) or not tenant.strip():
        raise BadInput("must not be blank", field="tenant")
    if len(tenant) > MAX_ID_LENGTH or tenant != tenant.strip():
        raise BadInput(
            f"must be at most {MAX_ID_LENGTH} characters, no outer spaces", field="tenant"
        )
    check_text(tenant, "tenant")
    if name_too_long(tenant):
        raise BadInput(f"must be at most {MAX_NAME_BYTES} bytes in UTF-8", field="tenant")


def must_preserve(
    events: Iterable[Mapping[str, Any] | NewEvent], *, lines: Sequence[int] | None = None
) -> list[Item]:
    """The must-preserve items of events as if they were stored now; nothing is stored.

    The events are validated as ``Memory.add`` validates them (``lines`` as there).
    """
    now = utc_now()
    stored = [Event.stored(e, seq, now) for seq, e in enumerate(parse_events(events, lines), 1)]
    return extract.extract_items(stored)


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
        detect_after_add: bool = False,
        embedder: Embedder | str | None = None,
    ):
        """Open the store at ``db`` (see ``open_store``) for ``tenant``.

        ``default_budget``: the tenant's token budget of a rendered summary
        (None: none). ``create=False`` refuses to create a database that does
        not exist yet (``StoreError``), as read-only commands want for a
        mistyped path. ``detect_after_add``: run the contradiction detection
        job inside each ``add``, before it returns. By default ``add`` returns
        once the append commits and the job runs later: on a worker, or at the
        latest inside the next ``consolidate``, switch, ``detect`` or ``sweep``
        of the subject (no summary is switched over unchecked events). Until
        then raw recall shows both sides of a contradiction not yet detected.
        """
        check_tenant(tenant)
        if default_budget is not None and default_budget < 1:
            raise BadInput("must be a positive number of tokens", field="default_budget")
        self._owns_store = store is None  # a store handed in is closed by whoever opened it
        self.store = store or open_store(db, create=create)
        self.tenant = tenant
        self.detect_after_add = detect_after_add
        self.default_budget = default_budget
        if isinstance(embedder, str) and embedder not in LOCAL_KINDS:
            kinds = ", ".join(f"'{k}'" for k in LOCAL_KINDS)
            raise BadInput(f"must be an Embedder or one of {kinds}", field="embedder")
        self._embedder = embedder

    # -- raw layer --

    def add(
        self,
        events: Iterable[Mapping[str, Any] | NewEvent],
        *,
        lines: Sequence[int] | None = None,
        progress: Progress | None = None,
    ) -> list[Appended]:
        """Append events, all or nothing: a bad one leaves the store exactly as it was.

        Every check runs before the first write, those that need the store
        included (ids stored with other content, ``supersedes`` targets that
        are missing or in another subject, replacement cycles). ``BadInput``
        names the offending event as ``line``: ``lines[i]`` for ``events[i]``
        when given (a JSONL reader passes the file's line numbers), else the
        1-based position in ``events``.

        ``progress`` (see memlineage.progress) hears ``appending`` in events,
        then, with ``detect_after_add``, ``detecting`` in new events.
        """
        parsed = parse_events(events, lines)
        try:
            appended = self.store.append(self.tenant, parsed, progress)
        except BadInput as exc:  # the store names the 1-based position as the line
            if lines is None or exc.line is None or not 1 <= exc.line <= len(lines):
                raise
            raise type(exc)(exc.reason, line=lines[exc.line - 1], field=exc.field) from exc
        self._detect_after_append(appended, progress)
        return appended

    def add_messages(
        self,
        subject: str,
        messages: Iterable[Mapping[str, Any]],
        *,
        thread: str | None = None,
        at: str | None = None,
        lines: Sequence[int] | None = None,
        progress: Progress | None = None,
    ) -> list[Appended]:
        """Append chat messages (``[{"role", "content", "name"?, "at"?}]``) as events.

        Each user, assistant or tool message becomes one event of ``subject``
        (system messages are skipped): its content verbatim, its ``name`` (else
        its role) as the speaker, trust ``user``, ``agent`` or ``tool``. Ids are
        derived from the subject, ``thread``, each message's position and its
        role, name, content and time (memlineage.raw.messages), so a retried call
        is a no-op and re-sending a whole conversation appends only what is new.
        ``at`` (RFC 3339) is the time of the messages without their own. Every
        message is checked before anything is stored; ``BadInput`` names
        ``messages[i].field``. Returns what ``add`` returns, for the messages kept.
        """
        parsed = parse_messages(subject, messages, thread=thread, at=at, lines=lines)
        return self.add(parsed.events, progress=progress)

    def extract(self, events: Iterable[Mapping[str, Any] | NewEvent]) -> list[Item]:
        """The must-preserve items of ``events`` (see :func:`must_preserve`); nothing is stored."""
        return must_preserve(events)

    def _detect_after_append(self, appended: Sequence[Appended], progress: Progress | None) -> None:
        """With ``detect_after_add``: the detection job, once the append committed."""
        if not self.detect_after_add:
            return
        created = [a.subject for a in appended if a.created]
        checked = begin(progress, "detecting", len(created)) if created else None
        for subject in sorted(set(created)):
            self.store.detect_conflicts(self.tenant, subject, checked)

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

    def dismiss(self, conflict_id: str, reason: str | None = None) -> OpResult:
        """Take back a conflict (detected or declared): both of its sides count again."""
        return self.store.dismiss_conflict(self.tenant, conflict_id, reason)

    def detect(self, subject: str) -> Detection:
        """Run the contradiction detection job of a subject now (it is idempotent)."""
        return self.store.detect_conflicts(self.tenant, subject)

    def erase(self, event_id: str, reason: str, by: str = "memlineage") -> Erased:
        """Data-protection erasure: the event's content is removed everywhere it was copied.

        Its id, seq and hash stay (manifests still verify); what derives from it
        goes stale; who asked (``by``) and why are recorded.
        """
        return self.store.erase(self.tenant, event_id, reason, by)

    # -- policies --

    def policy(self) -> dict[str, Any]:
        """The tenant's current temporal and trust policies, with their versions."""
        store = self.store
        return {
            "temporal": versioned_json(store.temporal_policy(self.tenant)),
            "trust": versioned_json(store.trust_policy(self.tenant)),
        }

    def policy_history(self) -> list[PolicyVersion]:
        return self.store.policy_history(self.tenant)

    def set_temporal_policy(
        self, assignments: Sequence[str], reason: str | None = None
    ) -> TemporalPolicy:
        """A new temporal policy version with ``KIND=RULE`` changes (rules: keep, latest-wins)."""
        store = self.store
        changed = store.temporal_policy(self.tenant).changed(assignments)
        return store.set_temporal_policy(self.tenant, changed, reason)

    def set_trust_policy(
        self,
        admit: Sequence[str] | None = None,
        block: Sequence[str] | None = None,
        *,
        block_any: bool = False,
        reason: str | None = None,
        batch: int = 100,
        until_done: bool = True,
        progress: Progress | None = None,
    ) -> tuple[VersionedTrust, list[Rollout]]:
        """A new trust policy version, rolled out to every subject in batches of ``batch``.

        ``progress`` hears ``rolling out`` in subjects (those on an older version).
        """
        store = self.store
        wanted = trust_policy(0, admit, block, block_any)
        stored = store.set_trust_policy(self.tenant, wanted, reason)
        done = None
        if progress is not None:  # counting the subjects is one more query: only when watched
            pending = store.trust_rollout_pending(self.tenant, stored.version)
            done = begin(progress, "rolling out", pending if until_done else min(pending, batch))
        rounds = [store.roll_out_trust_policy(self.tenant, batch, done)]
        while until_done and rounds[-1].remaining and rounds[-1].applied:
            rounds.append(store.roll_out_trust_policy(self.tenant, batch, done))
        return stored, rounds

    # -- lineage and audit --

    def lineage(self, artifact_id: str, fmt: str = "prov-json") -> dict[str, Any] | str:
        """The artifact's lineage: PROV-JSON (a dict), or a dot / mermaid picture (text)."""
        if fmt not in prov.FORMATS:
            raise BadInput(f"unknown format {fmt!r}; one of {', '.join(prov.FORMATS)}",
                           field="format")  # fmt: skip
        doc = prov.to_prov(self.store.artifact_history(self.tenant, artifact_id),
                              artifact_id)  # fmt: skip
        if fmt == "dot":
            return prov.to_dot(doc)
        if fmt == "mermaid":
            return prov.to_mermaid(doc)
        return doc

    def why(self, subject: str, query: str) -> audit.Why:
        """Where a claim (by key or text) or a statement came from, down to raw events."""
        return audit.why(self.store.subject_history(self.tenant, subject), query)

    def audit(self, subject: str) -> audit.Audit:
        """Artifacts with their status history, alias history, operations; manifests verified."""
        return audit.audit(self.store.subject_history(self.tenant, subject))

    def sweep(self, older_than: float | None = None) -> list[Swept]:
        """Fail candidates orphaned by crashed runs (safe at any time); catch detection up."""
        return self.store.sweep(self.tenant, older_than)

    def optimize(self) -> list[str]:
        """Maintenance after a bulk load, for the whole database (every tenant, not only
        this one): SQLite merges its full-text index into one segment, which a recall's
        cold lookup reads once instead of once per segment; both refresh the planner's
        statistics. Safe at any time; it holds the write lock while it runs (on SQLite
        a time linear in the index). What was done, one line each."""
        return self.store.optimize()

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

        Without a ``generator``: the tenant's stored configuration, the one source
        of truth (``release rollout``; a tenant with none stored records the
        configuration file's settings as version 1 now, see docs/generators.md;
        without a file, the built-in generator). A ``generator`` given is a one-off:
        used for this call, not stored (the manifest's ``configVersion`` is null).

        ``budget`` is the token budget of the rendered summary for this call
        (default: the tenant's ``default_budget``). Over it, low-salience
        statements move to cold; what must be kept is kept, and an output
        still over budget is published whole with ``overBudget`` in its manifest.
        """
        chosen = self._budget(budget)
        generator, version = self._generator_and_version(generator)
        return consolidation.consolidate(
            self.store,
            self.tenant,
            subject,
            generator,
            force=force,
            budget=chosen,
            config_version=version,
        )

    def consolidate_many(
        self,
        subjects: Sequence[str] | None = None,
        generator: Generator | None = None,
        *,
        force: bool = False,
        budget: int | None = None,
        progress: Progress | None = None,
    ) -> consolidation.Consolidations:
        """``consolidate`` each of ``subjects`` (None: every subject of the tenant) in turn.

        Every subject is checked first: an unknown one raises ``NotFound`` and
        nothing is consolidated. A failing gate does not stop the others
        (``result.failed`` counts them). ``progress`` hears ``consolidating``
        in subjects.
        """
        chosen = self._budget(budget)
        generator, version = self._generator_and_version(generator)
        return consolidation.consolidate_each(
            self.store,
            self.tenant,
            subjects,
            generator,
            force=force,
            budget=chosen,
            config_version=version,
            progress=progress,
        )

    def _budget(self, budget: int | None) -> int | None:
        if budget is not None and budget < 1:
            raise BadInput("must be a positive number of tokens", field="budget")
        return self.default_budget if budget is None else budget

    def _generator_and_version(self, generator: Generator | None) -> tuple[Generator, int | None]:
        """The generator given (a one-off), else the tenant's stored configuration and its
        version (seeded from the configuration file the first time)."""
        if generator is not None:
            return generator, None
        version = release.configured(self.store, self.tenant).version
        return self.generator(version=version), version

    def generator(
        self,
        name: str | None = None,
        *,
        base_url: str | None = None,
        model: str | None = None,
        config: str | os.PathLike[str] | None = None,
        version: int | None = None,
    ) -> Generator:
        """The generator this tenant consolidates with (docs/generators.md): its active
        stored configuration, or stored ``version`` (NotFound if there is none); while
        none is stored, what the configuration file would seed (nothing is recorded here).

        ``name``, ``base_url`` and ``model`` override it field by field, for a
        one-off use (``consolidate --model``): nothing is stored. ``config`` names a
        configuration file to read instead (its tenant table over ``[generator]``,
        the arguments over both), also a one-off.
        """
        if config is not None:
            return make_generator(
                resolve(self.tenant, generator=name, base_url=base_url, model=model, config=config)
            )
        if version is None:
            chosen = release.configured(self.store, self.tenant, record=False).config
        else:
            chosen = release.stored_config(self.store, self.tenant, version)
        return release.generator_for(release.overridden(chosen, name, base_url, model), self.tenant)

    def verify(self, generator: Generator | None = None) -> Certification:
        """Certify a generator (default: this tenant's): fixed samples and invariance checks."""
        return verify(generator or self.generator())

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
        :func:`memlineage.consolidation.render`) keeps the best that fit after the must-keep part,
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
        meaning: Meaning | None = None
        gathered = []
        for n, name in enumerate(names):
            with self.store.reader(self.tenant, pipelined=True) as reader:
                if n == 0:  # in the first snapshot: no transaction of its own
                    meaning = self._meaning(query, reader)
                gathered.append(
                    gather(
                        reader,
                        name,
                        self.store.policy,
                        query,
                        with_items=ranks(query, budget),
                        meaning=meaning,
                    )
                )
        result = finish(gathered, query, budget)
        return result.recalls[0] if subject is not None else result

    def _meaning(self, query: str | None, reader: Reader) -> Meaning | None:
        """The query's vector, when the tenant's events are embedded by this embedder
        (the tenant's embedder as ``reader`` sees it).

        A tenant that never ran ``embed`` (or embeds with ``none``) ranks by words
        alone; so does a Memory given another embedder than the tenant's.
        """
        if not query or not query_terms(query):
            return None
        settings = reader.embedder()
        if settings is None or settings[1].dims == 0:
            return None
        embedder = self.embedder
        if identity(embedder) != settings[1]:
            return None
        text = query if reads_whole_queries(embedder) else meaning_text(query)
        return Meaning(settings[1], embedder.embed([text])[0])

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

    def events(self, subject: str, *, valid_only: bool = False) -> list[EventState]:
        """A subject's raw events in seq order, each with its ``state`` (valid, revoked,
        superseded, lost-conflict, retired, quarantined, erased) and ``why``; ``valid_only``
        keeps what the raw layer admits. A subject with no events has an empty list."""
        with self.store.reader(self.tenant) as reader:
            events = reader.events(subject)
            states = event_states(events, reader.operations(subject), self.store.policy)
        return [e for e in states if e.state == "valid"] if valid_only else states

    def rank(
        self,
        subject: str,
        query: str,
        event_ids: Sequence[str],
        *,
        texts: Mapping[str, str] | None = None,
    ) -> list[tuple[str, float]]:
        """``event_ids`` of ``subject`` ordered by relevance to ``query``, with their scores,
        as recall ranks: BM25 over these events, blended with the similarity of their
        vectors when the tenant's events are embedded by this Memory's embedder.
        ``texts``: event id -> the text to match words against (default: the event's).
        Ids of events that are not valid, or that match nothing, come last, scored 0."""
        wanted = list(dict.fromkeys(event_ids))
        with self.store.reader(self.tenant) as reader:
            meaning = self._meaning(query, reader)
            found_texts = {e.id: e.text for e in reader.events_by_id(subject, wanted)}
            vectors = reader.vectors(subject, wanted, meaning.embedder) if meaning else {}
        found = [i for i in wanted if i in found_texts]
        words = [texts[i] if texts and i in texts else found_texts[i] for i in found]
        lexical = bm25(query_terms(query), words)
        if meaning is not None:
            lexical = relevance(lexical, similarities(meaning.vector, found, vectors))
        scores = dict(zip(found, lexical, strict=True))
        return sorted(((i, scores.get(i, 0.0)) for i in wanted), key=lambda pair: -pair[1])

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

    def release_fail(self, progress: Progress | None = None) -> dict[str, Any]:
        """A failed release: bypass, fall back to the previous configuration, recover forward.

        ``progress`` hears ``recovering`` in subjects.
        """
        return release.fail(self.store, self.tenant, self.default_budget, progress)

    # -- evaluation --

    def eval(
        self,
        subjects: Sequence[str] | None = None,
        *,
        sample: int | None = None,
        gold: Sequence[evaluate.GoldFact] = (),
        evidence: Mapping[str, Sequence[str]] | None = None,
        generator: Generator | None = None,
        progress: Progress | None = None,
        save: bool = True,
    ) -> evaluate.EvalReport:
        """Rebuild summaries from the raw layer without switching and score them.

        ``report.passed`` is False on any erroneous new fact or visible stale artifact.
        ``progress`` hears ``rebuilding`` in subjects.
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
        self,
        generator: Generator | None = None,
        *,
        retry: job_queue.RetryPolicy | None = None,
        limit: int | None = None,
    ) -> list[JobReport]:
        """Run this tenant's due jobs here, one after the other, until none is due or
        ``limit`` jobs have run.

        ``memlineage worker`` runs them in worker processes instead; this is for
        scripts, tests and the HTTP service's bounded ``POST /v1/jobs/run``.
        """
        embedder = self.embedder if self._embedder is not None else None  # None: as the tenant's
        return worker.drain(
            self.store, self.tenant, generator, retry, limit=limit, embedder=embedder
        )

    # -- embeddings --

    @property
    def embedder(self) -> Embedder:
        """The embedder ``embed`` uses (made on first use: the default loads a model)."""
        if self._embedder is None or isinstance(self._embedder, str):
            self._embedder = make_embedder(self._embedder or DEFAULT_KIND)
        return self._embedder

    def embed(
        self,
        subject: str | None = None,
        *,
        limit: int | None = None,
        progress: Progress | None = None,
    ) -> list[Embedded]:
        """Run the embedding job: vectors for the events that have none of this embedder.

        ``subject`` None: every subject behind. The embedder becomes the tenant's
        (a change embeds every event again; until then recall ranks the events
        without a current vector by their words). ``Memory.add`` never embeds.
        ``limit``: at most that many events per subject in this call.
        """
        store = self.store
        embedder = self.embedder
        store.set_embedder(self.tenant, identity(embedder))
        subjects = [subject] if subject is not None else store.pending_embedding(self.tenant)
        done = begin(progress, "embedding", None) if subjects else None
        return [store.embed_pending(self.tenant, s, embedder, limit, done) for s in subjects]

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


# Every string argument (reasons, keys, labels, subjects, ...) is checked on the way in, so
# the command line, HTTP and MCP refuse the same input the same way on both backends;
# events are checked by parse_events, which names their line.
check_public_methods(Memory, skip=frozenset({"events"}))
