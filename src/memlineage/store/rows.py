"""Rows to domain objects and back. The stored JSON was written by this package."""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar

from memlineage.errors import StoreError
from memlineage.meaning import caches
from memlineage.model import (
    Artifact,
    ArtifactStatus,
    Claim,
    Event,
    Fact,
    GateFailure,
    GateReport,
    Item,
    Manifest,
    NewEvent,
    Operation,
    OpKind,
    Output,
    Statement,
)
from memlineage.store import deltas

EVENT_COLUMNS = (
    "seq, id, subject, at, kind, project, trust, taint, facts, supersedes, text, hash, recorded_at,"
    " speaker"
)
#: the columns of a written row; ``speaker`` is written only by a batch that has one
# (schema 10), so that the rows of most batches are those of every earlier schema
INSERT_COLUMNS = EVENT_COLUMNS.removesuffix(", speaker")


# An artifact is its row and its status row (schema 13: staling rewrites narrow rows),
# and the output of its base if it stores a delta (schema 18: store/deltas.py).
def base_output(row: str = "a") -> str:
    """The output of the base of artifact row ``row`` (NULL: it is stored whole)."""
    return (
        f"(SELECT b.output FROM artifacts b WHERE b.tenant = {row}.tenant"
        f" AND b.subject = {row}.subject AND b.id = {row}.base)"
    )


def artifact_columns(*, output: bool = True, row: str = "a", status: str = "s") -> str:
    """The columns ``artifact_from_row`` reads, of artifact row ``row`` and its status row
    ``status``; ``output=False`` reads neither its output nor its base's (``None``): the
    output is what grows with the subject."""
    stored, base = (f"{row}.output", base_output(row)) if output else ("NULL", "NULL")
    return (
        f"{row}.id, {row}.subject, {status}.status, {status}.reason, {row}.manifest, {stored},"
        f" {row}.gate, {row}.created_at, {base}"
    )


ARTIFACT_COLUMNS = artifact_columns()
ARTIFACTS = (
    "artifacts a JOIN artifact_status s"
    " ON s.tenant = a.tenant AND s.subject = a.subject AND s.id = a.id"
)
OP_COLUMNS = "op_seq, kind, target, other, conflict_id, key, trust, taint, reason, epoch"

T = TypeVar("T")


def event_from_row(row: Sequence[Any]) -> Event:
    """An ``events`` row (EVENT_COLUMNS) as its Event.

    Built as the dataclass's ``__init__`` would (every field, in field order), without
    its fourteen ``object.__setattr__`` calls: a recall reads about a hundred rows.
    Event has no ``__post_init__`` to skip.
    """
    (seq, id_, subject, at, kind, project, trust, taint, facts, supersedes, text, hash_) = row[:12]
    event = object.__new__(Event)
    event.__dict__.update(
        id=id_,
        subject=subject,
        text=text,
        at=at,
        kind=kind,
        project=project,
        trust=trust,
        taint=() if taint == "[]" else tuple(json.loads(taint)),
        facts=() if facts == "[]" else tuple(Fact(**f) for f in json.loads(facts)),
        supersedes=supersedes,
        speaker=row[13],
        seq=int(seq),
        hash=hash_,
        recorded_at=row[12],
    )
    return event


def items_text(items: Sequence[Item]) -> str:
    """An event's items as stored in ``event_items``: the source is the event's own id,
    so it is left out (every item of an event names it)."""
    return dumps([[i.id, i.kind, i.key, i.value, i.unit, i.polarity, i.clause] for i in items])


def items_from_text(text: str, source: str) -> tuple[Item, ...]:
    """``items_text`` read back, as ``Item(...)`` would build them (field order), without
    its ``object.__setattr__`` calls: a cold consolidation reads every event's items."""
    found = []
    for id_, kind, key, value, unit, polarity, clause in json.loads(text):
        item = object.__new__(Item)
        item.__dict__.update(
            id=id_,
            source=source,
            kind=kind,
            key=key,
            value=value,
            unit=unit,
            polarity=polarity,
            clause=clause,
        )
        found.append(item)
    return tuple(found)


#: a stored kind to its member: a dict lookup, where calling the enum costs several
#: times more (a consolidation reads every operation of its subject, twice)
_OP_KINDS = {str(kind): kind for kind in OpKind}


def op_from_row(row: Sequence[Any]) -> Operation:
    op_seq, kind, target, other, conflict_id, key, trust, taint, reason, epoch = row
    return Operation(
        op_seq=int(op_seq),
        kind=_OP_KINDS.get(kind) or OpKind(kind),
        target=target,
        other=other,
        conflict_id=conflict_id,
        key=key,
        trust=trust,
        taint=tuple(json.loads(taint)) if taint is not None else None,
        reason=reason,
        epoch=int(epoch),
    )


def gate_from_json(data: dict[str, Any]) -> GateReport:
    return GateReport(
        passed=bool(data["passed"]),
        failures=tuple(
            GateFailure(f["code"], f["item"], f.get("detail", "")) for f in data["failures"]
        ),
        checked_items=int(data.get("checkedItems", 0)),
    )


def artifact_from_row(row: Sequence[Any]) -> Artifact:
    id_, subject, status, reason, manifest, output, gate, created_at, base_output = row
    return Artifact(
        id=id_,
        subject=subject,
        status=ArtifactStatus(status),
        manifest=manifest_from_json(manifest),
        output=output_of_row(output, base_output) if output else None,
        gate=gate_from_json(json.loads(gate)),
        reason=reason,
        created_at=created_at,
    )


class ParsedTexts(Generic[T]):
    """Stored JSON texts parsed once per process, least recently used dropped first.

    A pure cache of a pure function (the text is the key, and a parsed value is
    immutable: frozen, of tuples), so nothing of the store is remembered. Unlike
    ``functools.lru_cache`` it can be told a value the process already holds:
    the writer of an artifact hands over the output and manifest it serialised,
    so the next consolidation of the subject does not parse its parent again
    (a 20,000-event subject's output is some 8 MB of JSON).
    """

    def __init__(
        self, parse: Callable[[str], T], limit: int, size: Callable[[T], int] = lambda _: 1
    ) -> None:
        self._parse = parse
        self._values: caches.LastPerKey[str, T] = caches.LastPerKey(size, limit, registered=False)

    def __call__(self, text: str) -> T:
        found = self._values.get(text)
        if found is not None:
            self._values.keep(text, found)  # the least recently used go first
            return found
        value = self._parse(text)  # outside the lock: a parse may take 100 ms
        self.remember(text, value)
        return value

    def remember(self, text: str, value: T) -> None:
        """``value`` is what parsing ``text`` gives (the caller serialised it into ``text``)."""
        self._values.keep(text, value)

    def cache_clear(self) -> None:
        self._values.clear()


#: stored outputs parsed and kept per process, bounded by their parts in all (claims,
#: statements, cold ids: a 100-event summary has some 600 in 14 KB of JSON, a 20,000-event
#: one 100,000 in 8 MB), not by their number: 256 of the large ones held gigabytes
OUTPUT_PARTS = 1 << 20
#: stored manifests, bounded by the inputs they name in all (some 3 MB at 100,000):
#: a worker cycling a thousand small subjects keeps each one's, as it keeps its events
MANIFEST_INPUTS = 1 << 18

#: every recall in summary mode reads its artifact's output; one consolidation reads
#: its parent's output twice and its manifest three times
output_from_json: ParsedTexts[Output] = ParsedTexts(
    lambda text: Output.from_json(json.loads(text)), OUTPUT_PARTS, deltas.parts
)
manifest_from_json: ParsedTexts[Manifest] = ParsedTexts(
    lambda text: Manifest.from_json(json.loads(text)),
    MANIFEST_INPUTS,
    lambda manifest: len(manifest.input_ids),
)
caches.register(output_from_json.cache_clear)
caches.register(manifest_from_json.cache_clear)


def output_of_row(text: str, base_text: str | None) -> Output:
    """A stored output: parsed whole, or a delta materialised on its base's (schema 18)."""
    if not deltas.is_delta(text):
        return output_from_json(text)
    if base_text is None:
        raise StoreError(f"a stored output names base {deltas.base_of(text)!r}, not stored")
    base = output_from_json(base_text)
    found = _materialised.get(text)
    if found is not None and found[0] is base:
        _materialised.keep(text, found)  # the least recently used go first
        return found[1]
    document = json.loads(text)
    output = deltas.materialise(document, base)
    on = deltas.StoredBase(str(document["base"]), int(document["baseEpoch"]), base)
    remember_materialised(text, on, output)
    return output


def read_on_base(output: Output) -> deltas.StoredBase | None:
    """The base of an output this process read or wrote as a delta (a base read has no
    inputs), or None: it was not one."""
    found = _read_on_base.get(id(output))
    return found[1] if found is not None and found[0] is output else None


def remember_materialised(text: str, base: deltas.StoredBase, output: Output) -> None:
    """``output`` is what the delta ``text`` stands for on ``base``."""
    _materialised.keep(text, (base.output, output))
    _read_on_base.keep(id(output), (output, base))


#: deltas materialised per process, by their text, with the base object they were
#: applied to (a base read again parses to the same object while it is cached);
#: bounded like the outputs parsed whole, by their parts in all
_materialised: caches.LastPerKey[str, tuple[Output, Output]] = caches.LastPerKey(
    lambda kept: deltas.parts(kept[1]), OUTPUT_PARTS
)
#: each output materialised above, by object, and the base it stands on
_read_on_base: caches.LastPerKey[int, tuple[Output, deltas.StoredBase]] = caches.LastPerKey(
    lambda kept: deltas.parts(kept[0]), OUTPUT_PARTS
)


# What json.dumps(value, ensure_ascii=False, separators=(",", ":")) builds on every
# call, built once: a first summary of 100 events serialises some 600 parts.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def dumps(value: Any) -> str:
    return _ENCODER.encode(value)


def serialised_output(output: Output) -> str:
    """``dumps(output.to_json())``, each claim and statement serialised once per process.

    A worker's next summary of a subject carries nearly every claim and statement
    of the last one as the same objects (the built-in generator keeps them), and
    serialising them again was a third of writing the artifact. JSON joins list
    items and members with the separators ``dumps`` uses, so the text is the
    same byte for byte (a property test holds it).
    """
    # One join of the pieces: the text is tens of MB at 100,000 events, and every "+"
    # or f-string around a member copied all of it again.
    return "".join(
        (
            '{"claims":[',
            ",".join(_fragment_texts(output.claims)),
            '],"openItems":',
            dumps(list(output.open_items)),
            ',"unresolvedConflicts":',
            dumps(list(output.unresolved_conflicts)),
            ',"cold":',
            dumps(list(output.cold)),
            ',"statements":[',
            ",".join(_fragment_texts(output.statements)),
            "]}",
        )
    )


def stored_output(
    output: Output, base: deltas.StoredBase | None
) -> tuple[str, deltas.StoredBase | None]:
    """The text stored for ``output``, and the base it is a delta on (schema 18): a delta
    on ``base`` while it stays small beside the output, else the output whole (None)."""
    if base is not None:
        on = base.output
        parts = deltas.Parts(
            claims=_encoded_parts(output.claims, on.claims, base, "claims"),
            open_items=_encoded_ids(output.open_items, on.open_items, base, "openItems"),
            unresolved_conflicts=_encoded_ids(
                output.unresolved_conflicts, on.unresolved_conflicts, base, "unresolvedConflicts"
            ),
            cold=_encoded_ids(output.cold, on.cold, base, "cold"),
            statements=_encoded_parts(output.statements, on.statements, base, "statements"),
        )
        if deltas.worth_a_delta(parts):
            return delta_text(base, parts), base
    return serialised_output(output), None


def delta_text(base: deltas.StoredBase, parts: deltas.Parts) -> str:
    """The stored delta (store/deltas.py), in one join as ``serialised_output``."""
    return "".join(
        (
            deltas.DELTA_PREFIX,
            dumps(base.id),
            ',"baseEpoch":',
            str(base.epoch),
            ',"claims":',
            parts.claims.text,
            ',"openItems":',
            parts.open_items.text,
            ',"unresolvedConflicts":',
            parts.unresolved_conflicts.text,
            ',"cold":',
            parts.cold.text,
            ',"statements":',
            parts.statements.text,
            "}",
        )
    )


def _encoded_ids(
    ids: Sequence[str], base_ids: Sequence[str], base: deltas.StoredBase, name: str
) -> deltas.Encoded:
    """Event or conflict ids as OPS on the base's list of the same name (one run when they
    are the base's list: compared whole, C-level, before any is looked up)."""
    if ids and tuple(ids) == tuple(base_ids):
        return deltas.Encoded(f"[[0,{len(ids)}]]", 1, len(ids))
    return deltas.encode_keys(ids, base.index(name, lambda: base_ids), lambda i: dumps(ids[i]))


def _encoded_parts(
    parts: Sequence[Claim | Statement],
    base_parts: Sequence[Claim | Statement],
    base: deltas.StoredBase,
    name: str,
) -> deltas.Encoded:
    """Claims or statements as OPS on the base's: found by object (the built-in generator
    carries the base's own), else by content (a process that read the base from the store
    builds its own objects), else written out."""
    by_object = base.index(f"{name} by object", lambda: map(id, base_parts))
    found = deltas.positions(map(id, parts), by_object, len(parts))
    missing = (found < 0).nonzero()[0].tolist()
    if missing:
        by_content = base.index(f"{name} by content", lambda: map(_content, base_parts))
        for i in missing:
            found[i] = by_content.get(_content(parts[i]), -1)
    return deltas.encode_positions(found, lambda i: _fragment_texts([parts[i]])[0])


def _content(part: Claim | Statement) -> Hashable:
    """What a part serialises to, as a key: its fields, with the types JSON tells apart and
    equality does not (True, 1 and 1.0; 0.0 and -0.0). Hashing it costs a fraction of
    serialising it: a process that read the base builds every key once."""
    if isinstance(part, Claim):
        value = part.value
        exact = repr(value) if isinstance(value, float) else None
        return (part, type(value), exact, type(part.polarity))
    return part


#: serialised claims and statements kept (by object: they are immutable)
FRAGMENTS = 1 << 18
_fragments: dict[int, tuple[Claim | Statement, str]] = {}


def _fragment_texts(parts: Sequence[Claim | Statement]) -> list[str]:
    texts = []
    for part in parts:
        found = _fragments.get(id(part))
        if found is None or found[0] is not part:
            if len(_fragments) >= FRAGMENTS:
                _fragments.clear()  # a new generation: the next output's parts come back
            found = _fragments[id(part)] = (part, dumps(part.to_json()))
        texts.append(found[1])
    return texts


caches.register(_fragments.clear)


def event_row(tenant: str, event: NewEvent, seq: int, hash_: str, now: str) -> tuple[Any, ...]:
    """The ``events`` row of ``event``, in EVENT_COLUMNS order after the tenant.

    The last value is the speaker: a batch without any leaves it out (INSERT_COLUMNS).
    """
    return (
        tenant,
        seq,
        event.id,
        event.subject,
        event.at,
        event.kind,
        event.project,
        event.trust,
        dumps(list(event.taint)) if event.taint else "[]",  # most events carry neither
        dumps([f.to_json() for f in event.facts]) if event.facts else "[]",
        event.supersedes,
        event.text,
        hash_,
        now,
        event.speaker,
    )
