"""The versioned prompt: templates in ``generators/prompts/``, filled with one request.

``consolidate-v2`` is four files: the system rules, the user message (the
request as one JSON document between ``<input>`` tags), the repair message
(the gate's failures between ``<failures>`` tags) and the JSON schema of the
answer. A change of wording is a new version: a manifest's ``promptVersion``
names exactly the text the model saw. Templates use :class:`string.Template`
(``$name``), so the JSON braces inside them need no escaping.

Pure: no I/O beyond reading the package's own files once.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from string import Template
from typing import Any

from memlineage.consolidation.gate import CONFLICT_KIND
from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.generators.chat import Repair
from memlineage.model import Conflict, Event, GateFailure, Item, Output

PROMPT_VERSION = "consolidate-v2"


@functools.cache
def template(name: str, version: str = PROMPT_VERSION) -> str:
    """The text of ``prompts/<version>.<name>`` shipped with the package."""
    return (resources.files(__package__) / "prompts" / f"{version}.{name}").read_text("utf-8")


@functools.cache
def output_schema(version: str = PROMPT_VERSION) -> dict[str, Any]:
    """The JSON schema of an answer, for servers that take structured output."""
    schema: dict[str, Any] = json.loads(template("schema.json", version))
    return schema


def event_json(event: Event) -> dict[str, Any]:
    """What the model sees of an event: no hash, seq or trust, which it has no use for."""
    doc: dict[str, Any] = {"id": event.id, "at": event.at, "text": event.text}
    if event.kind:
        doc["kind"] = event.kind
    if event.project:
        doc["project"] = event.project
    if event.facts:
        doc["facts"] = [f.to_json() for f in event.facts]
    return doc


def item_json(item: Item, contested: str | None = None) -> dict[str, Any]:
    """An item as the model sees it; one from a side of ``contested`` is of kind 'conflict'.

    The gate wants every claim deriving from a side to be of kind 'conflict': an
    item shown with the kind its claim must have can be copied as given.
    """
    doc = {**item.to_json(), "clause": item.clause}
    if contested is not None and item.kind != CONFLICT_KIND:
        doc["kind"] = CONFLICT_KIND
        doc["contested"] = contested
    return doc


def sides(conflicts: Iterable[Conflict]) -> dict[str, str]:
    """Per event that is a side of an unresolved conflict, the (first) conflict's id."""
    found: dict[str, str] = {}
    for conflict in sorted((c for c in conflicts if not c.resolved), key=lambda c: c.id):
        found.setdefault(conflict.a, conflict.id)
        found.setdefault(conflict.b, conflict.id)
    return found


def conflict_json(conflict: Conflict) -> dict[str, Any]:
    return {"id": conflict.id, "a": conflict.a, "b": conflict.b, "key": conflict.key}


def input_document(request: GenerationRequest) -> dict[str, Any]:
    """The request as the JSON document the user message carries."""
    side = sides(request.conflicts)
    return {
        "events": [event_json(e) for e in request.events],
        "mustPreserve": [item_json(i, side.get(i.source)) for i in request.items],
        "openItems": list(request.open_items),
        "unresolvedConflicts": [conflict_json(c) for c in request.conflicts if not c.resolved],
        "previousOutput": request.parent.to_json() if request.parent is not None else None,
        "budget": request.budget,
    }


def dumps(doc: Any) -> str:
    """Compact JSON, non-ASCII kept: the model reads the words as the user wrote them.

    ``<`` is escaped (still the same JSON string) so an event's text can never
    close the ``<input>`` or ``<failures>`` tags around the document.
    """
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def messages(request: GenerationRequest, version: str = PROMPT_VERSION) -> list[dict[str, str]]:
    """The chat messages of a first request."""
    user = Template(template("user.txt", version)).substitute(
        subject=request.subject, input=dumps(input_document(request))
    )
    return [
        {"role": "system", "content": template("system.txt", version)},
        {"role": "user", "content": user},
    ]


def repair_messages(
    request: GenerationRequest, repair: Repair, version: str = PROMPT_VERSION
) -> list[dict[str, str]]:
    """The first request, the rejected answer, and the failures with what they name."""
    failures = Template(template("repair.txt", version)).substitute(
        failures=dumps(repair.to_json())
    )
    return [
        *messages(request, version),
        {"role": "assistant", "content": repair.previous_text},
        {"role": "user", "content": failures},
    ]


def named_by(
    failures: Sequence[GateFailure], request: GenerationRequest, output: Output | None
) -> tuple[dict[str, Any], ...]:
    """The must-preserve items, claims, events and conflicts the failures name, once each.

    A failure names an item id, a claim key, a conflict id or an event id (see
    docs/gate.md); a parser failure names a field path, which names nothing here.
    """
    items = {i.id: i for i in request.items}
    side = sides(request.conflicts)
    events = {e.id: e for e in request.events}
    conflicts = {c.id: c for c in request.conflicts}
    claims: dict[str, list[Any]] = {}
    for claim in output.claims if output is not None else ():
        claims.setdefault(claim.key, []).append(claim)
    named: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(f.item for f in failures):
        found = _lookup(name, items, events, conflicts, claims, side)
        if found is not None:
            named[name] = found
    return tuple(named.values())


def _lookup(
    name: str,
    items: Mapping[str, Item],
    events: Mapping[str, Event],
    conflicts: Mapping[str, Conflict],
    claims: Mapping[str, Iterable[Any]],
    side: Mapping[str, str],
) -> dict[str, Any] | None:
    if name in items:
        return {"mustPreserve": item_json(items[name], side.get(items[name].source))}
    if name in conflicts:
        return {"conflict": conflict_json(conflicts[name])}
    if name in events:
        return {"event": event_json(events[name])}
    if name in claims:
        return {"claims": [c.to_json() for c in claims[name]]}
    return None
