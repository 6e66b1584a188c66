"""Release (DESIGN "Release"): per-tenant mode, configurations, shadow review, forward recovery.

- ``auto``: a candidate that passes the gate is switched at once.
- ``shadow``: it waits in the review queue; approval switches it through the
  same compare-and-swap, and is refused (never forced) when the alias or the
  epoch moved meanwhile; a rebuild is then due.
- A versioned generator configuration per tenant, the one source of truth of
  what it consolidates with; a rollout activates a new version and keeps the
  one it replaced as the fallback. The configuration file seeds it: a tenant
  with none stored records the file's settings as version 1 when it first needs
  one (``configured``); without a file, the built-in generator, nothing stored.
- ``fail``: bypass every summary of the tenant (recall goes raw; coverage
  never moves back), fall back to the previous configuration, rebuild each
  subject from currently valid inputs at coverage >= the current one, and
  recover forward through the same CAS. Nothing is deleted.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from memlineage.consolidation import consolidate as consolidation
from memlineage.consolidation.generators.base import Generator
from memlineage.consolidation.generators.config import (
    check_stored,
    make_generator,
    seed_config,
    stored_settings,
)
from memlineage.consolidation.render import render_summary
from memlineage.errors import BadInput, NotFound
from memlineage.meaning import extract
from memlineage.meaning.values import canonical
from memlineage.model import Artifact, SwitchResult
from memlineage.progress import Progress, begin
from memlineage.store.protocol import Store

MODES: tuple[str, ...] = ("auto", "shadow")
BUILTIN_CONFIG: dict[str, Any] = {"generator": "deterministic"}
# Names that hold a credential: never stored in a configuration, never shown.
_SECRET_NAME = re.compile(r"key|token|secret|password|passwd|auth|sig|credential", re.I)
NO_SECRETS = (
    "must not carry a credential (user:password@ or a key/token parameter):"
    " configurations are shown to the tenant; the API key comes from OPENAI_API_KEY"
)


def url_has_secret(url: str) -> bool:
    """True when a URL carries userinfo or a query parameter named like a credential."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    names = [k for k, _ in parse_qsl(parts.query, keep_blank_values=True)]
    return "@" in parts.netloc or any(_SECRET_NAME.search(k) for k in names)


def validate_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A generator configuration as stored; BadInput names what is wrong (never echoing
    a value: it may be a credential)."""
    name = config.get("generator")
    if name not in ("deterministic", "openai"):
        raise BadInput("must be 'deterministic' or 'openai'", field="generator")
    for field in ("model", "base_url", "prompt", "selector"):
        if field in config and not isinstance(config[field], str):
            raise BadInput("must be a string", field=field)
    secret = [k for k in config if _SECRET_NAME.search(k)]
    if secret:
        raise BadInput(NO_SECRETS, field=sorted(secret)[0])
    if url_has_secret(config.get("base_url") or ""):
        raise BadInput(NO_SECRETS, field="base_url")
    if name == "openai" and not config.get("model"):
        raise BadInput("an openai configuration needs a model", field="model")
    check_stored(config)
    return dict(config)


def generator_for(config: Mapping[str, Any] | None, tenant: str) -> Generator:
    """The generator a stored configuration describes (None: the built-in one); only the
    API key comes from elsewhere (the environment, else the file): it is never stored."""
    return make_generator(stored_settings(config or BUILTIN_CONFIG, tenant))


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
    return ActiveConfig(version, stored_config(store, tenant, version))


def stored_config(store: Store, tenant: str, version: int) -> dict[str, Any]:
    """Stored configuration ``version`` of the tenant; NotFound when there is none."""
    for found, config, _ in store.generator_configs(tenant):
        if found == version:
            return config
    raise NotFound(f"no configuration version {version}", field="version")


def configured(store: Store, tenant: str, *, record: bool = True) -> ActiveConfig:
    """The configuration the tenant consolidates with: its active stored version.

    A tenant with no stored configuration at all takes the configuration file's
    settings (``seed_config``), recorded as version 1 when ``record`` (the first
    consolidation, job or release does; a read such as ``Memory.generator()`` does
    not); without a file, the built-in generator and nothing stored.
    """
    _, active, _ = store.release_state(tenant)
    if active is None and not store.generator_configs(tenant):
        seed = seed_config(tenant)
        if seed is None:
            return ActiveConfig(None, dict(BUILTIN_CONFIG))
        if not record:
            return ActiveConfig(None, seed)
        store.seed_generator_config(tenant, validate_config(seed))
    return active_config(store, tenant)


def overridden(
    config: Mapping[str, Any], name: str | None, base_url: str | None, model: str | None
) -> dict[str, Any]:
    """``config`` with one-off overrides, field by field; a model or an endpoint alone
    implies ``openai``. Not stored: what a call such as ``consolidate --model`` uses."""
    given = {k: v for k, v in (("model", model), ("base_url", base_url)) if v is not None}
    chosen = name or ("openai" if given else config.get("generator"))
    if chosen != "openai":
        return {"generator": chosen}
    base = dict(config) if config.get("generator") == "openai" else {}
    return {**base, "generator": "openai", **given}


def rollout_config(
    tenant: str,
    name: str | None,
    base_url: str | None,
    model: str | None,
    config: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """What ``release rollout`` stores: the flags; without ``--generator`` (or with
    ``--config``), the configuration file's settings for the tenant, the flags over them."""
    if name is not None and config is None:
        return overridden({"generator": name}, name, base_url, model)
    seed = seed_config(tenant, config)
    if seed is None:
        raise BadInput("nothing to roll out: give --generator, or a configuration file"
                       " with a [generator] table", field="generator")  # fmt: skip
    return overridden(seed, name, base_url, model)


def set_mode(store: Store, tenant: str, mode: str) -> bool:
    if mode not in MODES:
        raise BadInput(f"must be one of {', '.join(MODES)}", field="mode")
    return store.set_release_mode(tenant, mode)


def rollout(store: Store, tenant: str, config: Mapping[str, Any]) -> int:
    """Store a new configuration version and make it active; the old one becomes previous
    (a tenant's first rollout records the file's settings first, as the fallback)."""
    checked = validate_config(config)
    configured(store, tenant)
    version = store.add_generator_config(tenant, checked)
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
    """Configuration versions as every interface shows them (``release configs --json``);
    a credential stored before they were refused is shown as ``***``."""
    return [{"version": v, "config": shown_config(c), "created_at": at} for v, c, at in found]


def shown_config(config: Mapping[str, Any]) -> dict[str, Any]:
    shown = {k: "***" if _SECRET_NAME.search(k) else v for k, v in config.items()}
    if isinstance(shown.get("base_url"), str) and url_has_secret(shown["base_url"]):
        shown["base_url"] = _redacted_url(shown["base_url"])
    return shown


def _redacted_url(url: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    query = "&".join(
        f"{k}=***" if _SECRET_NAME.search(k) else f"{k}={v}"
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
    )
    netloc = f"***@{host}" if "@" in parts.netloc else host
    return parts._replace(netloc=netloc, query=query).geturl()


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
    configured(store, tenant)
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
