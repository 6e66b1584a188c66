"""The storage seam: everything the domain asks of a store, and what it returns.

``Store`` is composed of small protocols, one per concern (reads, the raw
layer's writes, detection, policies, histories and erasure, jobs, release,
keys, evaluation runs); a backend implements all of them, and nothing outside
``store/`` asks which backend or class it has.

Writes are whole transactions that follow I7 (the subject's clock row lock is
the first statement). Reads go through a ``Reader``: one consistent snapshot
of one tenant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from memlineage.meaning.policy import TemporalPolicy, VersionedTrust, versioned_json
from memlineage.model import (
    Alias,
    Artifact,
    Clock,
    Event,
    Item,
    NewEvent,
    Operation,
    SwitchResult,
)
from memlineage.progress import Advance, Progress
from memlineage.raw.validity import TrustPolicy
from memlineage.recall.embed import Embedder, EmbedderId, Vectors
from memlineage.store.search import Match


@dataclass(frozen=True)
class Appended:
    """The outcome of appending one event: its seq, and whether it was new."""

    id: str
    subject: str
    seq: int
    created: bool


@dataclass(frozen=True)
class OpResult:
    """The outcome of a raw-layer operation."""

    subject: str
    epoch: int
    changed: bool
    conflict_id: str | None = None
    stale: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "epoch": self.epoch,
            "changed": self.changed,
            "conflict_id": self.conflict_id,
            "stale": list(self.stale),
        }


@dataclass(frozen=True)
class Head:
    """Clock and alias of one subject, and the artifact the alias points to."""

    clock: Clock
    alias: Alias
    artifact: Artifact | None


@dataclass(frozen=True)
class SubjectInput:
    """What a consolidation reads of its subject, in one snapshot: the head, the events
    up to its high water and the operations."""

    head: Head
    events: tuple[Event, ...]
    operations: tuple[Operation, ...]
    #: seq -> the event's items as stored under the current extraction rules
    #: (``event_items``): read with a whole read, for a process that never read the
    #: subject; an event missing here is extracted (and its items stored by the write)
    items: Mapping[int, tuple[Item, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class StoredKinds:
    """The item kinds the detection job stored for a subject's events (store/detect.py).

    Complete for the events with ``seq <= through``: one of them missing from
    ``kinds`` has no item. ``through`` is 0 when the kinds were stored under other
    extraction rules (``extract.RULES_VERSION``) or not at all.
    """

    through: int
    kinds: dict[int, tuple[str, ...]]  # seq -> the event's distinct item kinds


# -- what the validity operations return (the raw layer's detection, erasure, policies,
# and the histories that audit and lineage read) --


@dataclass(frozen=True)
class DetectedConflict:
    """One conflict the detection job recorded, and what the temporal policy made of it."""

    conflict_id: str
    a: str
    b: str
    key: str
    rule: str
    kind: str
    resolution: str  # 'keep' or the resolution's rule name
    winner: str | None
    stale: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "conflict_id": self.conflict_id,
            "a": self.a,
            "b": self.b,
            "key": self.key,
            "rule": self.rule,
            "kind": self.kind,
            "resolution": self.resolution,
            "winner": self.winner,
            "stale": list(self.stale),
        }


@dataclass(frozen=True)
class Detection:
    subject: str
    detected_through: int
    conflicts: tuple[DetectedConflict, ...] = ()  # recorded by this run
    tenant: str | None = None  # set by ``detect_next``, which picks the subject

    def to_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "detected_through": self.detected_through,
            "conflicts": [c.to_json() for c in self.conflicts],
        }


@dataclass(frozen=True)
class Erased:
    event_id: str
    subject: str
    epoch: int
    changed: bool
    stale: tuple[str, ...] = ()
    scrubbed: tuple[str, ...] = ()  # artifacts whose stored rows held a copy
    purged: bool = False  # the backend confirmed old row versions are gone from its files

    def to_json(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "subject": self.subject,
            "epoch": self.epoch,
            "changed": self.changed,
            "stale": list(self.stale),
            "scrubbed": list(self.scrubbed),
            "purged": self.purged,
        }


@dataclass(frozen=True)
class StatusChange:
    status: str
    reason: str | None
    at: str

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "at": self.at}


@dataclass(frozen=True)
class AliasSwitch:
    switch_no: int
    artifact_id: str
    source_epoch: int
    covers_through: int
    switched_at: str

    def to_json(self) -> dict[str, Any]:
        return {
            "switch_no": self.switch_no,
            "artifact_id": self.artifact_id,
            "source_epoch": self.source_epoch,
            "covers_through": self.covers_through,
            "switched_at": self.switched_at,
        }


@dataclass(frozen=True)
class ErasureRecord:
    event_id: str
    op_seq: int
    erased_by: str
    reason: str
    erased_at: str

    def to_json(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "op_seq": self.op_seq,
            "erased_by": self.erased_by,
            "reason": self.reason,
            "erased_at": self.erased_at,
        }


@dataclass(frozen=True)
class SubjectHistory:
    """Everything one subject holds, read in one snapshot."""

    subject: str
    clock: Clock
    alias: Alias
    events: tuple[Event, ...]
    operations: tuple[Operation, ...]
    artifacts: tuple[Artifact, ...]
    statuses: dict[str, tuple[StatusChange, ...]] = field(default_factory=dict)
    switches: tuple[AliasSwitch, ...] = ()
    erasures: tuple[ErasureRecord, ...] = ()
    edges: tuple[tuple[str, str], ...] = ()  # (parent, child)
    erased_vectors: tuple[str, ...] = ()  # erased events that still have a vector (none should)
    erased_items: tuple[str, ...] = ()  # erased events that still have stored items (none should)


@dataclass(frozen=True)
class Swept:
    subject: str
    artifact_id: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"subject": self.subject, "artifact_id": self.artifact_id, "reason": self.reason}


@dataclass(frozen=True)
class PolicyVersion:
    """One stored version of a tenant policy."""

    name: str
    version: int
    body: dict[str, Any]
    reason: str | None
    recorded_at: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "body": self.body,
            "reason": self.reason,
            "recorded_at": self.recorded_at,
        }


@dataclass(frozen=True)
class Rollout:
    """Progress of a trust policy version over the tenant's subjects."""

    version: int
    applied: tuple[str, ...] = ()  # subjects that took the version in this call
    affected: tuple[OpResult, ...] = ()  # of those, the ones whose validity changed
    remaining: int = 0  # subjects still on an older version
    stale: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "applied": list(self.applied),
            "affected": [
                {"subject": r.subject, "epoch": r.epoch, "stale": list(r.stale)}
                for r in self.affected
            ],
            "remaining": self.remaining,
        }


def trust_change_json(stored: VersionedTrust, rounds: Sequence[Rollout]) -> dict[str, Any]:
    """A new trust policy version and its rollout, as ``policy trust --json`` prints it."""
    return {
        **versioned_json(stored),
        "batches": [r.to_json() for r in rounds],
        "remaining": rounds[-1].remaining,
    }


@dataclass(frozen=True)
class HeadState:
    """A subject's clock and alias, the clock's operation counter, and the status of
    the alias's artifact (None: the alias points to none): what decides whether a
    recall may use a summary, without the artifact's manifest, output or gate."""

    clock: Clock
    alias: Alias
    ops: int
    status: str | None
    reason: str | None


@dataclass(frozen=True)
class RecallRead:
    """``Reader.recall_read``: the head's state and what was asked with it (None: not
    asked)."""

    state: HeadState | None
    events: list[Event] | None
    kinds: StoredKinds | None
    matching: list[str] | None


class Reader(Protocol):
    tenant: str
    #: what a reader's per-process caches are kept per (the store object); None: none
    scope: object | None

    def head(self, subject: str) -> Head | None: ...
    def head_state(self, subject: str) -> HeadState | None: ...
    def recall_read(
        self, subject: str, *, events_after: int | None, kinds: bool, terms: Sequence[str]
    ) -> RecallRead: ...
    def events(
        self, subject: str, *, after: int = 0, through: int | None = None
    ) -> list[Event]: ...
    def events_by_id(self, subject: str, ids: Sequence[str]) -> list[Event]: ...
    def search(self, subject: str, terms: list[str]) -> list[Match]: ...
    def stored_kinds(
        self, subject: str, *, after: int = 0, seqs: Sequence[int] | None = None
    ) -> StoredKinds: ...
    def matching(self, subject: str, terms: list[str]) -> list[str]: ...
    def operations(self, subject: str, *, after: int = 0) -> list[Operation]: ...
    def artifacts(self, subject: str | None = None) -> list[Artifact]: ...
    def artifact(self, artifact_id: str, subject: str | None = None) -> Artifact | None: ...
    def subjects(self) -> list[str]: ...
    def subjects_of_events(self, ids: Sequence[str]) -> dict[str, str]: ...
    def vectors(
        self, subject: str, ids: Sequence[str], embedder: EmbedderId | None = None
    ) -> dict[str, Vectors]: ...
    def vectors_of_valid(
        self, subject: str, ids: Sequence[str], embedder: EmbedderId | None = None
    ) -> tuple[list[str], Vectors]: ...
    def embedder(self) -> tuple[int, EmbedderId] | None: ...


class KeyStore(Protocol):
    """API keys of the HTTP service (not subject data)."""

    def insert_key(self, key_id: str, tenant: str, secret_hash: str, label: str | None) -> None: ...
    def revoke_key(self, tenant: str, key_id: str) -> bool: ...
    def list_keys(self, tenant: str) -> list[tuple[str, str | None, str, str | None]]: ...
    def key_by_hash(self, secret_hash: str) -> tuple[str, str, str, bool] | None: ...


class EvalStore(Protocol):
    """Stored evaluation runs (not subject data)."""

    def insert_eval_run(
        self,
        tenant: str,
        run_id: str,
        started_at: str,
        finished_at: str,
        passed: bool,
        report: dict[str, Any],
    ) -> None: ...
    def eval_runs(self, tenant: str, limit: int = 100) -> list[dict[str, Any]]: ...


class ReleaseStore(Protocol):
    """Release per tenant: mode, generator configurations, shadow reviews, bypass."""

    def release_state(self, tenant: str) -> tuple[str, int | None, int | None]: ...
    def set_release_mode(self, tenant: str, mode: str) -> bool: ...
    def add_generator_config(self, tenant: str, config: dict[str, Any]) -> int: ...
    def seed_generator_config(self, tenant: str, config: dict[str, Any]) -> int | None: ...
    def generator_configs(self, tenant: str) -> list[tuple[int, dict[str, Any], str]]: ...
    def activate_config(self, tenant: str, version: int | None, action: str) -> int | None: ...
    def release_log(self, tenant: str) -> list[tuple[str, str, dict[str, Any]]]: ...
    def queue_review(self, tenant: str, subject: str, artifact_id: str) -> None: ...
    def reviews(self, tenant: str, state: str | None = None) -> list[dict[str, Any]]: ...
    def decide_review(
        self, tenant: str, artifact_id: str, state: str, reviewer: str, reason: str | None
    ) -> None: ...
    def bypass(self, tenant: str, subject: str) -> bool: ...


@dataclass(frozen=True)
class Job:
    """One subject's row in the job queue; times are seconds since the epoch (database clock)."""

    tenant: str
    subject: str
    state: str  # queued, running, done, dead
    reason: str  # the triggers that queued it, comma-separated: tail, stale, manual, schedule
    detail: str | None
    force: bool
    rerun: bool  # triggered again while running: it is queued again when it finishes
    due: float  # queued: runnable from; running: when the lease ends
    attempts: int
    token: int  # the fencing token: finishing or renewing needs the current one
    lease_owner: str | None
    queued_at: float
    started_at: float | None
    finished_at: float | None
    last_error: str | None
    last_outcome: str | None
    last_artifact: str | None
    # The tenant's release mode and active configuration, read by the claim in its
    # statement so that a job needs no read of its own (None: not read; see
    # ``Worker.run_job``). Not part of the job's row.
    release: tuple[str, int | None] | None = field(default=None, compare=False)

    @property
    def lease_until(self) -> float | None:
        return self.due if self.state == "running" else None

    def to_json(self) -> dict[str, Any]:
        """Times as RFC 3339 UTC strings; ``lease_until`` only while running."""
        doc = dict(self.__dict__)
        del doc["release"]
        doc["lease_until"] = self.lease_until
        for name in ("due", "lease_until", "queued_at", "started_at", "finished_at"):
            doc[name] = _rfc3339(doc[name])
        return doc


def _rfc3339(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return (
        datetime.fromtimestamp(seconds, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


@dataclass(frozen=True)
class JobEnd:
    """How a claimed job ends: its next ``state`` and what the attempt produced."""

    state: str  # done, queued (retry), dead
    outcome: str  # published, up_to_date, outdated, failed, abandoned, ...
    delay: float = 0.0  # queued: seconds until it is due again
    counted: bool = True  # False: the attempt does not count toward the limit
    error: str | None = None
    artifact_id: str | None = None


class JobStore(Protocol):
    """The queue's transactions (store/jobs.py); each touches the jobs rows only."""

    def enqueue(
        self, tenant: str, subject: str, reason: str, detail: str | None = None, force: bool = False
    ) -> Job: ...
    def claim(
        self, tenant: str | None, owner: str, lease: float, max_attempts: int
    ) -> Job | None: ...
    def renew(self, job: Job, lease: float) -> bool: ...
    def finish(self, job: Job, end: JobEnd) -> bool: ...
    def jobs(self, tenant: str, state: str | None = None) -> list[Job]: ...
    def outdated_subjects(self, tenant: str) -> list[str]: ...
    def tail_threshold(self, tenant: str) -> int: ...
    def set_tail_threshold(self, tenant: str, threshold: int) -> None: ...


@dataclass(frozen=True)
class KeyVersions:
    """A key's versions in seq order, and whether the latest one is valid (its current value)."""

    versions: tuple[Event, ...]
    latest_valid: bool

    @property
    def current(self) -> Event | None:
        return self.versions[-1] if self.versions and self.latest_valid else None


@dataclass(frozen=True)
class KeyWrite:
    """What a write of a keyed value did to the event ``id``: ``appended`` it (a new
    version), ``revoked`` it (a delete), or ``unchanged`` (the same text again, or a
    delete of a key without a current value; ``id`` is then the current one, if any)."""

    outcome: Literal["appended", "revoked", "unchanged"]
    id: str | None


class KeyedStore(Protocol):
    """One keyed value's versions without reading its subject, and its writes (store/keyed.py)."""

    def key_versions(self, tenant: str, subject: str, prefix: str) -> KeyVersions: ...
    def write_key(
        self, tenant: str, subject: str, prefix: str, value: NewEvent | None, reason: str
    ) -> KeyWrite: ...


class DetectionStore(Protocol):
    """Contradictions over time (store/detect.py): the detection job and dismissal."""

    def detect_conflicts(
        self, tenant: str, subject: str, checked: Advance | None = None
    ) -> Detection: ...
    def dismiss_conflict(
        self, tenant: str, conflict_id: str, reason: str | None = None
    ) -> OpResult: ...
    def pending_detection(self, tenant: str) -> list[str]: ...
    def detect_next(
        self, tenant: str | None, after: tuple[str, str] | None = None
    ) -> Detection | None: ...


class PolicyStore(Protocol):
    """Per-tenant temporal and trust policies, versioned, rolled out per subject."""

    def policy_history(self, tenant: str, name: str | None = None) -> list[PolicyVersion]: ...
    def temporal_policy(self, tenant: str) -> TemporalPolicy: ...
    def trust_policy(self, tenant: str) -> VersionedTrust: ...
    def set_temporal_policy(
        self, tenant: str, policy: TemporalPolicy, reason: str | None = None
    ) -> TemporalPolicy: ...
    def set_trust_policy(
        self, tenant: str, trust: VersionedTrust, reason: str | None = None
    ) -> VersionedTrust: ...
    def roll_out_trust_policy(
        self, tenant: str, batch: int = 100, done: Advance | None = None
    ) -> Rollout: ...
    def trust_rollout_pending(self, tenant: str, version: int | None = None) -> int: ...


class HistoryStore(Protocol):
    """What audit, lineage and ``why`` read; erasure; the sweep of orphaned candidates."""

    def subject_history(self, tenant: str, subject: str) -> SubjectHistory: ...
    def artifact_history(self, tenant: str, artifact_id: str) -> SubjectHistory: ...
    def erase(self, tenant: str, event_id: str, reason: str, erased_by: str) -> Erased: ...
    def sweep(self, tenant: str, older_than: float | None = None) -> list[Swept]: ...


class Store(
    DetectionStore,
    KeyedStore,
    PolicyStore,
    HistoryStore,
    JobStore,
    KeyStore,
    EvalStore,
    ReleaseStore,
    Protocol,
):
    """Everything the domain asks of a store; ``open_store`` returns one."""

    url: str
    policy: TrustPolicy

    def schema_version(self) -> int: ...
    def close(self) -> None: ...
    def discard(self) -> None:
        """Close, and remove what opening created where the backend created it (a file)."""
        ...

    def reader(self, tenant: str, *, pipelined: bool = False) -> AbstractContextManager[Reader]: ...
    def append(
        self, tenant: str, events: Sequence[NewEvent], progress: Progress | None = None
    ) -> list[Appended]: ...
    def revoke(self, tenant: str, event_id: str, reason: str | None = None) -> OpResult: ...
    def set_trust(
        self, tenant: str, event_id: str, level: str | None, taint: Sequence[str] | None
    ) -> OpResult: ...
    def declare_conflict(self, tenant: str, a: str, b: str, key: str | None = None) -> OpResult: ...
    def resolve_conflict(self, tenant: str, conflict_id: str, winner: str) -> OpResult: ...
    def write_artifact(
        self, tenant: str, artifact: Artifact, items: Sequence[tuple[Event, Sequence[Item]]] = ()
    ) -> None: ...
    def switch(self, tenant: str, artifact_id: str, *, force: bool = False) -> SwitchResult: ...
    def job_head(self, tenant: str, subject: str) -> tuple[Head, bool] | None: ...
    def consolidation_input(self, tenant: str, subject: str) -> SubjectInput | None: ...
    # -- embeddings (store/vectors.py) --
    def set_embedder(self, tenant: str, embedder: EmbedderId) -> int: ...
    def embedder_settings(self, tenant: str) -> tuple[int, EmbedderId] | None: ...
    def pending_embedding(self, tenant: str) -> list[str]: ...
    def embed_pending(
        self,
        tenant: str,
        subject: str,
        embedder: Embedder,
        limit: int | None = None,
        embedded: Advance | None = None,
    ) -> Embedded: ...
    def vectors(
        self, tenant: str, subject: str, ids: Sequence[str], embedder: EmbedderId | None = None
    ) -> dict[str, Vectors]: ...
    def optimize(self) -> list[str]:
        """Maintenance after a bulk load, for the whole database (every tenant): what was
        done, one line each (docs/cli.md, ``memlineage optimize``)."""
        ...

    def parallelism(self) -> int:
        """How many transactions this store runs at once: its connection pool's size (1 for
        SQLite's one connection). ``AsyncMemory`` sizes its thread pool with it."""
        ...


class AsyncStore(Store, Protocol):
    """A store whose statements are awaited on an event loop (store/bridge.py): its
    methods run inside ``run_bridged`` or in a thread, once ``open`` has run on the loop."""

    async def open(self, *, migrate: bool = True, create: bool = True) -> None: ...


@dataclass(frozen=True)
class Embedded:
    """One run of the embedding job over a subject."""

    subject: str
    embedder: int  # the tenant's embedder number the vectors are of (0: none)
    embedded: int  # vectors this run wrote
    through: int  # the watermark after the run
    high_water: int

    @property
    def done(self) -> bool:
        return self.through >= self.high_water

    def to_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "embedder": self.embedder,
            "embedded": self.embedded,
            "through": self.through,
            "high_water": self.high_water,
            "done": self.done,
        }
