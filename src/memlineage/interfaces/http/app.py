"""The FastAPI application: endpoints mirror :class:`memlineage.Memory`, one tenant per key.

- ``Authorization: Bearer KEY``: a missing, unknown or revoked key is 401.
- Every id is looked up inside the key's tenant, so another tenant's subject,
  artifact or event is 404, the same answer as a missing one.
- Errors are JSON ``{"error": {"code", "type", "message"}}`` where ``code`` is
  the command line's exit code for the same failure.
- An answer is the document the command line prints with ``--json``; the
  bodies and documents are described in :mod:`.schemas`.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse

from memlineage import __version__
from memlineage.api import Memory
from memlineage.errors import BadInput, MemlineageError, NotFound
from memlineage.interfaces.http.limits import BodyLimit
from memlineage.interfaces.http.review import review_router
from memlineage.interfaces.http.schemas import (
    CertificationOut,
    ConfigOut,
    ConflictIn,
    ConsolidateIn,
    DecisionIn,
    DetectionOut,
    DismissIn,
    EraseIn,
    EvalIn,
    EventsIn,
    ExtractOut,
    JobOut,
    JobSettingsIn,
    JobSettingsOut,
    JobsIn,
    ModeIn,
    PolicyOut,
    PolicyVersionOut,
    ResolveIn,
    RevokeIn,
    RunJobsIn,
    RunJobsOut,
    SweepIn,
    SweepOut,
    TemporalIn,
    TemporalOut,
    TrustChangeOut,
    TrustIn,
    TrustPolicyIn,
    VerifyIn,
)
from memlineage.meaning.policy import versioned_json
from memlineage.operations.evaluate import gold_facts
from memlineage.operations.keys import tenant_of
from memlineage.operations.release import configs_json
from memlineage.operations.worker import drained_json
from memlineage.recall.prompt import render
from memlineage.store import open_store
from memlineage.store.base import SqlStore
from memlineage.store.policies import trust_change_json

MAX_BODY_BYTES = 5 * 1024 * 1024


class Unauthorized(MemlineageError):
    exit_code = 2


def _store(request: Request) -> SqlStore:
    store: SqlStore = request.app.state.store
    return store


def _tenant(request: Request, authorization: Annotated[str | None, Header()] = None) -> str:
    """The tenant of the presented key; 401 for a missing, unknown or revoked one."""
    scheme, _, key = (authorization or "").partition(" ")
    found = tenant_of(_store(request), key.strip()) if scheme.lower() == "bearer" else None
    if found is None:
        raise Unauthorized("a valid API key is required: Authorization: Bearer KEY")
    return found


def _memory(request: Request, tenant: Annotated[str, Depends(_tenant)]) -> Memory:
    return Memory(tenant=tenant, store=_store(request))


Mem = Annotated[Memory, Depends(_memory)]


def _status_of(exc: MemlineageError) -> int:
    if isinstance(exc, Unauthorized):
        return 401
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, BadInput):
        return 400
    return 500 if exc.exit_code == 1 else 503


def _error(status: int, exc: Exception, code: int) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    body = {"error": {"code": code, "type": type(exc).__name__, "message": str(exc)}}
    return JSONResponse(body, status_code=status, headers=headers)


def create_app(db: str | None = None, *, max_body_bytes: int = MAX_BODY_BYTES) -> Any:
    """The service over the store at ``db`` (the same URLs as ``--db``)."""
    store: SqlStore = open_store(db)
    app = FastAPI(
        title="memlineage",
        version=__version__,
        description="Memory consolidation for LLM agents, with lineage and a fidelity gate.",
    )
    app.state.store = store

    @app.exception_handler(MemlineageError)
    async def on_error(_request: Request, exc: MemlineageError) -> JSONResponse:
        return _error(_status_of(exc), exc, exc.exit_code)

    @app.exception_handler(RequestValidationError)
    async def on_invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        bad = BadInput(str(first.get("msg", "invalid request")), field=where or None)
        return _error(400, bad, 2)

    def known_subject(memory: Memory, subject: str) -> None:
        if not memory.has_subject(subject):
            raise NotFound(f"no subject {subject!r}", field="subject")

    @app.get("/health")
    def health() -> dict[str, Any]:
        """Liveness and the store's schema version (no key needed)."""
        return {"status": "ok", "version": __version__, "schema_version": store.schema_version()}

    @app.post("/v1/events")
    def add(body: EventsIn, memory: Mem) -> dict[str, Any]:
        """Append events; every event is validated first and a bad one stores nothing."""
        appended = memory.add(body.events)
        created = sum(a.created for a in appended)
        return {
            "appended": created,
            "existing": len(appended) - created,
            "events": [a.__dict__ for a in appended],
        }

    @app.post("/v1/extract", response_model=ExtractOut)
    def extract(body: EventsIn, memory: Mem) -> dict[str, Any]:
        """The must-preserve items of the posted events, validated as `add` does; nothing
        is stored (`extract`)."""
        return {"items": [i.to_json() for i in memory.extract(body.events)]}

    @app.post("/v1/events/{event_id}/revoke")
    def revoke(event_id: str, body: RevokeIn, memory: Mem) -> dict[str, Any]:
        return memory.revoke(event_id, reason=body.reason).to_json()

    @app.post("/v1/events/{event_id}/trust")
    def trust(event_id: str, body: TrustIn, memory: Mem) -> dict[str, Any]:
        taint = [] if body.clear_taint else body.taint
        return memory.trust(event_id, level=body.level, taint=taint).to_json()

    @app.post("/v1/conflicts")
    def conflict(body: ConflictIn, memory: Mem) -> dict[str, Any]:
        return memory.conflict(body.a, body.b, key=body.key).to_json()

    @app.post("/v1/conflicts/{conflict_id}/resolve")
    def resolve(conflict_id: str, body: ResolveIn, memory: Mem) -> dict[str, Any]:
        return memory.resolve(conflict_id, winner=body.winner).to_json()

    @app.post("/v1/subjects/{subject}/consolidate")
    def consolidate(subject: str, body: ConsolidateIn, memory: Mem) -> dict[str, Any]:
        known_subject(memory, subject)
        return memory.consolidate(subject, force=body.force, budget=body.budget).to_json()

    @app.get("/v1/subjects/{subject}/recall")
    def recall(
        subject: str,
        memory: Mem,
        query: Annotated[str | None, Query(max_length=2000)] = None,
        budget: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
        include_claims: bool = False,
    ) -> dict[str, Any]:
        """With a budget, only what it allows (the context); claims when asked."""
        known_subject(memory, subject)
        recalled = memory.recall(subject, query=query, budget=budget)
        return recalled.to_json(include_claims=include_claims)

    @app.get("/v1/recall")
    def recall_several(
        memory: Mem,
        subject: Annotated[list[str], Query(min_length=1, max_length=100)],
        query: Annotated[str | None, Query(max_length=2000)] = None,
        budget: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
        include_claims: bool = False,
    ) -> dict[str, Any]:
        """`recall` of several subjects (`?subject=a&subject=b`) sharing one budget."""
        for name in subject:
            known_subject(memory, name)
        recalled = memory.recall(query=query, budget=budget, subjects=subject)
        return recalled.to_json(include_claims=include_claims)

    @app.get("/v1/subjects/{subject}/artifacts")
    def artifacts(subject: str, memory: Mem) -> list[dict[str, Any]]:
        known_subject(memory, subject)
        return [a.to_json() for a in memory.artifacts(subject)]

    @app.get("/v1/artifacts")
    def tenant_artifacts(memory: Mem) -> list[dict[str, Any]]:
        """Every artifact of the tenant (`artifacts` without a subject)."""
        return [a.to_json() for a in memory.artifacts()]

    @app.get("/v1/artifacts/{artifact_id}")
    def artifact(artifact_id: str, memory: Mem) -> dict[str, Any]:
        return memory.artifact(artifact_id).to_json()

    @app.get("/v1/subjects")
    def subjects(memory: Mem) -> list[str]:
        return memory.subjects()

    @app.get("/v1/subjects/{subject}/context", response_class=PlainTextResponse)
    def context(
        subject: str,
        memory: Mem,
        query: Annotated[str | None, Query(max_length=2000)] = None,
        budget: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
        format: Annotated[str, Query(pattern="^(markdown|text)$")] = "markdown",
    ) -> str:
        """The recall rendered as text an agent puts in its prompt."""
        known_subject(memory, subject)
        return render(memory.recall(subject, query=query, budget=budget), format)

    @app.post("/v1/events/{event_id}/erase")
    def erase(event_id: str, body: EraseIn, memory: Mem) -> dict[str, Any]:
        return memory.erase(event_id, body.reason, body.by).to_json()

    @app.post("/v1/conflicts/{conflict_id}/dismiss")
    def dismiss(conflict_id: str, body: DismissIn, memory: Mem) -> dict[str, Any]:
        return memory.dismiss(conflict_id, body.reason).to_json()

    @app.get("/v1/artifacts/{artifact_id}/lineage")
    def lineage(
        artifact_id: str,
        memory: Mem,
        format: Annotated[str, Query(pattern="^(prov-json|dot|mermaid)$")] = "prov-json",
    ) -> Any:
        memory.artifact(artifact_id)  # 404 for another tenant's
        doc = memory.lineage(artifact_id, format)
        return doc if isinstance(doc, dict) else PlainTextResponse(doc)

    @app.get("/v1/subjects/{subject}/why")
    def why(
        subject: str, memory: Mem, q: Annotated[str, Query(min_length=1, max_length=2000)]
    ) -> dict[str, Any]:
        known_subject(memory, subject)
        return memory.why(subject, q).to_json()

    @app.get("/v1/subjects/{subject}/audit")
    def audit(subject: str, memory: Mem) -> dict[str, Any]:
        known_subject(memory, subject)
        return memory.audit(subject).to_json()

    @app.post("/v1/subjects/{subject}/detect", response_model=DetectionOut)
    def detect(subject: str, memory: Mem) -> dict[str, Any]:
        """Run the subject's contradiction detection now (`detect`); it runs after every add."""
        return memory.detect(subject).to_json()

    @app.get("/v1/policy", response_model=PolicyOut)
    def policy(memory: Mem) -> dict[str, Any]:
        """The tenant's temporal and trust policies (`policy show`)."""
        return memory.policy()

    @app.get("/v1/policy/history", response_model=list[PolicyVersionOut])
    def policy_history(memory: Mem) -> list[dict[str, Any]]:
        """Every stored policy version (`policy history`); version 1 is the built-in default."""
        return [v.to_json() for v in memory.policy_history()]

    @app.post("/v1/policy/temporal", response_model=TemporalOut)
    def temporal_policy(body: TemporalIn, memory: Mem) -> dict[str, Any]:
        """A new temporal policy version (`policy temporal`), for conflicts detected from now."""
        return versioned_json(memory.set_temporal_policy(body.rules, body.reason))

    @app.post("/v1/policy/trust", response_model=TrustChangeOut)
    def trust_policy(body: TrustPolicyIn, memory: Mem) -> dict[str, Any]:
        """A new trust policy version, rolled out to every subject in batches (`policy trust`)."""
        stored, rounds = memory.set_trust_policy(
            body.admit,
            body.block,
            block_any=body.block_any_taint,
            reason=body.reason,
            batch=body.batch,
        )
        return trust_change_json(stored, rounds)

    @app.post("/v1/sweep", response_model=SweepOut)
    def sweep(body: SweepIn, memory: Mem) -> dict[str, Any]:
        """Fail the tenant's candidates orphaned by crashed runs (`sweep`)."""
        return {"failed": [s.to_json() for s in memory.sweep(body.older_than)]}

    @app.get("/v1/jobs", response_model=list[JobOut])
    def jobs(
        memory: Mem, state: Annotated[str | None, Query(max_length=20)] = None
    ) -> list[dict[str, Any]]:
        """The tenant's job queue (`jobs [--state S]`)."""
        return [j.to_json() for j in memory.jobs(state)]

    @app.post("/v1/jobs", response_model=list[JobOut])
    def queue_jobs(body: JobsIn, memory: Mem) -> list[dict[str, Any]]:
        for subject in body.subjects:
            known_subject(memory, subject)
        return [j.to_json() for j in memory.queue(body.subjects, force=body.force)]

    @app.post("/v1/jobs/run", response_model=RunJobsOut)
    def run_jobs(body: RunJobsIn, memory: Mem) -> dict[str, Any]:
        """Run up to `max_jobs` of the tenant's due jobs now, as `worker --once` would.

        A deployment runs `memlineage worker` processes; this is a bounded run for
        a tenant without one, or for a test."""
        return drained_json(memory.work(limit=body.max_jobs))

    @app.post("/v1/jobs/schedule", response_model=list[JobOut])
    def schedule_jobs(memory: Mem) -> list[dict[str, Any]]:
        """Queue every subject whose summary misses events or is not fresh (`jobs schedule`)."""
        return [j.to_json() for j in memory.schedule()]

    @app.get("/v1/jobs/settings", response_model=JobSettingsOut)
    def job_settings(memory: Mem) -> dict[str, Any]:
        """The tenant's tail trigger (`jobs settings`)."""
        return {"tail_threshold": memory.tail_threshold}

    @app.post("/v1/jobs/settings", response_model=JobSettingsOut)
    def set_job_settings(body: JobSettingsIn, memory: Mem) -> dict[str, Any]:
        """Set the tail trigger (`jobs settings --tail N`; 0 turns it off)."""
        memory.set_tail_threshold(body.tail_threshold)
        return {"tail_threshold": memory.tail_threshold}

    @app.post("/v1/verify", response_model=CertificationOut)
    def verify(body: VerifyIn, memory: Mem) -> dict[str, Any]:
        """Certify a generator on the fixed samples and mutants (`verify`); `certified` is
        false where the command line exits 1."""
        return memory.verify(memory.generator(body.generator)).to_json()

    @app.post("/v1/eval")
    def evaluate(body: EvalIn, memory: Mem) -> dict[str, Any]:
        gold = gold_facts(body.gold)
        return memory.eval(body.subjects, sample=body.sample, gold=gold, save=body.save).to_json()

    @app.get("/v1/release")
    def release_mode(memory: Mem) -> dict[str, Any]:
        return {"mode": memory.release_mode()}

    @app.post("/v1/release")
    def set_release_mode(body: ModeIn, memory: Mem) -> dict[str, Any]:
        return {"mode": memory.release_mode(body.mode)}

    @app.get("/v1/release/configs", response_model=list[ConfigOut])
    def release_configs(memory: Mem) -> list[dict[str, Any]]:
        """The tenant's generator configuration versions (`release configs`)."""
        return configs_json(memory.configs())

    @app.post("/v1/release/fail")
    def release_fail(memory: Mem) -> dict[str, Any]:
        return memory.release_fail()

    @app.get("/v1/reviews")
    def reviews(
        memory: Mem, everything: Annotated[bool, Query(alias="all")] = False
    ) -> list[dict[str, Any]]:
        """The candidates waiting for review; `?all=true`: decided ones too (`review list`)."""
        return memory.reviews(None if everything else "pending")

    @app.get("/v1/reviews/{artifact_id}")
    def review(artifact_id: str, memory: Mem) -> dict[str, Any]:
        return memory.review(artifact_id)

    @app.post("/v1/reviews/{artifact_id}/approve")
    def approve(artifact_id: str, body: DecisionIn, memory: Mem) -> dict[str, Any]:
        return memory.approve(artifact_id, body.reviewer, body.reason).to_json()

    @app.post("/v1/reviews/{artifact_id}/reject")
    def reject(artifact_id: str, body: DecisionIn, memory: Mem) -> dict[str, Any]:
        return memory.reject(artifact_id, body.reviewer, body.reason).to_json()

    app.include_router(review_router())
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    app.router.add_event_handler("shutdown", store.close)
    return app
