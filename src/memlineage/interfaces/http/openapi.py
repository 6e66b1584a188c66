"""The service's self-description: every operation summarised and described, the error
responses it really gives (in the error shape), bearer security, and ``/docs`` served
from the package's own Swagger UI files so that it works without a network.

FastAPI would declare every operation with parameters as answering 422 with its own
validation document; this service answers 400 in the error shape instead
(``app.on_invalid``), so the 422 entries and their schemas are taken out of the
document.
"""

from __future__ import annotations

import inspect
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field
from swagger_ui_bundle import swagger_ui_path

ASSETS = "/docs/assets"

# Routes whose body or query names ids that may be missing (the others name them in the path).
IDS_OUTSIDE_THE_PATH = {("POST", "/v1/conflicts"), ("POST", "/v1/jobs"), ("GET", "/v1/recall")}
# Only appending can meet an id already stored with other content.
CONFLICTING = {("POST", "/v1/events")}


class ErrorDetail(BaseModel):
    code: int = Field(description="the command line's exit code for the same failure")
    type: str = Field(description="the error's name, e.g. BadInput, NotFound")
    message: str = Field(description="one line naming the field (and line) at fault")


class ErrorOut(BaseModel):
    error: ErrorDetail


def _error(description: str) -> dict[str, Any]:
    return {"model": ErrorOut, "description": description}


def declare_errors(route: APIRoute, needs_key: bool) -> None:
    """The error responses ``route`` can give, each in the error shape."""
    method = next(iter(route.methods or {"GET"}))
    has_input = bool(route.dependant.path_params or route.dependant.query_params)
    answers: dict[int | str, dict[str, Any]] = {}
    if has_input or route.body_field is not None:
        answers[400] = _error("bad input: a field or value the contract refuses")
    if needs_key:
        answers[401] = _error("a missing, unknown or revoked API key")
    if route.dependant.path_params or (method, route.path) in IDS_OUTSIDE_THE_PATH:
        answers[404] = _error("not found in the key's tenant (another tenant's is missing too)")
    if (method, route.path) in CONFLICTING:
        answers[409] = _error("an event id already stored with other content")
    if route.body_field is not None:
        answers[413] = _error("a request body over the service's limit")
    answers[503] = _error("the store cannot be used")
    route.responses = {**answers, **route.responses}


def summarise(route: APIRoute) -> None:
    """Summary: the docstring's first paragraph; description: the rest, else the same."""
    doc = inspect.cleandoc(route.endpoint.__doc__ or "")
    first, _, rest = doc.partition("\n\n")
    route.summary = route.summary or " ".join(first.split()).rstrip(".")
    route.description = rest.strip() or " ".join(first.split())


def describe(router: APIRouter, key: Any) -> None:
    """Describe every route of ``router``; ``key`` is the bearer-key dependency.

    Done on each router before the application includes it; doing it again is a no-op."""
    for route in router.routes:
        if isinstance(route, APIRoute) and route.include_in_schema:
            keyed = any(dep.call is key for dep in _all(route.dependant))
            declare_errors(route, keyed)
            summarise(route)


def without_422(app: FastAPI) -> None:
    """The OpenAPI document without FastAPI's 422 answers, which this service never gives."""
    app.openapi = lambda: _document(app)  # type: ignore[method-assign]


def _all(dependant: Any) -> list[Any]:
    """Every dependency of ``dependant``, however deep."""
    found = list(dependant.dependencies)
    for sub in dependant.dependencies:
        found += _all(sub)
    return found


def _document(app: FastAPI) -> dict[str, Any]:
    if app.openapi_schema is None:
        doc = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
        )
        error = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}
        for operations in doc.get("paths", {}).values():
            for operation in operations.values():
                answers = operation.get("responses", {})
                answers.pop("422", None)
                for status, answer in answers.items():
                    if not status.startswith("2"):
                        # JSON even where the route answers text (context, lineage pictures)
                        answer["content"] = error
        schemas = doc.get("components", {}).get("schemas", {})
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        app.openapi_schema = doc
    return app.openapi_schema


def offline_docs(app: FastAPI) -> None:
    """``/docs`` with Swagger UI's script, style and icon served by this service."""
    app.mount(ASSETS, StaticFiles(directory=str(swagger_ui_path)), name="swagger-ui")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=f"{app.title} API",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon-32x32.png",
            # no badge from the public validator service: the page makes no outside request
            swagger_ui_parameters={"validatorUrl": None, "persistAuthorization": True},
        )
