"""One consolidation, steps 1–8 of the design, over a store and the pure parts.

``prepare`` runs steps 1–7 and leaves a candidate (or a rejected artifact);
``publish`` is step 8. Generation finishing never makes anything readable:
only the switch does.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from . import extract, gate, parse
from .canonical import input_root
from .errors import NotFound
from .generators.base import GenerationRequest, Generator
from .generators.deterministic import DeterministicGenerator
from .model import (
    Artifact,
    ArtifactStatus,
    GateFailure,
    GateReport,
    Item,
    Manifest,
    Output,
    SwitchResult,
)
from .recall import why_not_summary
from .render import render_summary
from .select import Selection, select
from .store.protocol import Head, Store
from .tokens import default_tokenizer


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


GENERATION_FAILED = "generation failed"


def new_artifact_id(subject: str, covers_through: int) -> str:
    """``summary:<subject>:<H, six digits>-<random>``: sortable by coverage, never reused."""
    return f"summary:{subject}:{covers_through:06d}-{uuid.uuid4().hex[:8]}"


#: the token budget of a rendered summary when neither the call nor the tenant sets one
DEFAULT_BUDGET = 500


@dataclass(frozen=True)
class Built:
    """Steps 1–6 of one consolidation, nothing written: what ``prepare`` stores."""

    artifact: Artifact
    selection: Selection
    items: tuple[Item, ...]


def build(
    store: Store,
    tenant: str,
    subject: str,
    generator: Generator | None = None,
    *,
    budget: int | None = DEFAULT_BUDGET,
    incremental: bool = True,
    config_version: int | None = None,
) -> Built:
    """Steps 1–6: snapshot, select, extract, generate, parse, gate. Writes nothing.

    ``incremental=False`` rebuilds from the raw layer alone, never reading a parent
    (what evaluation does).
    """
    generator = generator or DeterministicGenerator()
    with store.reader(tenant) as reader:
        head = reader.head(subject)
        if head is None:
            raise NotFound(f"no events for subject {subject!r}", field="subject")
        events = reader.events(subject, through=head.clock.high_water)
        ops = reader.operations(subject)
    # Only a fresh published summary built under the same budget is handed to the
    # generator (selector v2, incremental); a stale one is not read, and another
    # budget means another choice of what is cold: a full rebuild.
    parent = head.artifact if incremental and why_not_summary(head) is None else None
    if parent is not None and parent.manifest.budget != budget:
        parent = None
    parent_coverage = head.alias.covers_through if parent else 0
    selection = select(events, ops, head.clock.high_water, store.policy, parent_coverage)
    items = extract.extract_items(selection.events, selection.conflicts)
    open_items = extract.expected_open_items(selection.events)
    manifest = Manifest(
        artifact_id=new_artifact_id(subject, head.clock.high_water),
        subject=subject,
        new_covers_through=head.clock.high_water,
        input_epoch=head.clock.epoch,
        expected_alias=head.alias,
        input_ids=tuple(e.id for e in selection.events),
        input_root=input_root((e.id, e.hash) for e in selection.events),
        expected_conflicts=tuple(sorted(c.id for c in selection.conflicts)),
        selector_version=selection.selector_version,
        prompt_version=generator.prompt_version,
        model_snapshot=generator.model_snapshot,
        budget=budget,
        derived_from_artifact=parent.id if parent else None,
        config_version=config_version,
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
    output, report, reason = _generate_and_gate(generator, request, items)
    if output is not None and budget is not None:
        # counted on what a reader sees; an output over budget is published whole
        tokens = default_tokenizer().count(render_summary(output.statements))
        manifest = replace(manifest, over_budget=tokens > budget)
    if report.passed:
        status = ArtifactStatus.CANDIDATE
    elif reason == GENERATION_FAILED:
        status = ArtifactStatus.FAILED
    else:
        status = ArtifactStatus.REJECTED
    artifact = Artifact(manifest.artifact_id, subject, status, manifest, output, report, reason)
    return Built(artifact, selection, tuple(items))


def prepare(
    store: Store,
    tenant: str,
    subject: str,
    generator: Generator | None = None,
    *,
    budget: int | None = DEFAULT_BUDGET,
    config_version: int | None = None,
) -> Artifact:
    """Steps 1–7: ``build``, then write the artifact (a candidate, or why it is not one).

    ``budget`` is the token budget of the rendered summary (None: no budget).
    """
    artifact = build(
        store, tenant, subject, generator, budget=budget, config_version=config_version
    ).artifact
    store.write_artifact(tenant, artifact)
    return artifact


def _generate_and_gate(
    generator: Generator, request: GenerationRequest, items: Sequence[Item]
) -> tuple[Output | None, GateReport, str | None]:
    try:
        raw = generator.generate(request)
    except Exception as exc:  # a generator is foreign code: its crash fails the artifact
        failure = GateFailure("generation_failed", generator.name, f"{type(exc).__name__}: {exc}")
        return None, GateReport(False, (failure,)), GENERATION_FAILED
    try:
        output = parse.parse_output(raw)
    except parse.OutputRejected as exc:
        failure = GateFailure(f"parse_{exc.code}", exc.field, str(exc))
        return None, GateReport(False, (failure,)), "output rejected by the parser"
    report = gate.check(items, request.conflicts, request.open_items, output, request.events)
    return output, report, None if report.passed else "gate failed"


def publish(
    store: Store, tenant: str, artifact: Artifact, *, force: bool = False
) -> SwitchResult | None:
    """Step 8 for a candidate; a rejected artifact is never switched."""
    if artifact.status is not ArtifactStatus.CANDIDATE:
        return None
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
) -> Consolidation:
    """Steps 1–8 under the tenant's release mode.

    ``auto`` switches as soon as the gate passes; ``shadow`` queues a passing
    candidate for review instead (``awaiting_review``). A subject whose fresh
    summary already covers every event under the same budget is left alone
    (``up_to_date``) unless ``force`` asks for a new artifact anyway; another
    budget builds a new one.
    """
    if not force:
        with store.reader(tenant) as reader:
            head = reader.head(subject)
        if (
            head is not None
            and head.artifact is not None
            and _covers_everything(head)
            and head.artifact.manifest.budget == budget
        ):
            return Consolidation(head.artifact, None, up_to_date=True)
    artifact = prepare(
        store, tenant, subject, generator, budget=budget, config_version=config_version
    )
    if store.release_state(tenant)[0] == "shadow" and artifact.status is ArtifactStatus.CANDIDATE:
        store.queue_review(tenant, subject, artifact.id)
        return Consolidation(artifact, None, awaiting_review=True)
    return Consolidation(artifact, publish(store, tenant, artifact, force=force))


def _covers_everything(head: Head) -> bool:
    """The published summary is fresh (I4) and covers every event up to H."""
    return why_not_summary(head) is None and head.alias.covers_through == head.clock.high_water
