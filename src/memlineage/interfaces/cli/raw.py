"""Raw-layer commands: add, revoke, trust, conflict, resolve, and extract (no store)."""

from __future__ import annotations

import sys

import click

from memlineage.api import must_preserve
from memlineage.errors import BadInput
from memlineage.interfaces.cli.app import Report, command, memory
from memlineage.interfaces.cli.progress import progress_bars
from memlineage.model import TRUST_LEVELS
from memlineage.progress import Progress
from memlineage.raw.ingest import parse_jsonl, parse_jsonl_numbered, read_stream, split_lines
from memlineage.store.protocol import OpResult


def read_lines(path: str, progress: Progress | None = None) -> list[str]:
    """The lines of a JSONL file or of stdin (``-``), split on ``\\n`` only.

    Read as bytes and decoded strictly, so non-UTF-8 input is bad input
    naming its line, and U+2028, U+2029 or U+0085 inside a JSON string do
    not split a line. ``progress`` counts the lines of stdin as they arrive
    (a file is read at once).
    """
    if path == "-":
        return split_lines(_read_stdin(progress), "stdin")
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}", field="file") from None
    return split_lines(data, path)


STDIN_HINT = (
    "memlineage: reading events from stdin, one JSON object a line; end with Ctrl-D"
    " (or give a FILE: memlineage add events.jsonl)"
)


def _read_stdin(progress: Progress | None) -> bytes:
    # sys.stdin is None when the process started with descriptor 0 closed (``<&-``).
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise BadInput("stdin is closed; give a FILE or pipe events in", field="file")
    typing = stream.isatty()
    if typing:  # a person at a terminal who gave no FILE: say what is awaited, not hang silently
        print(STDIN_HINT, file=sys.stderr)
    watched = None if typing else progress  # no bar over what a person types
    try:
        data = read_stream(stream, watched)
    except OSError as exc:
        raise BadInput(f"cannot read stdin: {exc.strerror}", field="file") from None
    return data


def op_text(verb: str, result: OpResult) -> str:
    text = f"{verb} in {result.subject}: epoch {result.epoch}"
    if not result.changed:
        text = f"nothing to do: {verb} already in effect in {result.subject}"
    if result.stale:
        text += f"; stale: {', '.join(result.stale)}"
    return text


FILE = click.argument("file", default="-", required=False)


@command("add", "memlineage add events.jsonl   (or: cat events.jsonl | memlineage add -)")
@FILE
def add(file: str) -> Report:
    """Append events, one JSON object a line (id, subject and text required)."""
    with progress_bars() as progress:
        # Every line is validated before the store opens: bad input creates no database either.
        events, lines = parse_jsonl_numbered(read_lines(file, progress), progress)
        with memory() as mem:
            appended = mem.add(events, lines=lines, progress=progress)  # errors name the line
    created = sum(a.created for a in appended)
    doc = {
        "appended": created,
        "existing": len(appended) - created,
        "events": [a.__dict__ for a in appended],
    }
    return Report(doc, f"appended {created} event(s), {len(appended) - created} already stored")


@command("revoke", "memlineage revoke m-2 --reason 'user withdrew it'")
@click.argument("event_id", metavar="ID")
@click.option("--reason", help="why, kept with the operation")
def revoke(event_id: str, reason: str | None) -> Report:
    """Revoke (undo) an event; every summary derived from it goes stale at once."""
    with memory() as mem:
        result = mem.revoke(event_id, reason=reason)
    return Report(result.to_json(), op_text(f"revoked {event_id}", result))


@command("trust", "memlineage trust m-4 --level tool --taint web")
@click.argument("event_id", metavar="ID")
@click.option("--level", type=click.Choice(TRUST_LEVELS), help="the event's trust level")
@click.option("--taint", multiple=True, help="a taint label (repeatable)")
@click.option("--clear-taint", is_flag=True, help="remove every taint label")
def trust(event_id: str, level: str | None, taint: tuple[str, ...], clear_taint: bool) -> Report:
    """Change an event's trust level or taint labels."""
    labels: list[str] | None = [] if clear_taint else (list(taint) or None)
    with memory() as mem:
        result = mem.trust(event_id, level=level, taint=labels)
    return Report(result.to_json(), op_text(f"trust of {event_id} changed", result))


@command("conflict", "memlineage conflict m-3 m-4 --key preference:music")
@click.argument("a")
@click.argument("b")
@click.option("--key", help="what the two events disagree about")
def conflict(a: str, b: str, key: str | None) -> Report:
    """Declare that two events of one subject contradict each other."""
    with memory() as mem:
        result = mem.conflict(a, b, key=key)
    verb = "declared" if result.changed else "already declared:"
    return Report(result.to_json(), f"{verb} {result.conflict_id}")


@command("resolve", "memlineage resolve conflict:user-7:000001 --winner m-4")
@click.argument("conflict_id", metavar="CONFLICT")
@click.option("--winner", required=True, help="the event that stays valid")
def resolve(conflict_id: str, winner: str) -> Report:
    """Resolve a conflict for one side; the other side becomes invalid."""
    with memory() as mem:
        result = mem.resolve(conflict_id, winner=winner)
    return Report(result.to_json(), op_text(f"resolved {conflict_id} for {winner}", result))


@command("extract", "memlineage extract events.jsonl --json")
@FILE
def extract_items(file: str) -> Report:
    """Print the must-preserve items of events (nothing is stored)."""
    items = must_preserve(parse_jsonl(read_lines(file)))  # no store: nothing is created
    doc = {"items": [i.to_json() for i in items]}
    text = "\n".join(
        f"{i.source}  {i.kind:<11} {i.key} = {i.value}{' ' + i.unit if i.unit else ''}"
        f"{'' if i.polarity else '  (negated)'}"
        for i in items
    )
    return Report(doc, text or "no must-preserve items")
