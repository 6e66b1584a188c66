"""The service's request bodies and response documents, as the OpenAPI spec shows them.

A response model has exactly the keys of the library's ``to_json`` (the command
line's ``--json`` document) and forbids others: a key added in the library and
not here fails the service's tests instead of vanishing from the answer.
Names in camelCase are those of the JSON documents (PROV and manifest style).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memlineage.consolidation.generators.config import GENERATORS
from memlineage.strings import check_strings

# -- request bodies --


class In(BaseModel):
    """A request body whose strings are checked as the library checks them (memlineage.strings),
    named by their JSON path: a lone surrogate or NUL is a 400, never a 500."""

    @model_validator(mode="before")
    @classmethod
    def _valid_strings(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name, value in data.items():
                if name != "events":  # events are checked by the library, which names the line
                    check_strings(value, str(name))
        return data


class EventsIn(In):
    events: list[dict[str, Any]] = Field(description="event objects, as one JSONL line each")


class RevokeIn(In):
    reason: str | None = None


class TrustIn(In):
    level: str | None = None
    taint: list[str] | None = None
    clear_taint: bool = False


class ConflictIn(In):
    a: str
    b: str
    key: str | None = None


class ResolveIn(In):
    winner: str


class ConsolidateIn(In):
    force: bool = False
    budget: int | None = Field(default=None, ge=1, le=1_000_000)


class EraseIn(In):
    reason: str = Field(min_length=1, max_length=2000)
    by: str = Field(default="http", min_length=1, max_length=200)


class DismissIn(In):
    reason: str | None = None


class DecisionIn(In):
    reviewer: str = Field(min_length=1, max_length=100)
    reason: str | None = None


class JobsIn(In):
    subjects: list[str] = Field(min_length=1, max_length=1000)
    force: bool = False


class EvalIn(In):
    subjects: list[str] | None = None
    sample: int | None = Field(default=None, ge=1)
    gold: list[dict[str, Any]] = Field(
        default_factory=list,
        max_length=10_000,
        description="gold facts {event, key?, value, unit?, polarity?}, as lines of --gold",
    )
    save: bool = Field(default=True, description="store this run (false: --no-save)")


class ModeIn(In):
    mode: str


class VerifyIn(In):
    generator: str | None = Field(
        default=None,
        max_length=100,
        description=f"{' or '.join(GENERATORS)}; default: the tenant's configured generator."
        " Its endpoint and model come from the server's configuration, never from a request",
    )


class TemporalIn(In):
    rules: list[str] = Field(
        min_length=1,
        max_length=100,
        description="KIND=RULE changes, RULE keep or latest-wins; * is the default kind",
    )
    reason: str | None = Field(default=None, max_length=2000)


class TrustPolicyIn(In):
    admit: list[str] | None = Field(default=None, description="admitted trust levels")
    block: list[str] | None = Field(
        default=None, description="taint labels that quarantine (omitted: any label does)"
    )
    block_any_taint: bool = False
    batch: int = Field(default=100, ge=1, le=10_000, description="subjects per batch")
    reason: str | None = Field(default=None, max_length=2000)


class SweepIn(In):
    older_than: float | None = Field(
        default=None, ge=0, description="also fail candidates older than this many seconds"
    )


class RunJobsIn(In):
    max_jobs: int = Field(default=10, ge=1, le=100, description="run at most this many jobs")


class JobSettingsIn(In):
    tail_threshold: int = Field(
        ge=0, le=1_000_000_000, description="queue past this many unconsolidated events (0: off)"
    )


# -- response documents --


class Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ItemOut(Out):
    id: str
    source: str
    kind: str
    key: str
    value: bool | int | float | str
    unit: str | None
    polarity: bool


class ExtractOut(Out):
    items: list[ItemOut]


class RowOut(Out):
    sample: str
    check: str
    passed: bool
    attempts: int
    repairs: int
    fallback: str | None
    tokens: int
    latencyMs: float
    problems: list[str]


class TotalsOut(Out):
    rows: int
    passed: int
    passRate: float
    repairs: int
    fallbacks: int
    tokens: int
    latencyMs: float


class CertificationOut(Out):
    certified: bool
    generator: dict[str, Any]
    failedSamples: list[str]
    totals: TotalsOut
    rows: list[RowOut]


class TemporalOut(Out):
    version: int
    rules: dict[str, str]
    default: str


class TrustOut(Out):
    version: int
    admittedTrust: list[str]
    blockedTaints: list[str] | None


class PolicyOut(Out):
    temporal: TemporalOut
    trust: TrustOut


class PolicyVersionOut(Out):
    name: str
    version: int
    body: dict[str, Any]
    reason: str | None
    recorded_at: str


class AffectedOut(Out):
    subject: str
    epoch: int
    stale: list[str]


class BatchOut(Out):
    version: int
    applied: list[str]
    affected: list[AffectedOut]
    remaining: int


class TrustChangeOut(TrustOut):
    batches: list[BatchOut]
    remaining: int


class SweptOut(Out):
    subject: str
    artifact_id: str
    reason: str


class SweepOut(Out):
    failed: list[SweptOut]


class DetectedOut(Out):
    conflict_id: str
    a: str
    b: str
    key: str
    rule: str
    kind: str
    resolution: str
    winner: str | None
    stale: list[str]


class DetectionOut(Out):
    subject: str
    detected_through: int
    conflicts: list[DetectedOut]


class JobOut(Out):
    tenant: str
    subject: str
    state: str
    reason: str
    detail: str | None
    force: bool
    rerun: bool
    due: str
    attempts: int
    token: int
    lease_owner: str | None
    queued_at: str
    started_at: str | None
    finished_at: str | None
    last_error: str | None
    last_outcome: str | None
    last_artifact: str | None
    lease_until: str | None


class JobReportOut(Out):
    ts: str
    event: str
    worker: str
    tenant: str
    subject: str
    token: int
    attempt: int
    outcome: str
    state: str | None
    artifact_id: str | None
    artifact_status: str | None
    duration_ms: float
    error: str | None


class RunJobsOut(Out):
    jobs: int = Field(description="jobs run, as `memlineage worker --json` counts them")
    outcomes: dict[str, int]
    reports: list[JobReportOut] = Field(description="each job's line of the worker's log")


class JobSettingsOut(Out):
    tail_threshold: int


class ConfigOut(Out):
    version: int
    config: dict[str, Any]
    created_at: str
