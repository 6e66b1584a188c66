"""The service's own state: liveness and schema version, the one route without a key."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from memlineage import __version__
from memlineage.interfaces.http.deps import store_of

router = APIRouter()


@router.get("/health")
def health(request: Request) -> dict[str, Any]:
    """Liveness and the store's schema version (no key needed)."""
    version = store_of(request).schema_version()
    return {"status": "ok", "version": __version__, "schema_version": version}
