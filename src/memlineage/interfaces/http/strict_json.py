"""JSON request bodies read as the command line reads JSON: a key twice in one object is
refused (400, the service's error shape) instead of the last one silently winning.

Plain ASGI middleware inside the body limit, so the body it holds is bounded; it
replays the body to the application unchanged. Only the check of duplicate keys is
made here: other malformed JSON is left to the application's own 400.
"""

from __future__ import annotations

import json

from memlineage.errors import BadInput
from memlineage.interfaces.http.limits import ASGIApp, Message, Receive, Scope, Send
from memlineage.raw.ingest import load_json


class StrictJson:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        kind = dict(scope.get("headers") or []).get(b"content-type", b"")
        if not kind.split(b";")[0].strip().endswith(b"json"):
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request" or not message.get("more_body", False):
                break
        problem = _duplicate_key(b"".join(m.get("body", b"") for m in messages))
        if problem is not None:
            await _refuse(send, problem)
            return

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


def _duplicate_key(body: bytes) -> BadInput | None:
    """The error of a body holding a key twice in one object; None for anything else."""
    try:
        load_json(body.decode("utf-8"))
    except BadInput as exc:
        return exc if exc.reason == "appears twice in one object" else None
    except UnicodeDecodeError:
        return None
    return None


async def _refuse(send: Send, exc: BadInput) -> None:
    error = {"code": 2, "type": "BadInput", "message": f"request body: {exc}"}
    body = json.dumps({"error": error}).encode()
    headers = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": body})
