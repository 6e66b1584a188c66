"""Chat messages: an agent's ``[{role, content, name}]`` list appended as events."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from memlineage.interfaces.http.deps import Mem

router = APIRouter()


class MessagesIn(BaseModel):
    messages: list[Any] = Field(
        description="chat messages {role: user|assistant|tool|system, content, name?, at?};"
        " system messages are skipped"
    )
    thread: str | None = Field(default=None, description="the conversation; part of the ids")
    at: str | None = Field(
        default=None, description="RFC 3339 time of the messages without their own `at`"
    )


@router.post("/v1/subjects/{subject}/messages")
def add_messages(subject: str, body: MessagesIn, memory: Mem) -> dict[str, Any]:
    """Append chat messages as events, one per message, with ids derived from the subject,
    thread, position and message: a retried request stores nothing twice. Every message is
    checked first; a bad one (400, naming `messages[i].field`) stores nothing."""
    appended = memory.add_messages(subject, body.messages, thread=body.thread, at=body.at)
    created = sum(a.created for a in appended)
    return {
        "appended": created,
        "existing": len(appended) - created,
        "skipped": len(body.messages) - len(appended),
        "events": [a.__dict__ for a in appended],
    }
