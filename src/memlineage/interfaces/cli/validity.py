"""Validity over time: erase, dismiss, detect, policy, audit, sweep; optimize."""

from __future__ import annotations

import getpass
from collections.abc import Callable
from typing import Any

import click

from memlineage.interfaces.cli.app import Report, command, global_options, memory, reporting, root
from memlineage.interfaces.cli.progress import progress_bars
from memlineage.interfaces.cli.raw import op_text
from memlineage.lineage import audit as auditing
from memlineage.meaning.policy import (
    VersionedTrust,
    describe_temporal,
    describe_trust,
    versioned_json,
)
from memlineage.model import TRUST_LEVELS
from memlineage.store.protocol import trust_change_json


@command("erase", "memlineage erase m-2 --reason 'GDPR request #812' --by dpo@example.com")
@click.argument("event_id", metavar="ID")
@click.option("--reason", required=True, help="why (kept with the erasure)")
@click.option("--by", "by", default=None, help="who asked (default: the current user)")
def erase(event_id: str, reason: str, by: str | None) -> Report:
    """Erase an event's content everywhere it was copied; its id, seq and hash stay."""
    with memory() as mem:
        result = mem.erase(event_id, reason, by or getpass.getuser())
    if not result.changed:
        return Report(result.to_json(), f"{event_id} was erased already")
    text = f"erased {event_id} in {result.subject}: epoch {result.epoch}"
    if result.stale:
        text += f"; stale: {', '.join(result.stale)} (a rebuild is queued)"
    if result.scrubbed:
        text += f"; scrubbed: {', '.join(result.scrubbed)}"
    return Report(result.to_json(), text)


@command("dismiss", "memlineage dismiss conflict:user-7:000001 --reason 'both still true'")
@click.argument("conflict_id", metavar="CONFLICT")
@click.option("--reason", help="why, kept with the operation")
def dismiss(conflict_id: str, reason: str | None) -> Report:
    """Take back a conflict (detected or declared): both sides count again."""
    with memory() as mem:
        result = mem.dismiss(conflict_id, reason)
    return Report(result.to_json(), op_text(f"dismissed {conflict_id}", result))


@command("detect", "memlineage detect user-7 --json")
@click.argument("subject")
def detect(subject: str) -> Report:
    """Run the contradiction detection job of a subject now (`add` runs it unless deferred)."""
    with memory() as mem:
        result = mem.detect(subject)
    doc = result.to_json()
    lines = [f"{result.subject}: checked through seq {result.detected_through}"]
    lines += [
        f"{c.conflict_id}: {c.a} vs {c.b} on {c.key} ({c.rule}); {c.resolution}"
        for c in result.conflicts
    ]
    return Report(doc, "\n".join(lines))


@root.group("policy", epilog="Example: memlineage policy temporal fact=latest-wins")
def policy() -> None:
    """Show or change the tenant's temporal and trust policies (versioned)."""


def _policy_command(name: str, example: str) -> Callable[[Callable[..., Report]], Any]:
    def register(func: Callable[..., Report]) -> Any:
        wrapped = global_options(reporting(func))
        return policy.command(name, epilog=f"Example: {example}")(wrapped)

    return register


def _show(doc: dict[str, Any]) -> str:
    temporal = doc["temporal"]
    rules = ", ".join(f"{k}={v}" for k, v in temporal["rules"].items())
    trust = VersionedTrust.from_json(doc["trust"]["version"], doc["trust"])
    return (
        f"temporal v{temporal['version']}: {rules or 'no per-kind rule'};"
        f" others={temporal['default']}\n{describe_trust(trust)}"
    )


@_policy_command("show", "memlineage policy show --json")
def show() -> Report:
    """The current temporal and trust policies."""
    with memory() as mem:
        doc = mem.policy()
    return Report(doc, _show(doc))


@_policy_command("history", "memlineage policy history")
def history() -> Report:
    """Every stored policy version (version 1 of each is the built-in default)."""
    with memory() as mem:
        versions = mem.policy_history()
    doc = [v.to_json() for v in versions]
    text = "\n".join(
        f"{v.name} v{v.version} at {v.recorded_at}: {v.body}"
        + (f" ({v.reason})" if v.reason else "")
        for v in versions
    )
    return Report(doc, text or "only the built-in defaults (version 1)")


@_policy_command("temporal", "memlineage policy temporal fact=latest-wins '*=keep'")
@click.argument("rules", nargs=-1, required=True, metavar="KIND=RULE...")
@click.option("--reason", help="why, kept with the version")
def temporal(rules: tuple[str, ...], reason: str | None) -> Report:
    """A new temporal policy version: keep or latest-wins per kind (* = the default)."""
    with memory() as mem:
        stored = mem.set_temporal_policy(rules, reason)
    doc = versioned_json(stored)
    return Report(doc, describe_temporal(stored) + " (applies to conflicts detected from now)")


@_policy_command("trust", "memlineage policy trust --admit user --admit tool --block injection")
@click.option("--admit", multiple=True, type=click.Choice(TRUST_LEVELS), help="admitted level")
@click.option("--block", multiple=True, help="a taint label that quarantines (repeatable)")
@click.option("--block-any-taint", is_flag=True, help="any taint label quarantines (default)")
@click.option("--batch", type=click.IntRange(min=1), default=100, help="subjects per batch")
@click.option("--reason", help="why, kept with the version")
def trust(
    admit: tuple[str, ...],
    block: tuple[str, ...],
    block_any_taint: bool,
    batch: int,
    reason: str | None,
) -> Report:
    """A new trust policy version, applied to every subject in bounded batches."""
    with memory() as mem, progress_bars() as progress:
        stored, rounds = mem.set_trust_policy(
            list(admit) or None,
            list(block) if block else None,
            block_any=block_any_taint,
            reason=reason,
            batch=batch,
            progress=progress,
        )
    affected = [a for r in rounds for a in r.affected]
    doc = trust_change_json(stored, rounds)
    text = (
        f"{describe_trust(stored)}; {sum(len(r.applied) for r in rounds)} subject(s) updated,"
        f" {len(affected)} affected"
    )
    stale = [s for a in affected for s in a.stale]
    if stale:
        text += f"; stale: {', '.join(stale)} (a rebuild is queued)"
    return Report(doc, text)


@command("audit", "memlineage audit user-7 --json")
@click.argument("subject")
def audit(subject: str) -> Report:
    """Artifacts with status history, alias history, operations; manifests re-verified."""
    with memory() as mem:
        report = mem.audit(subject)
    return Report(report.to_json(), auditing.audit_text(report), 0 if report.ok else 1)


@command("sweep", "memlineage sweep --older-than 3600")
@click.option(
    "--older-than",
    type=click.FloatRange(min=0),
    default=None,
    help="also fail candidates older than this many seconds (default: only those the"
    " switch would refuse)",
)
def sweep(older_than: float | None) -> Report:
    """Mark candidates orphaned by a crashed run failed; safe to run at any time."""
    with memory() as mem:
        swept = mem.sweep(older_than)
    doc = {"failed": [s.to_json() for s in swept]}
    text = "\n".join(f"{s.artifact_id}: failed ({s.reason})" for s in swept)
    return Report(doc, text or "nothing to sweep")


@command("optimize", "memlineage optimize")
def optimize() -> Report:
    """After a bulk load: merge SQLite's full-text index, refresh the planner's statistics."""
    with memory() as mem:
        done = mem.optimize()
    return Report({"done": done}, "\n".join(done))
