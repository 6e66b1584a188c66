"""The FastAPI application: endpoints mirror :class:`memlineage.Memory`, one tenant per key.

- ``Authorization: Bearer KEY``: a missing, unknown or revoked key is 401.
- Every id is looked up inside the key's tenant, so another tenant's subject,
  artifact or event is 404, the same answer as a missing one.
- Errors are JSON ``{"error": {"code", "type", "message"}}`` where ``code`` is
  the command line's exit code for the same failure.
- An answer is the document the command line prints with ``--json``; the
  bodies and documents are described in :mod:`.schemas`.

The endpoints live in :mod:`.routes`, one router per resource; this module
only assembles them with the error handlers and the body limit.
"""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from starlette.routing import Route

from memlineage import __version__
from memlineage.errors import BadInput, DuplicateEventId, MemlineageError, NotFound
from memlineage.interfaces.http.deps import BEARER, Unauthorized
from memlineage.interfaces.http.limits import BodyLimit
from memlineage.interfaces.http.openapi import describe, offline_docs, without_422
from memlineage.interfaces.http.review import review_router
from memlineage.interfaces.http.routes import ROUTERS
from memlineage.interfaces.http.strict_json import StrictJson
from memlineage.operations import metrics
from memlineage.store import open_store
from memlineage.store.protocol import Store

MAX_BODY_BYTES = 5 * 1024 * 1024
MCP_PATH = "/mcp"  # where the MCP server answers, when the mcp extra is installed


def _status_of(exc: MemlineageError) -> int:
    if isinstance(exc, Unauthorized):
        return 401
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, DuplicateEventId):
        return 409
    if isinstance(exc, BadInput):
        return 400
    return 500 if exc.exit_code == 1 else 503


def _error(status: int, exc: Exception, code: int) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    body = {"error": {"code": code, "type": type(exc).__name__, "message": str(exc)}}
    return JSONResponse(body, status_code=status, headers=headers)


async def on_error(_request: Request, exc: MemlineageError) -> JSONResponse:
    return _error(_status_of(exc), exc, exc.exit_code)


async def on_invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
    """A request FastAPI refuses is bad input (400, exit code 2) naming its first field."""
    first = exc.errors()[0] if exc.errors() else {}
    where = ".".join(str(p) for p in first.get("loc", ()))
    bad = BadInput(str(first.get("msg", "invalid request")), field=where or None)
    return _error(400, bad, 2)


def scrape() -> Response:
    """The process's metrics in Prometheus' text format (names: docs/workers.md)."""
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)


def create_app(
    db: str | None = None, *, max_body_bytes: int = MAX_BODY_BYTES, host: str = "127.0.0.1"
) -> Any:
    """The service over the store at ``db`` (the same URLs as ``--db``); ``host``: where it
    is served, which the MCP endpoint's DNS-rebinding protection checks requests against."""
    store: Store = open_store(db)
    mcp_app, mcp_sessions = _mcp_endpoint(store, host) or (None, None)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        try:
            async with AsyncExitStack() as stack:
                if mcp_sessions is not None:
                    await stack.enter_async_context(mcp_sessions())
                yield
        finally:
            store.close()

    app = FastAPI(
        title="memlineage",
        version=__version__,
        description="Memory consolidation for LLM agents, with lineage and a fidelity gate.",
        docs_url=None,  # served by offline_docs, from the package's files
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.store = store
    app.exception_handler(MemlineageError)(on_error)
    app.exception_handler(RequestValidationError)(on_invalid)
    for router in ROUTERS:
        describe(router, BEARER)
        app.include_router(router)
    app.include_router(review_router())
    app.add_middleware(StrictJson)  # inside the body limit, which bounds what it holds
    without_422(app)
    offline_docs(app)
    metrics.attach(store)
    app.add_api_route("/metrics", scrape, include_in_schema=False)  # no key, as /health
    if mcp_app is not None:
        app.router.routes.append(Route(MCP_PATH, endpoint=mcp_app, include_in_schema=False))
    app.state.mcp_path = MCP_PATH if mcp_app is not None else None
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    return app


def _mcp_endpoint(
    store: Store, host: str
) -> tuple[Any, Callable[[], AbstractAsyncContextManager[None]]] | None:
    """The MCP server for ``/mcp`` beside the REST routes, and the SDK's session
    manager the app's lifespan must run, when the ``mcp`` extra is installed (None
    otherwise): one process, one port and the same keys for both."""
    if importlib.util.find_spec("mcp") is None:
        return None
    from memlineage.interfaces import mcp_server

    return mcp_server.endpoint(store, host=host, path=MCP_PATH)
