"""Derived-layer commands: consolidate, recall, artifacts."""

from __future__ import annotations

import click

from .app import Report, command, memory


@command("consolidate", "memlineage consolidate user-7 --json")
@click.argument("subject")
@click.option("--force", is_flag=True, help="build a new artifact even if up to date")
@click.option(
    "--budget",
    type=click.IntRange(min=1),
    default=None,
    help="token budget of the rendered summary for this run (default: the tenant's)",
)
def consolidate(subject: str, force: bool, budget: int | None) -> Report:
    """Run one consolidation of a subject: generate, gate, and switch when it passes."""
    with memory(create=False) as mem:  # nothing to consolidate in a database not there
        result = mem.consolidate(subject, force=force, budget=budget)
    doc = result.to_json()
    text = f"{doc['artifact_id']}: {doc['status']}, switched={doc['switched']}"
    if doc["reason"]:
        text += f" ({doc['reason']})"
    return Report(doc, text, 0 if result.artifact.gate.passed else 1)


@command("recall", "memlineage recall user-7")
@click.argument("subject")
def recall(subject: str) -> Report:
    """What an agent should know about a subject: a fresh summary plus the raw tail, or raw."""
    with memory(create=False) as mem:
        recalled = mem.recall(subject)
    if recalled.mode == "summary":
        lines = [
            f"[summary {recalled.artifact_id}, covers seq <= {recalled.covers_through}]",
            recalled.summary or "",
        ]
        if recalled.cold:
            lines.append(f"[cold] {len(recalled.cold)} events left to cold retrieval")
        lines += [f"[tail] {e.seq}: {e.text}" for e in recalled.tail]
    else:
        lines = [f"[raw: {recalled.reason}]"] + [f"{e.seq}: {e.text}" for e in recalled.events]
    lines += [f"[open] {item}" for item in recalled.open_items]
    lines += [f"[conflict {c.id}] {c.a} vs {c.b}" for c in recalled.conflicts]
    return Report(recalled.to_json(), "\n".join(lines))


@command("artifacts", "memlineage artifacts user-7 --json")
@click.argument("subject", required=False)
def artifacts(subject: str | None) -> Report:
    """List summary artifacts and their status."""
    with memory(create=False) as mem:
        found = mem.artifacts(subject)
    doc = [
        {
            "artifact_id": a.id,
            "subject": a.subject,
            "status": str(a.status),
            "reason": a.reason,
            "covers_through": a.manifest.new_covers_through,
            "input_epoch": a.manifest.input_epoch,
            "gate": {"passed": a.gate.passed, "failures": [f.to_json() for f in a.gate.failures]},
            "created_at": a.created_at,
        }
        for a in found
    ]
    text = "\n".join(
        f"{a['artifact_id']}  {a['status']:<10} covers {a['covers_through']}" for a in doc
    )
    return Report(doc, text or "no artifacts")
