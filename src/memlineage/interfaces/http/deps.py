"""What every endpoint depends on: the store, the key's tenant and its :class:`Memory`.

A route takes ``memory: Mem``; the tenant comes from ``Authorization: Bearer
KEY`` (a missing, unknown or revoked key is 401), so every id an endpoint
looks up is looked up inside that tenant.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from memlineage.api import Memory
from memlineage.errors import MemlineageError, NotFound
from memlineage.operations.keys import tenant_of
from memlineage.store.protocol import Store


class Unauthorized(MemlineageError):
    exit_code = 2


def store_of(request: Request) -> Store:
    """The store the application was created over (set by ``create_app``)."""
    store: Store = request.app.state.store
    return store


# Declares the bearer scheme in the OpenAPI document (Swagger UI's Authorize button);
# auto_error=False so a missing key is answered by this module's 401, in the error shape.
BEARER = HTTPBearer(
    auto_error=False,
    scheme_name="apiKey",
    description="A tenant's API key (`memlineage keys create`): `Authorization: Bearer KEY`.",
)


def _tenant(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)],
) -> str:
    """The tenant of the presented key; 401 for a missing, unknown or revoked one."""
    key = credentials.credentials.strip() if credentials is not None else ""
    found = tenant_of(store_of(request), key) if key else None
    if found is None:
        raise Unauthorized("a valid API key is required: Authorization: Bearer KEY")
    return found


def _memory(request: Request, tenant: Annotated[str, Depends(_tenant)]) -> Memory:
    # As the command line and MCP do: a client that adds and then recalls sees the
    # contradictions its add made, with no worker behind the service.
    return Memory(tenant=tenant, store=store_of(request), detect_after_add=True)


Mem = Annotated[Memory, Depends(_memory)]


def known_subject(memory: Memory, subject: str) -> None:
    """404 for a subject the tenant has no events of, the same answer as another tenant's."""
    if not memory.has_subject(subject):
        raise NotFound(f"no subject {subject!r}", field="subject")
