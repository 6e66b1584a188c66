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
    """What the budget allows: the context to put in the prompt, and how it was cut."""

    subject: str
    mode: str
    reason: str
    artifact_id: str | None
    context: str
    budget: int | None
    tokens: int | None
    over_budget: bool
    left_out: int  # passages left out for the budget
    conflicts: list[dict[str, Any]]
    # only with include_claims: the summary's claims and open items
    claims: list[dict[str, Any]] | None = None
    open_items: list[str] | None = None


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
        return Memory(tenant=tenant, store=store)

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
        speaker: str | None = None,
    ) -> Remembered:
        """Append one memory event (what was said, decided, preferred or forbidden)."""
        at = at or utc_now()
        event = {"id": id or remembered_id(subject, text, at), "subject": subject, "text": text}
        given = (("kind", kind), ("at", at), ("project", project), ("speaker", speaker))
        event.update({k: v for k, v in given if v})
        appended = memory().add([event])[0]
        return Remembered(**appended.__dict__)

    @server.tool(
        annotations=ToolAnnotations(
            title="Recall", read_only_hint=True, destructive_hint=False, idempotent_hint=True
        )
    )
    @reported
    def recall(
        subject: str,
        query: str | None = None,
        budget: int | None = None,
        include_claims: bool = False,
    ) -> Recalled:
        """What to know about a subject now, as ``context``: the text to put in the prompt.
        With ``query`` and ``budget`` (tokens), the binding part (rules, permissions, the
        subject's own preferences and aversions, open items, conflicts) first, then what is
        most relevant to the query, whole events only, within the budget (``over_budget``
        says when the binding part alone exceeds it). ``include_claims`` adds the claims."""
        recalled = memory().recall(subject, query=query, budget=budget)
        extra: dict[str, Any] = {}
        if include_claims:
            extra = {
                "claims": [c.to_json() for c in recalled.claims],
                "open_items": list(recalled.open_items),
            }
        return Recalled(
            subject=recalled.subject,
            mode=recalled.mode,
            reason=recalled.reason,
            artifact_id=recalled.artifact_id,
            context=render(recalled, "markdown"),
            budget=recalled.budget,
            tokens=recalled.tokens,
            over_budget=recalled.over_budget,
            left_out=recalled.left_out.budget_count,
            conflicts=[c.to_json() for c in recalled.conflicts],
            **extra,
        )

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
