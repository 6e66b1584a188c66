"""Raw-layer commands: add, add-messages, revoke, trust, conflict, resolve, extract (no store)."""

from __future__ import annotations

import sys
from typing import Any

import click

from memlineage.api import must_preserve
from memlineage.errors import BadInput, NotFound, StoreError
from memlineage.interfaces.cli.app import Report, command, memory
from memlineage.interfaces.cli.progress import progress_bars
from memlineage.model import TRUST_LEVELS, EventState
from memlineage.progress import Progress
from memlineage.raw.ingest import (
    load_json,
    load_jsonl,
    parse_jsonl,
    parse_jsonl_numbered,
    read_stream,
    split_lines,
)
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


def _no_database_yet() -> bool:
    try:
        memory(create=False).close()
    except StoreError:
        return True
    return False


@command("add", "memlineage add events.jsonl   (or: cat events.jsonl | memlineage add -)")
@FILE
@click.option(
    "--defer-detection",
    is_flag=True,
    help="return after the append; leave contradiction detection to a worker or the next"
    " consolidate, detect or sweep",
)
def add(file: str, defer_detection: bool) -> Report:
    """Append events, one JSON object a line (id, subject and text required), then detect
    the contradictions they make (a one-shot command has no worker to leave that to)."""
    with progress_bars() as progress:
        # Every line is validated before the store opens: bad input creates no database either.
        events, lines = parse_jsonl_numbered(read_lines(file, progress), progress)
        created_here = _no_database_yet()
        mem = memory(detect_after_add=not defer_detection)
        try:
            appended = mem.add(events, lines=lines, progress=progress)  # errors name the line
        except BadInput:
            # Checks that need the store (supersedes targets, say) ran after it opened:
            # a database this refused add created goes again, so it leaves no trace.
            if created_here:
                mem.store.discard()
            raise
        finally:
            mem.close()
    created = sum(a.created for a in appended)
    doc = {
        "appended": created,
        "existing": len(appended) - created,
        "events": [a.__dict__ for a in appended],
    }
    return Report(doc, f"appended {created} event(s), {len(appended) - created} already stored")


@command(
    "add-messages",
    "memlineage add-messages user-7 chat.json --thread t-42   (or: ... | add-messages user-7 -)",
)
@click.argument("subject")
@FILE
@click.option("--thread", help="the conversation; part of the derived ids")
@click.option("--at", help="RFC 3339 time of the messages without their own `at`")
def add_messages(subject: str, file: str, thread: str | None, at: str | None) -> Report:
    """Append chat messages ([{role, content, name}], a JSON array or one per line) as events."""
    messages, lines = load_messages(read_lines(file))
    with memory() as mem:
        appended = mem.add_messages(subject, messages, thread=thread, at=at, lines=lines)
    created = sum(a.created for a in appended)
    doc = {
        "appended": created,
        "existing": len(appended) - created,
        "skipped": len(messages) - len(appended),
        "events": [a.__dict__ for a in appended],
    }
    text = f"appended {created} message(s), {len(appended) - created} already stored"
    if doc["skipped"]:
        text += f", {doc['skipped']} system message(s) skipped"
    return Report(doc, text)


def load_messages(lines: list[str]) -> tuple[list[Any], list[int] | None]:
    """A JSON array of messages (no line numbers), else JSON Lines (one message a line)."""
    if "".join(lines).lstrip(" \t\r").startswith("["):
        messages = load_json("\n".join(lines))
        if not isinstance(messages, list):  # a stray "[" after the array, say
            raise BadInput("must be one JSON array of messages", field="messages")
        return messages, None
    return load_jsonl(lines)


@command("events", "memlineage events user-7   (after: memlineage conflict m-3 m-4)")
@click.argument("subject")
def events(subject: str) -> Report:
    """List a subject's events with their state (valid, revoked, superseded, lost-conflict,
    retired, quarantined, erased) and why."""
    with memory(create=False) as mem:
        found = mem.events(subject)
    if not found:
        raise NotFound(f"no subject {subject!r}: it has no events", field="subject")
    doc = {"subject": subject, "events": [e.to_json() for e in found]}
    return Report(doc, "\n".join(event_line(e) for e in found))


def event_line(event: EventState) -> str:
    """``m-3  retired  I like jazz.  (why)``: the text shortened to one line of 60."""
    text = " ".join(event.text.split())
    text = text if len(text) <= 60 else text[:59] + "…"
    why = f"  ({event.why})" if event.why else ""
    return f"{event.id}  {event.state:<13} {text}{why}"


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
