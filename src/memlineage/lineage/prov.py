"""Lineage of an artifact as W3C PROV (PROV-JSON), and as a picture (dot, mermaid). Pure.

PROV-JSON is emitted directly as a dict (building it through the ``prov``
package measured about 30x slower, and its 3.0 release changed its API); the
tests parse the export with ``prov`` to prove it valid.

- entities: raw events (``ml:event/ID``), artifacts (``ml:artifact/ID``), and
  each artifact's claims and statements (``ml:claim/ID/N``, ``ml:statement/ID/N``);
- activities: one consolidation per artifact (``ml:consolidation/ID``), and the
  raw-layer operations that invalidated something (``ml:operation/SUBJECT/N``);
- ``used`` (a consolidation read an event or a parent artifact),
  ``wasGeneratedBy`` (an artifact, its claims and statements),
  ``wasDerivedFrom`` (a claim or statement from the events it cites),
  ``wasRevisionOf`` (an incremental artifact of its parent, a replacement event of
  the event it supersedes; PROV-JSON writes it as ``wasDerivedFrom`` with
  ``prov:type`` ``prov:Revision``), and ``wasInvalidatedBy`` (a stale artifact, an
  invalid event, by the operation that did it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from memlineage.errors import NotFound
from memlineage.model import Artifact, ArtifactStatus, Event, Operation, OpKind
from memlineage.raw.validity import source_state
from memlineage.store.protocol import SubjectHistory

NAMESPACE = "https://memlineage.dev/ns/prov#"
FORMATS = ("prov-json", "dot", "mermaid")
_INVALIDATING = (OpKind.REVOKE, OpKind.REPLACE, OpKind.RESOLVE, OpKind.ERASE, OpKind.TRUST,
                 OpKind.POLICY)  # fmt: skip


def _local(value: str) -> str:
    """A PROV qualified name's local part: the id, percent-encoded beyond the safe set."""
    return quote(value, safe="-._~")


def event_ref(event_id: str) -> str:
    return f"ml:event/{_local(event_id)}"


def artifact_ref(artifact_id: str) -> str:
    return f"ml:artifact/{_local(artifact_id)}"


def consolidation_ref(artifact_id: str) -> str:
    return f"ml:consolidation/{_local(artifact_id)}"


def operation_ref(subject: str, op_seq: int) -> str:
    return f"ml:operation/{_local(subject)}/{op_seq}"


@dataclass
class _Graph:
    """The PROV records being gathered; each relation gets a blank-node id."""

    entity: dict[str, dict[str, Any]] = field(default_factory=dict)
    activity: dict[str, dict[str, Any]] = field(default_factory=dict)
    relations: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    counter: int = 0

    def relate(self, kind: str, record: dict[str, Any]) -> None:
        self.counter += 1
        self.relations.setdefault(kind, {})[f"_:{kind}{self.counter}"] = record

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"prefix": {"ml": NAMESPACE}}
        if self.entity:
            doc["entity"] = self.entity
        if self.activity:
            doc["activity"] = self.activity
        doc.update(self.relations)
        return doc


def ancestry(history: SubjectHistory, artifact_id: str) -> tuple[list[Artifact], list[Event]]:
    """The artifact, its ancestor artifacts and every raw event under them."""
    artifacts = {a.id: a for a in history.artifacts}
    if artifact_id not in artifacts:
        raise NotFound(f"no artifact {artifact_id!r}", field="artifact")
    parents: dict[str, list[str]] = {}
    for parent, child in history.edges:
        parents.setdefault(child, []).append(parent)
    seen = {artifact_id}
    todo = [artifact_id]
    while todo:
        for parent in parents.get(todo.pop(), ()):
            if parent not in seen:
                seen.add(parent)
                todo.append(parent)
    for artifact_id_ in list(seen):  # a manifest names its inputs even without edges
        if artifact_id_ in artifacts:
            seen.update(artifacts[artifact_id_].manifest.input_ids)
    chain = [artifacts[i] for i in sorted(seen) if i in artifacts]
    events = [e for e in history.events if e.id in seen]
    return chain, events


def to_prov(history: SubjectHistory, artifact_id: str) -> dict[str, Any]:
    """PROV-JSON of one artifact's lineage down to raw events."""
    chain, events = ancestry(history, artifact_id)
    state = source_state(history.events, history.operations)
    graph = _Graph()
    by_id = {e.id: e for e in events}
    for event in events:
        graph.entity[event_ref(event.id)] = {
            "prov:type": "ml:Event",
            "prov:label": event.id,
            "ml:subject": event.subject,
            "ml:seq": event.seq,
            "ml:text": event.text,
            "ml:at": event.at or "",
            "ml:hash": event.hash,
            "ml:validity": state.invalid.get(event.id, "valid"),
        }
        if event.supersedes and event.supersedes in by_id:
            graph.relate(
                "wasDerivedFrom", _revision(event_ref(event.id), event_ref(event.supersedes))
            )
    for artifact in chain:
        _add_artifact(graph, artifact)
    _add_invalidations(graph, history, chain, events)
    return graph.to_json()


def _revision(newer: str, older: str) -> dict[str, Any]:
    return {"prov:generatedEntity": newer, "prov:usedEntity": older, "prov:type": "prov:Revision"}


def _add_artifact(graph: _Graph, artifact: Artifact) -> None:
    manifest = artifact.manifest
    ref = artifact_ref(artifact.id)
    run = consolidation_ref(artifact.id)
    graph.entity[ref] = {
        "prov:type": "ml:Artifact",
        "prov:label": artifact.id,
        "ml:status": str(artifact.status),
        "ml:coversThrough": manifest.new_covers_through,
        "ml:inputEpoch": manifest.input_epoch,
        "ml:inputRoot": manifest.input_root,
    }
    graph.activity[run] = {
        "prov:type": "ml:Consolidation",
        "ml:selectorVersion": manifest.selector_version,
        "ml:promptVersion": manifest.prompt_version,
        "ml:modelSnapshot": manifest.model_snapshot,
    }
    if artifact.created_at:
        graph.activity[run]["prov:endTime"] = artifact.created_at
    graph.relate("wasGeneratedBy", {"prov:entity": ref, "prov:activity": run})
    for input_id in manifest.input_ids:
        graph.relate("used", {"prov:activity": run, "prov:entity": event_ref(input_id)})
    if manifest.derived_from_artifact:
        parent = artifact_ref(manifest.derived_from_artifact)
        graph.relate("used", {"prov:activity": run, "prov:entity": parent})
        graph.relate("wasDerivedFrom", _revision(ref, parent))
    if artifact.output is None:
        return
    parts: list[tuple[str, str, dict[str, Any], Iterable[str]]] = []
    for n, claim in enumerate(artifact.output.claims, start=1):
        attrs = {"ml:key": claim.key, "ml:value": str(claim.value), "ml:text": claim.text}
        parts.append(("claim", f"ml:claim/{_local(artifact.id)}/{n}", attrs, claim.derived_from))
    for n, statement in enumerate(artifact.output.statements, start=1):
        attrs = {"ml:text": statement.text, "ml:contested": statement.contested or ""}
        ref_ = f"ml:statement/{_local(artifact.id)}/{n}"
        parts.append(("statement", ref_, attrs, statement.derived_from))
    for kind, part_ref, attrs, sources in parts:
        label = f"{kind} {part_ref.rsplit('/', 1)[1]}"
        graph.entity[part_ref] = {"prov:type": f"ml:{kind.capitalize()}", "prov:label": label,
                                  **attrs}  # fmt: skip
        graph.relate("wasGeneratedBy", {"prov:entity": part_ref, "prov:activity": run})
        for source in sources:
            graph.relate(
                "wasDerivedFrom",
                {"prov:generatedEntity": part_ref, "prov:usedEntity": event_ref(source)},
            )


def _add_invalidations(
    graph: _Graph, history: SubjectHistory, chain: list[Artifact], events: list[Event]
) -> None:
    """``wasInvalidatedBy`` for invalid events and stale artifacts, by their operation."""
    event_ids = {e.id for e in events}
    last_op: dict[str, Operation] = {}
    for op in history.operations:
        if op.kind in _INVALIDATING and op.target in event_ids:
            last_op[op.target] = op
    state = source_state(history.events, history.operations)
    for event_id, op in sorted(last_op.items()):
        if event_id in state.invalid:
            _invalidated(graph, history.subject, event_ref(event_id), op)
    for artifact in chain:
        if artifact.status is not ArtifactStatus.STALE:
            continue
        staling = _staling_operation(artifact, history.operations)
        if staling is not None:
            _invalidated(graph, history.subject, artifact_ref(artifact.id), staling)


def _invalidated(graph: _Graph, subject: str, entity: str, op: Operation) -> None:
    ref = operation_ref(subject, op.op_seq)
    graph.activity.setdefault(
        ref,
        {"prov:type": f"ml:{op.kind}", "ml:target": op.target, "ml:reason": op.reason or ""},
    )
    graph.relate("wasInvalidatedBy", {"prov:entity": entity, "prov:activity": ref})


def _staling_operation(artifact: Artifact, ops: Iterable[Operation]) -> Operation | None:
    """The operation whose epoch first passed the artifact's input epoch and invalidated."""
    for op in ops:
        if op.epoch > artifact.manifest.input_epoch and op.kind in _INVALIDATING:
            return op
    return None


# -- pictures --


def _short(text: str, limit: int = 48) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _nodes_and_edges(doc: dict[str, Any]) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    nodes: dict[str, str] = {}
    for ref, attrs in doc.get("entity", {}).items():
        label = attrs.get("prov:label") or ref.split("/", 1)[-1]
        text = attrs.get("ml:text")
        nodes[ref] = f"{label}: {_short(str(text))}" if text else str(label)
    for ref, attrs in doc.get("activity", {}).items():
        nodes[ref] = f"{attrs.get('prov:type', 'activity')} {ref.split('/', 1)[-1]}"
    edges: list[tuple[str, str, str]] = []
    ends = {
        "used": ("prov:activity", "prov:entity"),
        "wasGeneratedBy": ("prov:entity", "prov:activity"),
        "wasDerivedFrom": ("prov:generatedEntity", "prov:usedEntity"),
        "wasInvalidatedBy": ("prov:entity", "prov:activity"),
    }
    for kind, (src, dst) in ends.items():
        for record in doc.get(kind, {}).values():
            label = "wasRevisionOf" if record.get("prov:type") == "prov:Revision" else kind
            edges.append((record[src], record[dst], label))
    return nodes, edges


def to_dot(doc: dict[str, Any]) -> str:
    """Graphviz: events and claims as ellipses, artifacts as boxes, activities as diamonds."""
    nodes, edges = _nodes_and_edges(doc)
    names = {ref: f"n{i}" for i, ref in enumerate(nodes)}
    lines = ["digraph lineage {", "  rankdir=BT;"]
    for ref, label in nodes.items():
        shape = "box" if ref.startswith("ml:artifact/") else "ellipse"
        if ref in doc.get("activity", {}):
            shape = "diamond"
        lines.append(f"  {names[ref]} [shape={shape}, label={_dot_quote(label)}];")
    for src, dst, label in edges:
        if src in names and dst in names:
            lines.append(f"  {names[src]} -> {names[dst]} [label={_dot_quote(label)}];")
    lines.append("}")
    return "\n".join(lines)


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_mermaid(doc: dict[str, Any]) -> str:
    """A mermaid flowchart of the same graph."""
    nodes, edges = _nodes_and_edges(doc)
    names = {ref: f"n{i}" for i, ref in enumerate(nodes)}
    lines = ["flowchart BT"]
    for ref, label in nodes.items():
        text = label.replace('"', "#quot;")
        if ref.startswith("ml:artifact/"):
            lines.append(f'  {names[ref]}["{text}"]')
        elif ref in doc.get("activity", {}):
            lines.append(f'  {names[ref]}{{"{text}"}}')
        else:
            lines.append(f'  {names[ref]}("{text}")')
    for src, dst, label in edges:
        if src in names and dst in names:
            lines.append(f"  {names[src]} -->|{label}| {names[dst]}")
    return "\n".join(lines)
