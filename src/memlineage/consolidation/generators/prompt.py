"""The versioned prompt: templates in ``generators/prompts/``, filled with one request.

``consolidate-v3`` is six files: the system rules, the user message (the
request as one JSON document between ``<input>`` tags), the repair message
(the gate's failures between ``<failures>`` tags), the JSON schema of the
answer, and the rule for a statement's words in each wording (``extractive``,
the default: an event's own text; ``reworded``: a tenant's opt-in), which the
system rules take in. The reworded rules are their own version,
``consolidate-v3-reworded``. A change of wording is a new version: a manifest's ``promptVersion``
names exactly the text the model saw. Templates use :class:`string.Template`
(``$name``), so the JSON braces inside them need no escaping.

Pure: no I/O beyond reading the package's own files once.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from importlib import resources
from string import Template
from typing import Any

from memlineage.consolidation.gate import CONFLICT_KIND
from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.generators.chat import Repair
from memlineage.model import Conflict, Event, Item

PROMPT_VERSION = "consolidate-v3"
#: the version a generator whose configuration asks for reworded statements sends
REWORDED_VERSION = "consolidate-v3-reworded"


def version_for(wording: str) -> str:
    """The prompt version of a wording: the reworded rules are their own text."""
    return REWORDED_VERSION if wording == "reworded" else PROMPT_VERSION


def system_text(version: str) -> str:
    """The system rules of ``version``, with the rule for a statement's words put in."""
    text = template("system.txt", version)
    if "$statements" not in text:
        return text  # versions before v3 have one rule for every wording
    wording = "reworded" if version.endswith("-reworded") else "extractive"
    rule = template(f"statements-{wording}.txt", version)
    return Template(text).substitute(statements=rule)


@functools.cache
def template(name: str, version: str = PROMPT_VERSION) -> str:
    """The text of ``prompts/<version>.<name>`` shipped with the package."""
    base = version.removesuffix("-reworded")  # one set of files serves both wordings
    return (resources.files(__package__) / "prompts" / f"{base}.{name}").read_text("utf-8")


@functools.cache
def output_schema(version: str = PROMPT_VERSION) -> dict[str, Any]:
    """The JSON schema of an answer, for servers that take structured output."""
    schema: dict[str, Any] = json.loads(template("schema.json", version))
    return schema


def event_json(event: Event) -> dict[str, Any]:
    """What the model sees of an event: no hash, seq or trust, which it has no use for."""
    doc: dict[str, Any] = {"id": event.id, "at": event.at, "text": event.text}
    if event.speaker:  # a faithful summary of a chat says who said what
        doc["speaker"] = event.speaker
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


def messages(request: GenerationRequest, version: str | None = None) -> list[dict[str, str]]:
    """The chat messages of a first request (by default the version of its wording)."""
    version = version or version_for(request.wording)
    user = Template(template("user.txt", version)).substitute(
        subject=request.subject, input=dumps(input_document(request))
    )
    return [
        {"role": "system", "content": system_text(version)},
        {"role": "user", "content": user},
    ]


def repair_messages(
    request: GenerationRequest, repair: Repair, version: str | None = None
) -> list[dict[str, str]]:
    """The first request, the rejected answer, and the failures with what they name."""
    version = version or version_for(request.wording)
    failures = Template(template("repair.txt", version)).substitute(
        failures=dumps(repair.to_json())
    )
    return [
        *messages(request, version),
        {"role": "assistant", "content": repair.previous_text},
        {"role": "user", "content": failures},
    ]
