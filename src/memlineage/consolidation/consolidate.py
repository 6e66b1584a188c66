"""One consolidation, steps 1–8 of the design, over a store and the pure parts.

``prepare`` runs steps 1–7 and leaves a candidate (or a rejected artifact);
``publish`` is step 8. Generation finishing never makes anything readable:
only the switch does.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from memlineage.canonical import input_root
from memlineage.consolidation import collector, generation
from memlineage.consolidation.alias import why_not_summary
from memlineage.consolidation.generators.base import GenerationRequest, Generator
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.consolidation.render import exceeds_budget
from memlineage.consolidation.select import Selection, carries_over, root_of, select
from memlineage.errors import BadInput, NotFound
from memlineage.meaning import caches, extract
from memlineage.model import (
    Artifact,
    ArtifactStatus,
    Conflict,
    Event,
    Item,
    Manifest,
    SwitchResult,
)
from memlineage.progress import Progress, begin
from memlineage.store.protocol import Head, Store, SubjectInput
from memlineage.tokens import default_tokenizer


@dataclass(frozen=True)
class Consolidation:
    """The outcome of one consolidation: the artifact, and the switch if one was tried."""

    artifact: Artifact
    switch: SwitchResult | None
    up_to_date: bool = False  # the published summary already covered everything
    awaiting_review: bool = False  # shadow release: the candidate waits for a reviewer

    @property
    def switched(self) -> bool:
        return self.switch is not None and self.switch.switched

    @property
    def status(self) -> ArtifactStatus:
        """The artifact's status after this run (a refused switch leaves it failed)."""
        if self.switched:
            return ArtifactStatus.PUBLISHED
        if self.switch is not None:
            return ArtifactStatus.FAILED
        return self.artifact.status

    @property
    def reason(self) -> str | None:
        if self.up_to_date:
            return "up to date: the published summary covers every event"
        if self.awaiting_review:
            return "shadow release: awaiting review"
        if self.switch is not None and self.switch.reason is not None:
            return f"{self.switch.reason}: {self.switch.detail}"
        return self.artifact.reason

    def to_json(self) -> dict[str, Any]:
        return {
            "artifact_id": self.artifact.id,
            "status": str(self.status),
            "switched": self.switched,
            "reason": self.reason,
            "covers_through": self.artifact.manifest.new_covers_through,
            "over_budget": self.artifact.manifest.over_budget,
            "gate": {
                "passed": self.artifact.gate.passed,
                "failures": [f.to_json() for f in self.artifact.gate.failures],
            },
        }


@dataclass(frozen=True)
class Consolidations:
    """The outcomes of consolidating several subjects, in the order they were named."""

    results: tuple[Consolidation, ...]

    @property
    def switched(self) -> int:
        """How many consolidations moved their subject's alias."""
        return sum(r.switched for r in self.results)

    @property
    def failed(self) -> int:
        """How many gates failed (the command line exits 1 when any did)."""
        return sum(not r.artifact.gate.passed for r in self.results)


GENERATION_FAILED = generation.GENERATION_FAILED


def new_artifact_id(subject: str, covers_through: int) -> str:
    """``summary:<subject>:<H, six digits>-<random>``: sortable by coverage, never reused."""
    return f"summary:{subject}:{covers_through:06d}-{uuid.uuid4().hex[:8]}"


#: The token budget of a rendered summary when neither the call nor the tenant sets one.
#: The summary is what an agent reads on every turn, so its default is a small share
#: of a model's context: on LoCoMo's dialogue every speaker's summary fits 400 and the
#: twenty come to under 5% of the dialogue (docs/benchmarks.md); a recall with a query
#: fills its own budget by relevance from the summary, the cold events and the tail.
DEFAULT_BUDGET = 400


@dataclass(frozen=True)
class Built:
    """Steps 1–6 of one consolidation, nothing written: what ``prepare`` stores.

    ``attempts`` holds every artifact of the run, the published-or-not final one last
    (a model's rejected attempts come before it)."""

    attempts: tuple[Artifact, ...]
    selection: Selection
    items: tuple[Item, ...]
    #: the events whose items were extracted, not read stored: stored with the first write
    unstored: tuple[tuple[Event, tuple[Item, ...]], ...] = ()

    def write(self, store: Store, tenant: str) -> None:
        """Step 7 for every attempt, in order; the collector paused (collector.py)."""
        with collector.paused():  # the writes serialize what the build made
            for n, artifact in enumerate(self.attempts):
                store.write_artifact(tenant, artifact, self.unstored if n == 0 else ())

    @property
    def artifact(self) -> Artifact:
        return self.attempts[-1]


def build(
    store: Store,
    tenant: str,
    subject: str,
    generator: Generator | None = None,
    *,
    budget: int | None = DEFAULT_BUDGET,
    incremental: bool = True,
    config_version: int | None = None,
    read: SubjectInput | None = None,
) -> Built:
    """Steps 1–6: snapshot, select, extract, generate, parse, gate. Writes nothing.

    ``incremental=False`` rebuilds from the raw layer alone, never reading a parent
    (what evaluation does). ``read``: the snapshot, already read after the detection
    job caught up (else both are done here).
    """
    generator = generator or DeterministicGenerator()
    # a third of the CPU was the cyclic collector (collector.py); a model may wait on
    # I/O, so with one only the judging pauses it (generation.judge)
    builtin = isinstance(generator, DeterministicGenerator)
    with collector.paused() if builtin else contextlib.nullcontext():
        return _build(store, tenant, subject, generator, budget, incremental, config_version, read)


def _build(
    store: Store,
    tenant: str,
    subject: str,
    generator: Generator,
    budget: int | None,
    incremental: bool,
    config_version: int | None,
    read: SubjectInput | None,
) -> Built:
    if read is None:
        _detect_first(store, tenant, subject)
        read = _read_input(store, tenant, subject)
    # the operations as read: the same object while none is recorded (select.py reuses it)
    head, events, ops = read.head, list(read.events), read.operations
    parent = _parent(head, budget) if incremental else None
    parent_coverage = head.alias.covers_through if parent else 0
    selection = select(events, ops, head.clock.high_water, store.policy, parent_coverage)
    # the epoch moved since the parent: it stays the base only if nothing it read changed
    stale_epoch = parent is not None and why_not_summary(head) is not None
    if parent is not None and stale_epoch and not carries_over(selection, parent.manifest):
        parent, selection = None, replace(selection, parent_covers_through=0)
    extracted = extract.extract_with_stored(selection.events, selection.conflicts, read.items)
    items = extracted.items
    open_items = extracted.open_items
    manifest = Manifest(
        artifact_id=new_artifact_id(subject, head.clock.high_water),
        subject=subject,
        new_covers_through=head.clock.high_water,
        input_epoch=head.clock.epoch,
        expected_alias=head.alias,
        input_ids=selection.ids,
        input_root=root_of(selection),
        expected_conflicts=_sorted_ids(selection.conflicts),
        selector_version=selection.selector_version,
        prompt_version=generator.prompt_version,
        model_snapshot=generator.model_snapshot,
        budget=budget,
        derived_from_artifact=parent.id if parent else None,
        config_version=config_version,
        tail_root=input_root((e.id, e.hash) for e in selection.new_events) if parent else None,
    )
    request = GenerationRequest(
        subject,
        selection.events,
        tuple(items),
        selection.conflicts,
        open_items,
        parent.output if parent else None,
        budget=budget,
        parent_covers_through=selection.parent_covers_through,
    )
    # generate, parse, gate; for a model also repair once and fall back (generation.py)
    generated = generation.generate(generator, request)
    if generated.output is not None and budget is not None:
        # counted on what a reader sees; an output over budget is published whole
        over = exceeds_budget(generated.output.statements, budget, default_tokenizer())
        manifest = replace(manifest, over_budget=over)
    written = generation.artifacts(
        manifest, generated, lambda: new_artifact_id(subject, head.clock.high_water)
    )
    return Built(tuple(written), selection, tuple(items), tuple(extracted.unstored))


def _ids_sorted(conflicts: Sequence[Conflict]) -> tuple[str, ...]:
    return tuple(sorted(c.id for c in conflicts))


#: the manifest's ``expectedConflicts``: the last run's, when handed its very conflicts
#: (and more after them)
_sorted_ids = caches.ByIdentity(
    _ids_sorted, lambda known, more: tuple(sorted(known + _ids_sorted(more)))
)


def _parent(head: Head, budget: int | None) -> Artifact | None:
    """The published summary an incremental run (selector v2) may hand the generator.

    Only one built under the same budget (another budget means another choice of
    what is cold), never a stale or bypassed one. Fresh (I4), it is the base; when
    only its epoch moved, ``carries_over`` decides (a full rebuild otherwise).
    """
    alias, artifact = head.alias, head.artifact
    if artifact is None or alias.bypassed or artifact.output is None:
        return None
    if artifact.status is not ArtifactStatus.PUBLISHED or artifact.manifest.budget != budget:
        return None
    return artifact


def prepare(
    store: Store,
    tenant: str,
    subject: str,
    generator: Generator | None = None,
    *,
    budget: int | None = DEFAULT_BUDGET,
    config_version: int | None = None,
) -> Artifact:
    """Steps 1–7: ``build``, then write every attempt (rejected ones first, each with its
    report) and the final artifact: a candidate, or why it is not one.

    ``budget`` is the token budget of the rendered summary (None: no budget).
    """
    built = build(store, tenant, subject, generator, budget=budget, config_version=config_version)
    built.write(store, tenant)
    return built.artifact


def _detect_first(
    store: Store, tenant: str, subject: str, found: tuple[Head, bool] | None = None
) -> None:
    """The raw layer decides validity first: catch the contradiction job up (detect.py)
    when it has anything to do. ``found``: ``job_head`` as the caller read it."""
    found = found or store.job_head(tenant, subject)
    if found is not None and not found[1]:
        store.detect_conflicts(tenant, subject)


def _read_input(store: Store, tenant: str, subject: str) -> SubjectInput:
    """Step 1's snapshot: head, events up to its high water, operations."""
    read = store.consolidation_input(tenant, subject)
    if read is None:
        raise NotFound(f"no events for subject {subject!r}", field="subject")
    return read


def publish(
    store: Store, tenant: str, artifact: Artifact, *, force: bool = False
) -> SwitchResult | None:
    """Step 8 for a candidate; a rejected artifact is never switched."""
    if artifact.status is not ArtifactStatus.CANDIDATE:
        return None
    with collector.paused():  # the re-validation re-reads every input (collector.py)
        return store.switch(tenant, artifact.id, force=force)


def consolidate(
    store: Store,
    tenant: str,
    subject: str,
    generator: Generator | None = None,
    *,
    force: bool = False,
    budget: int | None = DEFAULT_BUDGET,
    config_version: int | None = None,
    release_mode: str | None = None,
) -> Consolidation:
    """Steps 1–8 under the tenant's release mode.

    ``auto`` switches as soon as the gate passes; ``shadow`` queues a passing
    candidate for review instead (``awaiting_review``). A subject whose fresh
    summary already covers every event under the same budget is left alone
    (``up_to_date``) unless ``force`` asks for a new artifact anyway; another
    budget builds a new one. ``release_mode``: the tenant's mode as the caller
    read it (a worker's claim does), else it is read here.

    Step 7 commits before step 8 starts: a worker killed between them leaves its
    candidate written, and the next publish of the subject fails it.
    """
    with collector.paused():  # reading the parent and the events (collector.py)
        found = store.job_head(tenant, subject)  # its artifact comes without the output
        head = found[0] if found is not None else None
        if (
            not force
            and head is not None
            and head.artifact is not None
            and _covers_everything(head)
            and head.artifact.manifest.budget == budget
        ):
            with store.reader(tenant) as reader:
                published = reader.artifact(head.artifact.id)
            return Consolidation(published or head.artifact, None, up_to_date=True)
        _detect_first(store, tenant, subject, found)
        read = _read_input(store, tenant, subject)
    built = build(
        store, tenant, subject, generator, budget=budget, config_version=config_version, read=read
    )
    built.write(store, tenant)  # step 7, as in prepare
    artifact = built.artifact
    mode = release_mode if release_mode is not None else store.release_state(tenant)[0]
    if mode == "shadow" and artifact.status is ArtifactStatus.CANDIDATE:
        store.queue_review(tenant, subject, artifact.id)
        return Consolidation(artifact, None, awaiting_review=True)
    return Consolidation(artifact, publish(store, tenant, artifact, force=force))


def consolidate_each(
    store: Store,
    tenant: str,
    subjects: Sequence[str] | None,
    generator: Generator | None = None,
    *,
    force: bool = False,
    budget: int | None = DEFAULT_BUDGET,
    config_version: int | None = None,
    progress: Progress | None = None,
) -> Consolidations:
    """``consolidate`` of each subject (None: every subject of the tenant), one by one.

    Every subject is checked before the first is consolidated, so an unknown
    one changes nothing. A subject named twice is consolidated once. Each
    consolidation stands alone, as a single call does: a failing gate leaves
    that subject's summary as it was and the others go on. ``progress``
    hears ``consolidating`` in subjects.
    """
    chosen = _known_subjects(store, tenant, subjects)
    advance = begin(progress, "consolidating", len(chosen))
    results: list[Consolidation] = []
    for subject in chosen:
        result = consolidate(
            store,
            tenant,
            subject,
            generator,
            force=force,
            budget=budget,
            config_version=config_version,
        )
        results.append(result)
        if advance is not None:
            advance(1)
    return Consolidations(tuple(results))


def _known_subjects(store: Store, tenant: str, subjects: Sequence[str] | None) -> list[str]:
    with store.reader(tenant) as reader:
        if subjects is None:
            return reader.subjects()
        chosen = list(dict.fromkeys(subjects))
        if not chosen:
            raise BadInput("name at least one subject", field="subject")
        for subject in chosen:
            if reader.head(subject) is None:
                raise NotFound(f"no events for subject {subject!r}", field="subject")
    return chosen


def _covers_everything(head: Head) -> bool:
    """The published summary is fresh (I4) and covers every event up to H (``head``: as
    ``job_head`` reads it, without the output)."""
    return (
        why_not_summary(head, output=False) is None
        and head.alias.covers_through == head.clock.high_water
    )
