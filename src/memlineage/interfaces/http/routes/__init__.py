"""The service's endpoints, one router per resource; ``create_app`` includes them all."""

from __future__ import annotations

from fastapi import APIRouter

from memlineage.interfaces.http.routes import (
    artifacts,
    evaluation,
    events,
    jobs,
    messages,
    release,
    service,
    subjects,
    validity,
)

# The order the endpoints are listed in the OpenAPI document.
ROUTERS: tuple[APIRouter, ...] = (
    service.router,
    events.router,
    messages.router,
    subjects.router,
    artifacts.router,
    validity.router,
    jobs.router,
    evaluation.router,
    release.router,
)

__all__ = ["ROUTERS"]
