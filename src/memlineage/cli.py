"""The ``memlineage`` command line: the library's operations, one subcommand each.

Every reporting command takes ``--json`` and then prints exactly one JSON
document on stdout. Exit codes: 0 success, 1 a check failed, 2 bad input or
usage, with a one-line message on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from . import extract
from .api import Memory
from .errors import BadInput, MemlineageError
from .ingest import parse_jsonl, utc_now
from .model import Event
from .store import default_url

Handler = Callable[[argparse.Namespace], tuple[Any, str, int]]


def _read_lines(path: str) -> list[str]:
    if path == "-":
        return sys.stdin.read().splitlines()
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().splitlines()
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}", field="file") from exc
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path} is not UTF-8: {exc.reason}", field="file") from exc


def _memory(args: argparse.Namespace) -> Memory:
    return Memory(args.db, tenant=args.tenant)


def cmd_add(args: argparse.Namespace) -> tuple[Any, str, int]:
    events = parse_jsonl(_read_lines(args.file))  # all lines validated before any write
    with _memory(args) as memory:
        appended = memory.add(events)
    created = sum(a.created for a in appended)
    doc = {
        "appended": created,
        "existing": len(appended) - created,
        "events": [a.__dict__ for a in appended],
    }
    return doc, f"appended {created} event(s), {len(appended) - created} already stored", 0


def _op_doc(result: Any) -> dict[str, Any]:
    return {
        "subject": result.subject,
        "epoch": result.epoch,
        "changed": result.changed,
        "conflict_id": result.conflict_id,
        "stale": list(result.stale),
    }


def _op_text(verb: str, result: Any) -> str:
    text = f"{verb} in {result.subject}: epoch {result.epoch}"
    if not result.changed:
        text = f"nothing to do: {verb} already in effect in {result.subject}"
    if result.stale:
        text += f"; stale: {', '.join(result.stale)}"
    return text


def cmd_revoke(args: argparse.Namespace) -> tuple[Any, str, int]:
    with _memory(args) as memory:
        result = memory.revoke(args.id, reason=args.reason)
    return _op_doc(result), _op_text(f"revoked {args.id}", result), 0


def cmd_trust(args: argparse.Namespace) -> tuple[Any, str, int]:
    taint = [] if args.clear_taint else (args.taint or None)
    with _memory(args) as memory:
        result = memory.trust(args.id, level=args.level, taint=taint)
    return _op_doc(result), _op_text(f"trust of {args.id} changed", result), 0


def cmd_conflict(args: argparse.Namespace) -> tuple[Any, str, int]:
    with _memory(args) as memory:
        result = memory.conflict(args.a, args.b, key=args.key)
    verb = "declared" if result.changed else "already declared:"
    return _op_doc(result), f"{verb} {result.conflict_id}", 0


def cmd_resolve(args: argparse.Namespace) -> tuple[Any, str, int]:
    with _memory(args) as memory:
        result = memory.resolve(args.conflict, winner=args.winner)
    return _op_doc(result), _op_text(f"resolved {args.conflict} for {args.winner}", result), 0


def cmd_recall(args: argparse.Namespace) -> tuple[Any, str, int]:
    with _memory(args) as memory:
        recalled = memory.recall(args.subject)
    doc = recalled.to_json()
    if recalled.mode == "summary":
        lines = [
            f"[summary {recalled.artifact_id}, covers seq <= {recalled.covers_through}]",
            recalled.summary or "",
        ]
        lines += [f"- {c.text or c.key}" for c in recalled.claims]
        lines += [f"[tail] {e.seq}: {e.text}" for e in recalled.tail]
    else:
        lines = [f"[raw: {recalled.reason}]"] + [f"{e.seq}: {e.text}" for e in recalled.events]
    lines += [f"[open] {item}" for item in recalled.open_items]
    lines += [f"[conflict {c.id}] {c.a} vs {c.b}" for c in recalled.conflicts]
    return doc, "\n".join(lines), 0


def cmd_artifacts(args: argparse.Namespace) -> tuple[Any, str, int]:
    with _memory(args) as memory:
        artifacts = memory.artifacts(args.subject)
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
        for a in artifacts
    ]
    text = "\n".join(
        f"{a['artifact_id']}  {a['status']:<10} covers {a['covers_through']}" for a in doc
    )
    return doc, text or "no artifacts", 0


def cmd_consolidate(args: argparse.Namespace) -> tuple[Any, str, int]:
    with _memory(args) as memory:
        result = memory.consolidate(args.subject, force=args.force)
    doc = result.to_json()
    text = f"{doc['artifact_id']}: {doc['status']}, switched={doc['switched']}"
    if doc["reason"]:
        text += f" ({doc['reason']})"
    return doc, text, 0 if result.artifact.gate.passed else 1


def cmd_extract(args: argparse.Namespace) -> tuple[Any, str, int]:
    parsed = parse_jsonl(_read_lines(args.file))
    now = utc_now()
    events = [Event.stored(e, seq, now) for seq, e in enumerate(parsed, start=1)]
    items = extract.extract_items(events)
    doc = {"items": [i.to_json() for i in items]}
    text = "\n".join(
        f"{i.source}  {i.kind:<11} {i.key} = {i.value}{' ' + i.unit if i.unit else ''}"
        f"{'' if i.polarity else '  (negated)'}"
        for i in items
    )
    return doc, text or "no must-preserve items", 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memlineage",
        description="Memory consolidation for LLM agents, with lineage and a fidelity gate.",
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--db",
        default=None,
        help=f"SQLite path or postgresql:// URL (default: $MEMLINEAGE_DB or {default_url()})",
    )
    common.add_argument("--tenant", default="default", help="isolation boundary (default: default)")
    common.add_argument("--json", action="store_true", help="print one JSON document")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: Handler, help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help_, description=help_)
        p.set_defaults(handler=handler)
        return p

    p = command("add", cmd_add, "append events, one JSON object a line")
    p.add_argument("file", nargs="?", default="-", help="JSONL file, or - for stdin")
    p = command("revoke", cmd_revoke, "revoke (undo) an event")
    p.add_argument("id")
    p.add_argument("--reason")
    p = command("trust", cmd_trust, "change an event's trust level or taint labels")
    p.add_argument("id")
    p.add_argument("--level", choices=["user", "agent", "tool", "external"])
    p.add_argument("--taint", action="append", help="a taint label (repeatable)")
    p.add_argument("--clear-taint", action="store_true", help="remove every taint label")
    p = command("conflict", cmd_conflict, "declare that two events contradict each other")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--key")
    p = command("resolve", cmd_resolve, "resolve a conflict for one side")
    p.add_argument("conflict")
    p.add_argument("--winner", required=True)
    p = command("recall", cmd_recall, "what an agent should know about a subject")
    p.add_argument("subject")
    p = command("artifacts", cmd_artifacts, "list summary artifacts and their status")
    p.add_argument("subject", nargs="?")
    p = command("consolidate", cmd_consolidate, "run one consolidation of a subject")
    p.add_argument("subject")
    p.add_argument("--force", action="store_true", help="build a new artifact even if up to date")
    p = command("extract", cmd_extract, "print the must-preserve items of events")
    p.add_argument("file", nargs="?", default="-", help="JSONL file, or - for stdin")
    return parser


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None) -> int:
    out = stdout or sys.stdout
    args = build_parser().parse_args(argv)
    try:
        doc, text, code = args.handler(args)
    except MemlineageError as exc:
        print(f"memlineage: {exc}", file=sys.stderr)
        return exc.exit_code
    if args.json:
        out.write(json.dumps(doc, ensure_ascii=False) + "\n")
    else:
        out.write(text + "\n")
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
