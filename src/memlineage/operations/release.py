"""Release (DESIGN "Release"): per-tenant mode, configurations, shadow review, forward recovery.

- ``auto``: a candidate that passes the gate is switched at once.
- ``shadow``: it waits in the review queue; approval switches it through the
  same compare-and-swap, and is refused (never forced) when the alias or the
  epoch moved meanwhile; a rebuild is then due.
- A versioned generator configuration per tenant; a rollout activates a new
  version and keeps the one it replaced as the fallback.
- ``fail``: bypass every summary of the tenant (recall goes raw; coverage
  never moves back), fall back to the previous configuration, rebuild each
  subject from currently valid inputs at coverage >= the current one, and
  recover forward through the same CAS. Nothing is deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memlineage.consolidation import consolidate as consolidation
from memlineage.consolidation.generators.base import Generator
from memlineage.consolidation.generators.config import make_generator, resolve
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.consolidation.render import render_summary
from memlineage.errors import BadInput, NotFound
from memlineage.meaning import extract
from memlineage.meaning.values import canonical
from memlineage.model import Artifact, SwitchResult
from memlineage.progress import Progress, begin
from memlineage.store.protocol import Store

MODES: tuple[str, ...] = ("auto", "shadow")
BUILTIN_CONFIG: dict[str, Any] = {"generator": "deterministic"}


def validate_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A generator configuration as stored; BadInput names what is wrong."""
    name = config.get("generator")
    if name not in ("deterministic", "openai"):
        raise BadInput("must be 'deterministic' or 'openai'", field="generator")
    for field in ("model", "base_url", "prompt", "selector"):
        if field in config and not isinstance(config[field], str):
            raise BadInput("must be a string", field=field)
    if name == "openai" and not config.get("model"):
        raise BadInput("an openai configuration needs a model", field="model")
    return dict(config)


def generator_for(config: Mapping[str, Any] | None, tenant: str) -> Generator:
    """The generator a stored configuration names (None: the built-in one)."""
    config = config or BUILTIN_CONFIG
    if config.get("generator") == "openai":
        settings = resolve(
            tenant, generator="openai", base_url=config.get("base_url"), model=config.get("model")
        )
        return make_generator(settings)
    return DeterministicGenerator()


@dataclass(frozen=True)
class ActiveConfig:
    version: int | None
    config: dict[str, Any]


def active_config(store: Store, tenant: str, previous: bool = False) -> ActiveConfig:
    """The configuration in use (or the one a failed release falls back to)."""
    _, active, before = store.release_state(tenant)
    version = before if previous else active
    if version is None:
        return ActiveConfig(None, dict(BUILTIN_CONFIG))
    configs = {v: c for v, c, _ in store.generator_configs(tenant)}
    return ActiveConfig(version, configs[version])


def set_mode(store: Store, tenant: str, mode: str) -> bool:
    if mode not in MODES:
        raise BadInput(f"must be one of {', '.join(MODES)}", field="mode")
    return store.set_release_mode(tenant, mode)


def rollout(store: Store, tenant: str, config: Mapping[str, Any]) -> int:
    """Store a new configuration version and make it active; the old one becomes previous."""
    version = store.add_generator_config(tenant, validate_config(config))
    store.activate_config(tenant, version, "rollout")
    return version


@dataclass(frozen=True)
class Decision:
    """The outcome of approving or rejecting a candidate in review."""

    artifact_id: str
    state: str  # approved, rejected, refused
    switch: SwitchResult | None = None
    rebuild_due: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "artifact_id": self.artifact_id,
            "state": self.state,
            "switched": bool(self.switch and self.switch.switched),
            "reason": str(self.switch.reason) if self.switch and self.switch.reason else None,
            "detail": self.switch.detail if self.switch else "",
            "rebuild_due": self.rebuild_due,
        }


def configs_json(found: list[tuple[int, dict[str, Any], str]]) -> list[dict[str, Any]]:
    """Configuration versions as every interface shows them (``release configs --json``)."""
    return [{"version": v, "config": c, "created_at": at} for v, c, at in found]


def _pending(store: Store, tenant: str, artifact_id: str) -> dict[str, Any]:
    for review in store.reviews(tenant, "pending"):
        if review["artifact_id"] == artifact_id:
            return review
    raise NotFound(f"no pending review of {artifact_id!r}", field="artifact")


def approve(
    store: Store, tenant: str, artifact_id: str, reviewer: str, reason: str | None
) -> Decision:
    """Switch an approved candidate through the same CAS; refused if the alias or epoch moved."""
    _pending(store, tenant, artifact_id)
    result = store.switch(tenant, artifact_id)
    state = "approved" if result.switched else "refused"
    why = reason if result.switched else f"{result.reason}: {result.detail}"
    store.decide_review(tenant, artifact_id, state, reviewer, why)
    return Decision(artifact_id, state, result, rebuild_due=not result.switched)


def reject(
    store: Store, tenant: str, artifact_id: str, reviewer: str, reason: str | None
) -> Decision:
    """Reject a candidate in review; it is kept, rejected, with the reviewer and reason."""
    _pending(store, tenant, artifact_id)
    store.decide_review(tenant, artifact_id, "rejected", reviewer, reason)
    return Decision(artifact_id, "rejected")


@dataclass(frozen=True)
class Recovery:
    """One subject's forward recovery after a failed release."""

    subject: str
    bypassed: bool
    artifact_id: str | None
    switched: bool
    covers_through: int
    reason: str | None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def fail(
    store: Store,
    tenant: str,
    budget: int | None = consolidation.DEFAULT_BUDGET,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Bypass every summary of ``tenant``, fall back to the previous configuration, recover.

    ``progress`` hears ``recovering`` in subjects (each rebuilt with the fallback).
    """
    fallback = active_config(store, tenant, previous=True)
    replaced = store.activate_config(tenant, fallback.version, "fail")
    with store.reader(tenant) as reader:
        subjects = reader.subjects()
    bypassed = {s: store.bypass(tenant, s) for s in subjects}
    generator = generator_for(fallback.config, tenant)
    recoveries = []
    advance = begin(progress, "recovering", len(subjects))
    for subject in subjects:
        artifact = consolidation.prepare(
            store, tenant, subject, generator, budget=budget, config_version=fallback.version
        )
        switch = consolidation.publish(store, tenant, artifact)
        switched = switch is not None and switch.switched
        why = None if switched else _why_not(artifact.reason, switch)
        recoveries.append(
            Recovery(
                subject,
                bypassed[subject],
                artifact.id,
                switched,
                artifact.manifest.new_covers_through,
                why,
            )
        )
        if advance is not None:
            advance(1)
    return {
        "tenant": tenant,
        "failed_config": replaced,
        "recovered_with": fallback.version,
        "subjects": [r.to_json() for r in recoveries],
    }


def _why_not(artifact_reason: str | None, switch: SwitchResult | None) -> str | None:
    if switch is not None and switch.reason is not None:
        return f"{switch.reason}: {switch.detail}"
    return artifact_reason


def review_sheet(store: Store, tenant: str, candidate: Artifact) -> dict[str, Any]:
    """What a reviewer needs: the candidate's and the published rendered summaries side by
    side, the must-preserve set with each item's status, and the gate report."""
    with store.reader(tenant) as reader:
        head = reader.head(candidate.subject)
        events = reader.events_by_id(candidate.subject, candidate.manifest.input_ids)
    published = head.artifact if head is not None else None
    items = extract.extract_items(events)
    carried = {
        (c.key, canonical(c.value, c.unit), c.polarity)
        for c in (candidate.output.claims if candidate.output else ())
    }
    return {
        "artifact": candidate.to_json(),
        "candidate_summary": _summary(candidate),
        "published": published.id if published else None,
        "published_summary": _summary(published) if published else None,
        "must_preserve": [
            {
                **item.to_json(),
                "clause": item.clause,
                "kept": (item.key, canonical(item.value, item.unit), item.polarity) in carried,
            }
            for item in items
        ],
        "gate": candidate.gate.to_json(),
    }


def _summary(artifact: Artifact | None) -> str | None:
    if artifact is None or artifact.output is None:
        return None
    manifest = artifact.manifest
    return render_summary(
        artifact.output.statements, budget=manifest.budget, over_budget=manifest.over_budget
    )
