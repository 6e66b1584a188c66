"""The MCP server (stdio): an agent remembers, recalls, revokes, consolidates and asks why.

Built on the official ``mcp`` SDK's ``MCPServer``. Every tool returns
structured content with an output schema, and its hints say truthfully
whether it only reads, whether it destroys (revoke), and whether calling it
twice is the same as once. No logic lives here: each tool calls one method of
:class:`memlineage.Memory`.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel

from memlineage.api import Memory
from memlineage.errors import MemlineageError
from memlineage.raw.ingest import utc_now
from memlineage.recall.prompt import render
from memlineage.store import open_store


class Remembered(BaseModel):
    id: str
    subject: str
    seq: int
    created: bool


class Operation(BaseModel):
    subject: str
    epoch: int
    changed: bool
    conflict_id: str | None = None
    stale: list[str] = []


class Consolidated(BaseModel):
    artifact_id: str
    status: str
    switched: bool
    reason: str | None
    covers_through: int
    gate: dict[str, Any]


class Recalled(BaseModel):
    subject: str
    mode: str
    reason: str
    artifact_id: str | None
    summary: str | None
    claims: list[dict[str, Any]]
    open_items: list[str]
    conflicts: list[dict[str, Any]]
    tail: list[dict[str, Any]]
    events: list[dict[str, Any]]
    context: str


class Why(BaseModel):
    subject: str
    query: str
    artifact_id: str | None
    artifact_status: str | None
    matches: list[dict[str, Any]]


T = TypeVar("T", bound=Callable[..., Any])


def reported(tool: T) -> T:
    """A refusal (bad input, unknown id) reaches the agent as a tool error with its message."""

    @functools.wraps(tool)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return tool(*args, **kwargs)
        except MemlineageError as exc:
            raise ToolError(str(exc)) from exc

    return call  # type: ignore[return-value]


def remembered_id(subject: str, text: str, at: str) -> str:
    """A stable id for a memory the agent did not name: the same call retried is one event."""
    digest = hashlib.sha256("\x1f".join((subject, text, at)).encode("utf-8", "surrogatepass"))
    return f"mcp-{digest.hexdigest()[:16]}"


def build_server(db: str | None = None, *, tenant: str = "default") -> MCPServer:
    """An MCP server over the store at ``db`` for one tenant."""
    store = open_store(db)

    def memory() -> Memory:
        # An agent recalls right after it remembers, with no worker behind it: a remembered
        # contradiction is detected before the call returns.
        return Memory(tenant=tenant, store=store, detect_after_add=True)

    server = MCPServer(
        "memlineage",
        instructions=(
            "Long-term memory with lineage. `remember` what the user says, decides, prefers or"
            " forbids; `recall` before acting; `revoke` what the user withdraws; `why` tells"
            " which message a memory came from."
        ),
    )

    @server.tool(
        annotations=ToolAnnotations(
            title="Remember", read_only_hint=False, destructive_hint=False, idempotent_hint=False
        )
    )
    @reported
    def remember(
        subject: str,
        text: str,
        id: str | None = None,
        kind: str | None = None,
        at: str | None = None,
        project: str | None = None,
    ) -> Remembered:
        """Append one memory event (what was said, decided, preferred or forbidden)."""
        at = at or utc_now()
        event = {"id": id or remembered_id(subject, text, at), "subject": subject, "text": text}
        event.update({k: v for k, v in (("kind", kind), ("at", at), ("project", project)) if v})
        appended = memory().add([event])[0]
        return Remembered(**appended.__dict__)

    @server.tool(
        annotations=ToolAnnotations(
            title="Recall", read_only_hint=True, destructive_hint=False, idempotent_hint=True
        )
    )
    @reported
    def recall(subject: str, query: str | None = None, budget: int | None = None) -> Recalled:
        """What to know about a subject now. With ``query`` and ``budget`` (tokens), the
        must-keep part (constraints, negations, open items, conflicts) first, then what is
        most relevant to the query; ``context`` is the text to put in the prompt."""
        recalled = memory().recall(subject, query=query, budget=budget)
        doc = recalled.to_json()
        fields = {k: doc[k] for k in Recalled.model_fields if k != "context"}
        return Recalled(**fields, context=render(recalled, "markdown"))

    @server.tool(
        annotations=ToolAnnotations(
            title="Revoke", read_only_hint=False, destructive_hint=True, idempotent_hint=True
        )
    )
    @reported
    def revoke(event_id: str, reason: str | None = None) -> Operation:
        """Withdraw a memory; every summary derived from it leaves recall at once."""
        return Operation(**memory().revoke(event_id, reason=reason).to_json())

    @server.tool(
        annotations=ToolAnnotations(
            title="Consolidate", read_only_hint=False, destructive_hint=False, idempotent_hint=True
        )
    )
    @reported
    def consolidate(subject: str) -> Consolidated:
        """Summarise a subject's memory through the fidelity gate; publishes when it passes."""
        return Consolidated(**memory().consolidate(subject).to_json())

    @server.tool(
        annotations=ToolAnnotations(
            title="Why", read_only_hint=True, destructive_hint=False, idempotent_hint=True
        )
    )
    @reported
    def why(subject: str, key_or_text: str) -> Why:
        """Where a memory came from: the claim or statement matching a key or some of its
        text, and its chain down to the raw events, each with its text, time and validity."""
        return Why(**memory().why(subject, key_or_text).to_json())

    @server.resource(
        "memlineage://memory/{subject}",
        name="memory",
        description="A subject's memory as text an agent can put in its prompt",
        mime_type="text/plain",
    )
    def subject_memory(subject: str) -> str:
        return render(memory().recall(subject), "markdown")

    return server
