"""The review page: the shadow queue of a tenant, a candidate beside the published summary.

Server-rendered (Jinja2), no build step, no script. A reviewer signs in with
the tenant's API key and a name; the session is a signed cookie
(``HttpOnly``, ``SameSite=Strict``) and every form carries a CSRF token
derived from it, so a page of another site cannot approve anything. The
session names its key, and every request checks that key is still valid:
revoking it ends the session at once. The reviewer's name is recorded with
each decision.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
from importlib import resources
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from memlineage.api import Memory
from memlineage.errors import MemlineageError
from memlineage.interfaces.http.lineage_svg import lineage_svg
from memlineage.interfaces.http.summary_diff import summary_diff
from memlineage.model import ArtifactStatus
from memlineage.operations.keys import key_active, key_of

COOKIE = "memlineage_review"
SESSION_SECONDS = 8 * 3600


def _templates() -> Jinja2Templates:
    folder = resources.files("memlineage.interfaces.http").joinpath("templates")
    return Jinja2Templates(directory=str(folder))


class Sessions:
    """Signed session cookies and the CSRF tokens derived from them."""

    def __init__(self, secret: bytes | None = None) -> None:
        configured = os.environ.get("MEMLINEAGE_SESSION_SECRET")
        self.secret = secret or (configured.encode() if configured else secrets.token_bytes(32))

    def _sign(self, payload: bytes) -> str:
        return hmac.new(self.secret, payload, hashlib.sha256).hexdigest()

    def issue(self, tenant: str, key_id: str, reviewer: str) -> str:
        expires = int(time.time()) + SESSION_SECONDS
        body = json.dumps({"t": tenant, "k": key_id, "r": reviewer, "x": expires})
        payload = base64.urlsafe_b64encode(body.encode()).decode()
        return f"{payload}.{self._sign(payload.encode())}"

    def read(self, cookie: str | None) -> dict[str, Any] | None:
        if not cookie or "." not in cookie:
            return None
        payload, signature = cookie.rsplit(".", 1)
        if not hmac.compare_digest(signature, self._sign(payload.encode())):
            return None
        try:
            session: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload))
        except ValueError:
            return None
        return session if session.get("x", 0) > time.time() else None

    def csrf(self, cookie: str) -> str:
        return self._sign(b"csrf:" + cookie.encode())

    def csrf_ok(self, cookie: str | None, token: str) -> bool:
        return cookie is not None and hmac.compare_digest(self.csrf(cookie), token)


class Pages:
    """What every review page needs: the templates, the sessions, the signed-in reviewer."""

    def __init__(self, sessions: Sessions) -> None:
        self.templates = _templates()
        self.sessions = sessions

    def render(
        self, request: Request, name: str, status: int = 200, **context: Any
    ) -> HTMLResponse:
        return self.templates.TemplateResponse(request, name, context, status_code=status)

    def signed_in(self, request: Request) -> tuple[Memory, dict[str, Any], str] | None:
        """The tenant's memory, the session and its cookie; None when nobody is signed in."""
        cookie = request.cookies.get(COOKIE)
        session = self.sessions.read(cookie)
        if session is None or cookie is None:
            return None
        store = request.app.state.store
        if not key_active(store, session["t"], str(session.get("k", ""))):
            return None  # the key was revoked (or the cookie predates key-bound sessions)
        return Memory(tenant=session["t"], store=store), session, cookie


def _sign_in(router: APIRouter, pages: Pages) -> None:
    @router.get("/login")
    def login_page(request: Request) -> HTMLResponse:
        return pages.render(request, "login.html", error=None)

    @router.post("/login")
    def login(
        request: Request, key: Annotated[str, Form()], reviewer: Annotated[str, Form()]
    ) -> Response:
        found = key_of(request.app.state.store, key.strip())
        name = reviewer.strip()
        if found is None or not name or len(name) > 100:
            error = "a valid API key and a name are needed"
            return pages.render(request, "login.html", 401, error=error)
        key_id, tenant = found
        response = RedirectResponse("/review", status_code=303)
        response.set_cookie(
            COOKIE,
            pages.sessions.issue(tenant, key_id, name),
            httponly=True,
            samesite="strict",
            max_age=SESSION_SECONDS,
        )
        return response


def _queue(router: APIRouter, pages: Pages) -> None:
    @router.get("")
    def queue(request: Request) -> Response:
        found = pages.signed_in(request)
        if found is None:
            return RedirectResponse("/review/login", status_code=303)
        memory, session, _ = found
        return pages.render(
            request,
            "queue.html",
            tenant=memory.tenant,
            reviewer=session["r"],
            pending=memory.reviews(),
            decided=memory.reviews(None),
            mode=memory.release_mode(),
        )


def _candidate(router: APIRouter, pages: Pages) -> None:
    @router.get("/{artifact_id:path}/show")
    def show(request: Request, artifact_id: str) -> Response:
        found = pages.signed_in(request)
        if found is None:
            return RedirectResponse("/review/login", status_code=303)
        memory, session, cookie = found
        try:
            sheet = memory.review(artifact_id)
        except MemlineageError as exc:
            return pages.render(request, "error.html", 404, message=str(exc))
        artifact = memory.artifact(artifact_id)
        events = {e.id: e for e in memory.events(artifact.subject)}
        pending = any(r["artifact_id"] == artifact_id for r in memory.reviews())
        published = sheet.get("published_summary")
        return pages.render(
            request,
            "candidate.html",
            sheet=sheet,
            stale=_why_stale(memory, artifact.subject, sheet.get("published")),
            diff=summary_diff(published, sheet.get("candidate_summary") or "")
            if published
            else None,
            artifact_id=artifact_id,
            reviewer=session["r"],
            csrf=pages.sessions.csrf(cookie),
            pending=pending,
            graph=lineage_svg(artifact, events),
        )


def _why_stale(memory: Memory, subject: str, published: str | None) -> str | None:
    """Why recall no longer serves the published summary; None while it does."""
    if published is None:
        return None
    status = memory.artifact(published).status
    recalled = memory.recall(subject)
    if status is ArtifactStatus.PUBLISHED and recalled.artifact_id == published:
        return None
    return f"status {status}; recall no longer serves it ({recalled.reason})"


def _decision(router: APIRouter, pages: Pages) -> None:
    @router.post("/{artifact_id:path}/decide")
    def decide(
        request: Request,
        artifact_id: str,
        action: Annotated[str, Form()],
        csrf: Annotated[str, Form()],
        reason: Annotated[str, Form()] = "",
    ) -> Response:
        found = pages.signed_in(request)
        if found is None:
            return RedirectResponse("/review/login", status_code=303)
        memory, session, cookie = found
        if not pages.sessions.csrf_ok(cookie, csrf) or action not in ("approve", "reject"):
            expired = "the form expired; reload the page"
            return pages.render(request, "error.html", 403, message=expired)
        try:
            decision = getattr(memory, action)(artifact_id, session["r"], reason or None)
        except MemlineageError as exc:
            return pages.render(request, "error.html", 400, message=str(exc))
        return pages.render(request, "decided.html", decision=decision.to_json())


def review_router(sessions: Sessions | None = None) -> APIRouter:
    """The pages under ``/review``; left out of the OpenAPI document (they answer HTML)."""
    router = APIRouter(prefix="/review", include_in_schema=False)
    pages = Pages(sessions or Sessions())
    for add in (_sign_in, _queue, _candidate, _decision):
        add(router, pages)
    return router
