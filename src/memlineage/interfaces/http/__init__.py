"""The HTTP service: the library's operations over HTTP, one tenant per API key.

``create_app(db)`` builds the FastAPI application; ``memlineage serve`` runs
it with uvicorn on 127.0.0.1. No logic lives here: every endpoint calls one
method of :class:`memlineage.Memory`.
"""

from memlineage.interfaces.http.app import create_app

__all__ = ["create_app"]
