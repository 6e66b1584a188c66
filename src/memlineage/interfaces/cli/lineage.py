"""Lineage: ``lineage`` (PROV-JSON, dot, mermaid) and ``why``."""

from __future__ import annotations

import json

import click

from memlineage.interfaces.cli.app import Report, command, memory
from memlineage.lineage import audit
from memlineage.lineage.prov import FORMATS


@command("lineage", "memlineage lineage summary:user-7:000003-1a2b3c4d --format dot")
@click.argument("artifact_id", metavar="ARTIFACT")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="prov-json")
def lineage(artifact_id: str, fmt: str) -> Report:
    """An artifact's lineage down to raw events: W3C PROV-JSON, or a dot / mermaid picture."""
    with memory() as mem:
        result = mem.lineage(artifact_id, fmt)
    if isinstance(result, str):
        return Report({"format": fmt, "text": result}, result)
    return Report(result, json.dumps(result, ensure_ascii=False, indent=2))


@command("why", "memlineage why user-7 'budget'")
@click.argument("subject")
@click.argument("query", metavar="KEY|TEXT")
def why(subject: str, query: str) -> Report:
    """Where a claim or statement came from: its chain down to raw events, with validity."""
    with memory() as mem:
        result = mem.why(subject, query)
    return Report(result.to_json(), audit.why_text(result), 0 if result.found else 1)
