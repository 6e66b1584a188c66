"""``demo``: the guided tour on a fresh SQLite file."""

from __future__ import annotations

import click

from memlineage.interfaces import demo as tour
from memlineage.interfaces.cli.app import Report, command, settings


@command("demo", "memlineage demo")
@click.option(
    "--keep", "keep", help="run on this SQLite file and keep it (default: a temporary one)"
)
def demo(keep: str | None) -> Report:
    """Ingest a realistic stream, consolidate, query, revoke, rebuild and evaluate, in seconds."""
    lines: list[str] = []
    quiet = settings().json
    seen = tour.run(keep, say=lines.append if quiet else click.echo)
    return Report(seen, "" if not quiet else "\n".join(lines))
