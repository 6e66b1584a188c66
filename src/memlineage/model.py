"""Domain types. Everything the raw layer holds is immutable (frozen)."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

_T = TypeVar("_T")


class lazy(Generic[_T]):
    """A value computed on its first read and kept on the instance.

    ``functools.cached_property`` without its lock: Python 3.11 takes one on each
    first read, which cost more than most of the values it guards. Two threads
    reading a value for the first time at once both compute it; every use here
    computes the same value from immutable fields, so either may be kept."""

    def __init__(self, compute: Callable[[Any], _T]) -> None:
        self.compute = compute
        self.name = compute.__name__
        self.__doc__ = compute.__doc__

    def __get__(self, instance: Any, owner: type | None = None) -> _T:
        value = self.compute(instance)
        instance.__dict__[self.name] = value  # later reads find it there, not here
        return value


JsonScalar = str | int | float | bool | None
FactValue = str | int | float | bool

TRUST_LEVELS: tuple[str, ...] = ("user", "agent", "tool", "external")
EVENT_KINDS: tuple[str, ...] = (
    "constraint",
    "preference",
    "fact",
    "decision",
    "task",
    "observation",
)


@dataclass(frozen=True)
class Fact:
    """An explicit structured fact carried by an event; taken as given by extraction."""

    key: str
    value: FactValue
    unit: str | None = None
    polarity: bool = True
    kind: str = "fact"

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "value": self.value,
            "unit": self.unit,
            "polarity": self.polarity,
            "kind": self.kind,
        }


@dataclass(frozen=True)
class NewEvent:
    """What a client appends: the content fields, before the store assigns a seq.

    ``hash`` is derived from exactly these fields (see canonical.event_hash).
    """

    id: str
    subject: str
    text: str
    at: str | None = None
    kind: str | None = None
    project: str | None = None
    trust: str = "user"
    taint: tuple[str, ...] = ()
    facts: tuple[Fact, ...] = ()
    supersedes: str | None = None
    # Who said the text (a chat turn's speaker), when the client knows it.
    speaker: str | None = None

    @lazy
    def content_hash(self) -> str:
        """SHA-256 of the JCS bytes of ``content()``; computed once per event object."""
        from memlineage.canonical import content_hash, is_plain_number

        # The content's keys are fixed ASCII names; only fact values can be floats.
        plain = all(is_plain_number(f.value) for f in self.facts)
        return content_hash(self.content(), plain=plain)

    def content(self) -> dict[str, Any]:
        """The content fields as plain JSON values; the input of the event hash.

        ``speaker`` is there only when given, so the hash of every event stored
        before the field existed stays the same.
        """
        content = {
            "id": self.id,
            "subject": self.subject,
            "text": self.text,
            "at": self.at,
            "kind": self.kind,
            "project": self.project,
            "trust": self.trust,
            "taint": list(self.taint),
            "facts": [f.to_json() for f in self.facts],
            "supersedes": self.supersedes,
        }
        if self.speaker is not None:
            content["speaker"] = self.speaker
        return content


@dataclass(frozen=True)
class Event(NewEvent):
    """A stored event: content plus its per-subject ``seq`` and content ``hash``."""

    seq: int = 0
    hash: str = ""
    recorded_at: str = ""

    @classmethod
    def stored(cls, new: NewEvent, seq: int, recorded_at: str) -> Event:
        """The event as the store keeps it: ``new``'s content with its seq and hash."""
        content = {f.name: getattr(new, f.name) for f in dataclasses.fields(NewEvent)}
        return cls(**content, seq=seq, hash=new.content_hash, recorded_at=recorded_at)

    def to_json(self) -> dict[str, Any]:
        return {**self.content(), "speaker": self.speaker, "seq": self.seq, "hash": self.hash}


#: what the raw layer makes of an event, in ``Memory.events`` (see raw/validity.event_states)
EVENT_STATES: tuple[str, ...] = (
    "valid",
    "revoked",
    "superseded",
    "lost-conflict",  # a conflict resolved by hand for the other side
    "retired",  # a conflict the temporal policy resolved for the other side
    "quarantined",
    "erased",
)


@dataclass(frozen=True)
class EventState(Event):
    """A stored event with what the raw layer makes of it now: its ``state`` (one of
    EVENT_STATES) and ``why``, in words (None for a valid event with nothing to say)."""

    state: str = "valid"
    why: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "state": self.state, "why": self.why}


class OpKind(enum.StrEnum):
    """Raw-layer operations. Every one of them advances the epoch (I1)."""

    REVOKE = "revoke"
    REPLACE = "replace"
    CONFLICT = "conflict"
    RESOLVE = "resolve"
    TRUST = "trust"
    # A conflict, detected or declared, taken back: both sides count again.
    DISMISS = "dismiss"
    # Data-protection erasure: the event's content is gone; it is invalid for good.
    ERASE = "erase"
    # The tenant's trust policy (a version) now governs this subject's validity.
    POLICY = "policy"


@dataclass(frozen=True)
class Operation:
    """An append-only record of an operation on events of one subject."""

    op_seq: int
    kind: OpKind
    target: str
    other: str | None = None
    conflict_id: str | None = None
    key: str | None = None
    trust: str | None = None
    taint: tuple[str, ...] | None = None
    reason: str | None = None
    epoch: int = 0


@dataclass(frozen=True)
class Conflict:
    """Two events that contradict each other. The raw layer resolves; never the consolidator."""

    id: str
    a: str
    b: str
    key: str | None = None
    winner: str | None = None

    @property
    def resolved(self) -> bool:
        return self.winner is not None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "a": self.a, "b": self.b, "key": self.key, "winner": self.winner}


@dataclass(frozen=True)
class Clock:
    """The source clock of one subject: H and the epoch (I1)."""

    high_water: int = 0
    epoch: int = 0


@dataclass(frozen=True)
class Alias:
    """The read pointer of one subject. '' means no artifact has been switched in yet."""

    artifact_id: str = ""
    source_epoch: int = 0
    covers_through: int = 0
    bypassed: bool = False

    def expected(self) -> dict[str, Any]:
        return {
            "parentArtifactId": self.artifact_id,
            "sourceEpoch": self.source_epoch,
            "coversThrough": self.covers_through,
        }


@dataclass(frozen=True)
class Snapshot:
    """Step 1 of a consolidation: the clock and the alias, read together."""

    subject: str
    clock: Clock
    alias: Alias


class ArtifactStatus(enum.StrEnum):
    CANDIDATE = "candidate"  # gate passed, written, waiting for the switch
    PUBLISHED = "published"  # the alias points (or pointed until replaced) here
    SUPERSEDED = "superseded"  # was published; a later switch replaced it
    REJECTED = "rejected"  # the gate failed; never published, never summarized again
    FAILED = "failed"  # generation or switch failed
    STALE = "stale"  # a source it derives from was invalidated


RECALLABLE_STATUSES = frozenset({ArtifactStatus.PUBLISHED})


@dataclass(frozen=True)
class Manifest:
    """What an artifact was built from; both fences and every input hash."""

    artifact_id: str
    subject: str
    new_covers_through: int
    input_epoch: int
    expected_alias: Alias
    input_ids: tuple[str, ...]
    input_root: str
    expected_conflicts: tuple[str, ...]
    selector_version: str
    prompt_version: str
    model_snapshot: str
    budget: int | None = None
    # The artifact whose output the generator was given, if any: a derivation parent.
    # It differs from expected_alias, which is only the CAS fence.
    derived_from_artifact: str | None = None
    # The rendered summary is over the token budget even after every low-salience
    # statement moved to cold; it is published whole, never truncated.
    over_budget: bool = False
    # One record per generation attempt (generator, model, usage, latency, failure
    # codes), for LLM generators with bounded repair; () for the built-in one.
    attempts: tuple[Mapping[str, Any], ...] = ()
    # Why the built-in generator's output was published instead (None: it was not).
    fallback: str | None = None
    # The tenant's generator configuration version this artifact was built with.
    config_version: int | None = None
    # With derived_from_artifact: the inputRoot of the inputs after that artifact's
    # coverage alone (the tail), which a switch over it re-reads (store/switch.py).
    tail_root: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "artifactId": self.artifact_id,
            "subject": self.subject,
            "newCoversThrough": self.new_covers_through,
            "inputEpoch": self.input_epoch,
            "expectedAlias": self.expected_alias.expected(),
            "inputIds": list(self.input_ids),
            "inputRoot": self.input_root,
            "expectedConflicts": list(self.expected_conflicts),
            "selectorVersion": self.selector_version,
            "promptVersion": self.prompt_version,
            "modelSnapshot": self.model_snapshot,
            "budget": self.budget,
            "derivedFromArtifact": self.derived_from_artifact,
            "overBudget": self.over_budget,
            "attempts": [dict(a) for a in self.attempts],
            "fallback": self.fallback,
            "configVersion": self.config_version,
            "tailRoot": self.tail_root,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Manifest:
        expected = data["expectedAlias"]
        return Manifest(
            artifact_id=data["artifactId"],
            subject=data["subject"],
            new_covers_through=int(data["newCoversThrough"]),
            input_epoch=int(data["inputEpoch"]),
            expected_alias=Alias(
                artifact_id=expected["parentArtifactId"],
                source_epoch=int(expected["sourceEpoch"]),
                covers_through=int(expected["coversThrough"]),
            ),
            input_ids=tuple(data["inputIds"]),
            input_root=data["inputRoot"],
            expected_conflicts=tuple(data.get("expectedConflicts", ())),
            selector_version=data["selectorVersion"],
            prompt_version=data["promptVersion"],
            model_snapshot=data["modelSnapshot"],
            budget=data.get("budget"),
            derived_from_artifact=data.get("derivedFromArtifact"),
            over_budget=bool(data.get("overBudget", False)),
            attempts=tuple(data.get("attempts", ())),
            fallback=data.get("fallback"),
            config_version=data.get("configVersion"),
            tail_root=data.get("tailRoot"),
        )


@dataclass(frozen=True)
class Item:
    """One must-preserve item extracted from a selected event (or an unresolved conflict)."""

    id: str
    source: str
    kind: str
    key: str
    value: FactValue
    unit: str | None = None
    polarity: bool = True
    # The clause of the source text the item came from, verbatim (original case):
    # what a claim's text shows, so a value never appears without its clause.
    clause: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source": self.source,
            "kind": self.kind,
            "key": self.key,
            "value": self.value,
            "unit": self.unit,
            "polarity": self.polarity,
        }


@dataclass(frozen=True)
class Claim:
    """One structured statement of a generated output, with its lineage."""

    key: str
    value: FactValue
    unit: str | None
    polarity: bool
    kind: str
    derived_from: tuple[str, ...]
    text: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "value": self.value,
            "unit": self.unit,
            "polarity": self.polarity,
            "kind": self.kind,
            "derivedFrom": list(self.derived_from),
            "text": self.text,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Claim:
        """The inverse of ``to_json`` for trusted data; untrusted output goes through parse."""
        return Claim(
            key=data["key"],
            value=data["value"],
            unit=data["unit"],
            polarity=data["polarity"],
            kind=data["kind"],
            derived_from=tuple(data["derivedFrom"]),
            text=data["text"],
        )


@dataclass(frozen=True)
class Statement:
    """One line of a summary, with its lineage (step 4).

    ``text`` is what a reader sees; the built-in generator copies it verbatim:
    one event's whole text, or the text of several events that said exactly
    the same. ``derived_from`` names raw event ids, ``claims`` the keys of the
    claims this line states, ``at`` the newest source time, ``contested`` the
    id of the unresolved conflict one of its sources is a side of (None
    otherwise), ``kind`` the event kind it belongs under when rendered
    (constraint, preference, fact, decision, task, observation), ``speaker``
    who said it (when the event names one), and ``part`` ``(k, n)`` when the
    line is the k-th of the n numbered parts of one event too long for any
    budget (consolidation/parts.py); it is then rendered with that mark.
    """

    text: str
    derived_from: tuple[str, ...]
    claims: tuple[str, ...] = ()
    at: str | None = None
    project: str | None = None
    contested: str | None = None
    kind: str | None = None
    speaker: str | None = None
    part: tuple[int, int] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "derivedFrom": list(self.derived_from),
            "claims": list(self.claims),
            "at": self.at,
            "project": self.project,
            "contested": self.contested,
            "kind": self.kind,
            "speaker": self.speaker,
            "part": list(self.part) if self.part else None,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Statement:
        """The inverse of ``to_json`` for trusted data; untrusted output goes through parse."""
        return Statement(
            text=data["text"],
            derived_from=tuple(data["derivedFrom"]),
            claims=tuple(data["claims"]),
            at=data["at"],
            project=data["project"],
            contested=data["contested"],
            kind=data.get("kind"),
            speaker=data.get("speaker"),
            part=(int(data["part"][0]), int(data["part"][1])) if data.get("part") else None,
        )


@dataclass(frozen=True)
class Output:
    """A parsed generator output (step 5).

    ``statements`` are the summary as sentences with lineage; ``cold`` lists
    the selected events left to cold retrieval. There is no free-text summary:
    a reader sees :func:`memlineage.consolidation.render.render_summary` of the statements.
    """

    claims: tuple[Claim, ...]
    open_items: tuple[str, ...]
    unresolved_conflicts: tuple[str, ...]
    cold: tuple[str, ...] = ()
    statements: tuple[Statement, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "claims": [c.to_json() for c in self.claims],
            "openItems": list(self.open_items),
            "unresolvedConflicts": list(self.unresolved_conflicts),
            "cold": list(self.cold),
            "statements": [s.to_json() for s in self.statements],
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Output:
        """The inverse of ``to_json`` for output this package stored after parsing it."""
        return Output(
            claims=tuple(Claim.from_json(c) for c in data["claims"]),
            open_items=tuple(data["openItems"]),
            unresolved_conflicts=tuple(data["unresolvedConflicts"]),
            cold=tuple(data["cold"]),
            statements=tuple(Statement.from_json(s) for s in data.get("statements", ())),
        )


@dataclass(frozen=True)
class GateFailure:
    code: str
    item: str
    detail: str = ""

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "item": self.item, "detail": self.detail}


@dataclass(frozen=True)
class GateReport:
    passed: bool
    failures: tuple[GateFailure, ...] = ()
    checked_items: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "failures": [f.to_json() for f in self.failures],
            "checkedItems": self.checked_items,
        }


@dataclass(frozen=True)
class Artifact:
    """A derived row: manifest + output + gate report + status. Only ``status`` moves."""

    id: str
    subject: str
    status: ArtifactStatus
    manifest: Manifest
    output: Output | None
    gate: GateReport
    reason: str | None = None
    created_at: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "artifact_id": self.id,
            "subject": self.subject,
            "status": str(self.status),
            "reason": self.reason,
            "manifest": self.manifest.to_json(),
            "output": self.output.to_json() if self.output else None,
            "gate": self.gate.to_json(),
            "created_at": self.created_at,
        }


class SwitchFailure(enum.StrEnum):
    """Why a switch did not publish. The alias is untouched in every case."""

    ALIAS_MOVED = "alias_moved"
    EPOCH_CHANGED = "epoch_changed"
    INPUT_INVALIDATED = "input_invalidated"
    NEW_CONFLICT = "new_conflict"
    COVERAGE_REGRESSION = "coverage_would_regress"
    NOT_A_CANDIDATE = "not_a_candidate"
    # The alias already publishes this coverage at this epoch: a second publish would
    # add nothing (unless forced).
    UP_TO_DATE = "up_to_date"


@dataclass(frozen=True)
class SwitchResult:
    switched: bool
    artifact_id: str
    reason: SwitchFailure | None = None
    detail: str = ""
    alias: Alias = field(default_factory=Alias)

    def to_json(self) -> dict[str, Any]:
        return {
            "switched": self.switched,
            "artifact_id": self.artifact_id,
            "reason": str(self.reason) if self.reason else None,
            "detail": self.detail,
            "covers_through": self.alias.covers_through,
        }
