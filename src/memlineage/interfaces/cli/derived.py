"""Derived-layer commands: consolidate, recall, artifacts."""

from __future__ import annotations

from typing import Any

import click

from memlineage.consolidation.consolidate import Consolidation, Consolidations
from memlineage.errors import NotFound
from memlineage.interfaces.cli.app import Report, command, memory
from memlineage.interfaces.cli.generate import generator_options
from memlineage.interfaces.cli.progress import progress_bars
from memlineage.recall.prompt import FORMATS, render
from memlineage.recall.results import Recall, RecallSet


@command(
    "consolidate",
    "memlineage consolidate user-7 user-8 --json   (or: memlineage consolidate --all --force)",
)
@click.argument("subjects", nargs=-1, metavar="[SUBJECT]...")
@click.option("--all", "every", is_flag=True, help="every subject of the tenant")
@click.option("--force", is_flag=True, help="build a new artifact even if up to date")
@click.option(
    "--budget",
    type=click.IntRange(min=1),
    default=None,
    help="token budget of the rendered summary for this run (default: the tenant's)",
)
@generator_options
def consolidate(
    subjects: tuple[str, ...],
    every: bool,
    force: bool,
    budget: int | None,
    generator_name: str | None,
    base_url: str | None,
    model: str | None,
    config_path: str | None,
) -> Report:
    """Consolidate subjects: generate, gate, and switch each one whose gate passes.

    One SUBJECT prints its result; several, or --all (every subject of the
    tenant), print one line each and the counts (--json: one document with
    "subjects", "switched" and "failed"). Every subject is checked before the
    first is consolidated. Exit 1 when any gate failed.
    """
    if every == bool(subjects):
        raise click.UsageError("name SUBJECT... or give --all, not both")
    with memory(create=False) as mem:  # nothing to consolidate in a database not there
        generator = None  # the tenant's stored configuration, unless a flag asks for a one-off
        if any(v is not None for v in (generator_name, base_url, model, config_path)):
            generator = mem.generator(
                generator_name, base_url=base_url, model=model, config=config_path
            )
        if len(subjects) == 1:
            result = mem.consolidate(subjects[0], generator, force=force, budget=budget)
            return Report(_document(result), _line(result), _code(result.artifact.gate.passed))
        with progress_bars() as progress:
            chosen = None if every else subjects
            batch = mem.consolidate_many(
                chosen, generator, force=force, budget=budget, progress=progress
            )
    return _several(batch)


def _document(result: Consolidation) -> dict[str, Any]:
    manifest = result.artifact.manifest
    return {**result.to_json(), "fallback": manifest.fallback, "attempts": list(manifest.attempts)}


def _line(result: Consolidation) -> str:
    text = f"{result.artifact.id}: {result.status}, switched={result.switched}"
    return text + (f" ({result.reason})" if result.reason else "")


def _code(passed: bool) -> int:
    return 0 if passed else 1


def _several(batch: Consolidations) -> Report:
    doc = {
        "subjects": [{"subject": r.artifact.subject, **_document(r)} for r in batch.results],
        "switched": batch.switched,
        "failed": batch.failed,
    }
    lines = [_line(r) for r in batch.results]
    lines.append(
        f"{len(batch.results)} subject(s): {batch.switched} switched, {batch.failed} gate(s) failed"
    )
    return Report(doc, "\n".join(lines), _code(batch.failed == 0))


@command(
    "recall",
    "memlineage recall user-7 --query 'email schedule' --budget 500 --format markdown",
)
@click.argument("subjects", nargs=-1, required=True, metavar="SUBJECT...")
@click.option("--query", default=None, help="rank what is recalled by relevance to this text")
@click.option(
    "--budget",
    type=click.IntRange(min=0),
    default=None,
    help="token budget of the rendered context (shared by all subjects); must-keep is never cut",
)
@click.option(
    "--format",
    "format_",
    type=click.Choice(FORMATS),
    default=None,
    help="print the context an agent pastes into its prompt, in this format",
)
def recall(
    subjects: tuple[str, ...], query: str | None, budget: int | None, format_: str | None
) -> Report:
    """What an agent should know about one or more subjects, by query and within a budget.

    Without --query or --budget: the fresh summary plus the raw tail, or the raw
    events. With them: the must-keep part (constraints, open items, both sides of
    unresolved conflicts) first, then the rest ranked by relevance until the
    budget. Several subjects share the budget. --json prints one document.
    """
    with memory(create=False) as mem:
        for subject in subjects:  # refused as consolidate refuses it: exit 2, nothing printed
            if not mem.has_subject(subject):
                raise NotFound(f"no events for subject {subject!r}", field="subject")
        if len(subjects) == 1:
            recalled: Recall | RecallSet = mem.recall(subjects[0], query, budget)
        else:
            recalled = mem.recall(query=query, budget=budget, subjects=list(subjects))
    if format_ is not None or query is not None or budget is not None:
        text = render(recalled, format_ or "text").rstrip("\n")
    else:
        assert isinstance(recalled, Recall)
        text = _plain(recalled)
    return Report(recalled.to_json(), text)


def _plain(recalled: Recall) -> str:
    """Today's listing: the rendered summary and the cold count, the tail, or raw events."""
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
    return "\n".join(lines)


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
