"""The MCP server: an agent remembers, recalls, revokes, consolidates and asks why.

Built on the official ``mcp`` SDK's ``MCPServer``, over stdio (one tenant, the
``--tenant`` given) or over streamable HTTP (each request's tenant is the one
its ``Authorization: Bearer KEY`` API key belongs to, as in the HTTP service;
a missing, unknown or revoked key is 401). Every tool returns structured
content with an output schema, every parameter has a description, and its
hints say truthfully whether it only reads, whether it destroys (revoke), and
whether calling it twice is the same as once. No logic lives here: each tool
calls one method of :class:`memlineage.Memory`.

A tool's result fits what the agent asked for: ``recall`` returns the context
rendered within the budget, and the claims only when asked for.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Annotated, Any, Literal, TypeVar

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from memlineage import __version__
from memlineage.api import Memory
from memlineage.errors import MemlineageError
from memlineage.operations.keys import tenant_of
from memlineage.raw.ingest import normalize_time
from memlineage.recall.prompt import render
from memlineage.store import open_store
from memlineage.store.protocol import Store

RFC3339 = "RFC 3339 date-time with its UTC offset, e.g. 2026-03-04T23:00:00-07:00"


class Remembered(BaseModel):
    id: str
    subject: str
    seq: int
    created: bool


class MessagesAdded(BaseModel):
    appended: int = Field(description="messages stored now")
    existing: int = Field(description="messages stored by an earlier call (a retry)")
    skipped: int = Field(description="system messages, which are not stored")
    events: list[Remembered]


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
    mode: str = Field(description="summary (a published summary and the tail) or raw")
    reason: str = Field(description="why this mode")
    artifact_id: str | None = Field(description="the summary read, if any")
    context: str = Field(description="the text to put in the prompt, within the budget")
    tokens: int | None = Field(description="tokens of the context, when a budget was given")
    over_budget: bool = Field(description="the budget cannot hold the rendering's frame")
    left_out: int = Field(description="events or statements that did not fit the budget")
    claims: list[dict[str, Any]] | None = Field(
        default=None, description="the summary's structured claims (only with include_claims)"
    )


class Why(BaseModel):
    subject: str
    query: str
    artifact_id: str | None
    artifact_status: str | None
    matches: list[dict[str, Any]]


class Message(BaseModel):
    """One chat message, as agents hold them; other fields are refused, as in Python."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant", "tool", "system"] = Field(
        description="who spoke; user, assistant and tool messages are stored, system ones skipped"
    )
    content: str = Field(description="what was said; stored verbatim")
    name: str | None = Field(default=None, description="the speaker's name (default: the role)")
    at: str | None = Field(default=None, description=f"when it was said, {RFC3339}")


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


def remembered_id(subject: str, text: str, **given: str | None) -> str:
    """The id of a memory the agent did not name: ``mcp-`` and 16 hex digits of the SHA-256
    of everything the call gave (subject, text, at normalized, kind, project, speaker;
    absent: null).

    A retried call gives the same, so it is the same event; ``at`` counts as given
    (never the time of the call), so the same sentence remembered twice without an
    ``at`` is one event.
    """
    parts = json.dumps([subject, text, sorted(given.items())], ensure_ascii=False)
    return f"mcp-{hashlib.sha256(parts.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"


INSTRUCTIONS = (
    "Long-term memory with lineage. Call remember (or add_messages) with what the user"
    " says, decides, prefers or forbids; recall before acting; revoke what the user"
    " withdraws; why tells which message a memory came from."
)

MemoryOf = Callable[[Context], Memory]
Subject = Annotated[str, Field(description="whom or what the memory is about, e.g. user-7")]
Kind = Literal["constraint", "preference", "fact", "decision", "task", "observation"]


def _tool(
    server: MCPServer, title: str, *, reads: bool, destroys: bool, idempotent: bool
) -> Callable[[T], T]:
    """Register a reported tool whose hints say what it does; its docstring, as one plain
    paragraph, is its description."""

    def register(tool: T) -> T:
        hints = ToolAnnotations(
            title=title, read_only_hint=reads, destructive_hint=destroys, idempotent_hint=idempotent
        )
        described = " ".join(inspect.cleandoc(tool.__doc__ or "").split())
        server.tool(description=described, annotations=hints)(reported(tool))
        return tool

    return register


def _remember(server: MCPServer, memory: MemoryOf) -> None:
    @_tool(server, "Remember", reads=False, destroys=False, idempotent=True)
    def remember(
        subject: Subject,
        text: Annotated[str, Field(description="the memory, verbatim: what was said")],
        ctx: Context,
        id: Annotated[
            str | None,
            Field(description="the event id; omitted, one is derived from all the other fields"),
        ] = None,
        kind: Annotated[Kind | None, Field(description="what sort of memory it is")] = None,
        at: Annotated[str | None, Field(description=f"when it was said, {RFC3339}")] = None,
        project: Annotated[
            str | None, Field(description="a scope; omitted, the memory is global")
        ] = None,
        speaker: Annotated[str | None, Field(description="who said it")] = None,
    ) -> Remembered:
        """Append one memory event. A retried call is the same event: without an id, the id is
        derived from subject, text, at, kind, project and speaker."""
        when = normalize_time(at) if at is not None else None  # one id per instant
        given = {"at": when, "kind": kind, "project": project, "speaker": speaker}
        event = {"id": id or remembered_id(subject, text, **given), "subject": subject}
        event.update({"text": text, **{k: v for k, v in given.items() if v is not None}})
        appended = memory(ctx).add([event])[0]
        return Remembered(**appended.__dict__)


def _add_messages(server: MCPServer, memory: MemoryOf) -> None:
    @_tool(server, "Add messages", reads=False, destroys=False, idempotent=True)
    def add_messages(
        subject: Subject,
        messages: Annotated[list[Message], Field(description="the chat messages, in order")],
        ctx: Context,
        thread: Annotated[
            str | None, Field(description="the conversation; part of the derived ids")
        ] = None,
        at: Annotated[
            str | None, Field(description=f"time of the messages without their own, {RFC3339}")
        ] = None,
    ) -> MessagesAdded:
        """Append chat messages as memory events, one per message (system messages skipped).
        Ids are derived from subject, thread, position, role, name, content and time: sending
        the same messages again, or the whole conversation so far, stores nothing twice."""
        given = [m.model_dump(exclude_none=True) for m in messages]
        appended = memory(ctx).add_messages(subject, given, thread=thread, at=at)
        created = sum(a.created for a in appended)
        return MessagesAdded(
            appended=created,
            existing=len(appended) - created,
            skipped=len(given) - len(appended),
            events=[Remembered(**a.__dict__) for a in appended],
        )


def _recall(server: MCPServer, memory: MemoryOf) -> None:
    @_tool(server, "Recall", reads=True, destroys=False, idempotent=True)
    def recall(
        subject: Subject,
        ctx: Context,
        query: Annotated[
            str | None, Field(description="what the agent is about to do or answer")
        ] = None,
        budget: Annotated[
            int | None, Field(ge=1, description="most tokens the context may take")
        ] = None,
        include_claims: Annotated[
            bool, Field(description="also return the summary's structured claims")
        ] = False,
    ) -> Recalled:
        """What to know about a subject now, as text to put in the prompt (context). The
        must-keep part (constraints, negations, open items, conflicts) comes first, then
        what bears most on the query, within the budget in tokens."""
        recalled = memory(ctx).recall(subject, query=query, budget=budget)
        return Recalled(
            subject=recalled.subject,
            mode=recalled.mode,
            reason=recalled.reason,
            artifact_id=recalled.artifact_id,
            context=render(recalled, "markdown"),
            tokens=recalled.tokens,
            over_budget=recalled.over_budget,
            left_out=recalled.left_out.budget_count,
            claims=[c.to_json() for c in recalled.claims] if include_claims else None,
        )


def _revoke(server: MCPServer, memory: MemoryOf) -> None:
    @_tool(server, "Revoke", reads=False, destroys=True, idempotent=True)
    def revoke(
        event_id: Annotated[str, Field(description="the id of the memory event to withdraw")],
        ctx: Context,
        reason: Annotated[str | None, Field(description="why; kept with the operation")] = None,
    ) -> Operation:
        """Withdraw a memory; every summary derived from it leaves recall at once."""
        return Operation(**memory(ctx).revoke(event_id, reason=reason).to_json())


def _consolidate(server: MCPServer, memory: MemoryOf) -> None:
    @_tool(server, "Consolidate", reads=False, destroys=False, idempotent=True)
    def consolidate(subject: Subject, ctx: Context) -> Consolidated:
        """Summarise a subject's memory through the fidelity gate; publishes when it passes."""
        return Consolidated(**memory(ctx).consolidate(subject).to_json())


def _why(server: MCPServer, memory: MemoryOf) -> None:
    @_tool(server, "Why", reads=True, destroys=False, idempotent=True)
    def why(
        subject: Subject,
        key_or_text: Annotated[
            str, Field(description="a claim key, or some words of the memory to explain")
        ],
        ctx: Context,
    ) -> Why:
        """Where a memory came from: the claim or statement matching a key or some of its
        text, and its chain down to the raw events, each with its text, time and validity."""
        return Why(**memory(ctx).why(subject, key_or_text).to_json())


def _subject_memory(server: MCPServer, memory: MemoryOf) -> None:
    @server.resource(
        "memlineage://memory/{subject}",
        name="memory",
        description="A subject's memory as text an agent can put in its prompt",
        mime_type="text/plain",
    )
    def subject_memory(subject: str, ctx: Context) -> str:
        return render(memory(ctx).recall(subject), "markdown")


class Unauthorized(MemlineageError):
    exit_code = 2


def bearer_key(headers: Any) -> str | None:
    """The key of an ``Authorization: Bearer KEY`` header, if there is one."""
    scheme, _, key = ((headers or {}).get("authorization") or "").partition(" ")
    return key.strip() if scheme.lower() == "bearer" and key.strip() else None


def build_server(
    db: str | None = None,
    *,
    tenant: str = "default",
    store: Store | None = None,
    keyed: bool = False,
) -> MCPServer:
    """An MCP server over the store at ``db`` (or ``store``) for one tenant; ``keyed``: the
    tenant of each request's bearer API key instead (streamable HTTP)."""
    opened = store or open_store(db)

    # An agent recalls right after it remembers, with no worker behind it: a remembered
    # contradiction is detected before the call returns (detect_after_add).
    def memory(ctx: Context) -> Memory:
        if not keyed:
            return Memory(tenant=tenant, store=opened, detect_after_add=True)
        key = bearer_key(ctx.headers)
        found = tenant_of(opened, key) if key else None
        if found is None:  # the HTTP layer refused it already; a check here costs one lookup
            raise Unauthorized("a valid API key is required: Authorization: Bearer KEY")
        return Memory(tenant=found, store=opened, detect_after_add=True)

    server = MCPServer("memlineage", version=__version__, instructions=INSTRUCTIONS)
    adds = (_remember, _add_messages, _recall, _revoke, _consolidate, _why, _subject_memory)
    for add in adds:
        add(server, memory)
    return server


ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]


def http_app(db: str | None = None, *, host: str = "127.0.0.1", path: str = "/mcp") -> ASGIApp:
    """The server over streamable HTTP at ``path``, behind the HTTP service's API keys."""
    store = open_store(db)
    server = build_server(store=store, keyed=True)
    return KeysRequired(server.streamable_http_app(streamable_http_path=path, host=host), store)


def endpoint(
    store: Store, *, host: str = "127.0.0.1", path: str = "/mcp"
) -> tuple[KeysRequired, Callable[[], AbstractAsyncContextManager[None]]]:
    """The streamable HTTP endpoint at ``path`` for another app to route to (the HTTP
    service's ``/mcp``), and what its lifespan must run: the SDK's session manager."""
    server = build_server(store=store, keyed=True)
    app = server.streamable_http_app(streamable_http_path=path, host=host)
    return KeysRequired(app, store), server.session_manager.run


class KeysRequired:
    """Every HTTP request needs a valid bearer key (401 otherwise, as the HTTP service).

    A class, not a closure: a router treats a function as a request handler and
    an object as an ASGI app.
    """

    def __init__(self, app: ASGIApp, store: Store) -> None:
        self.app = app
        self.store = store

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
            key = bearer_key(headers)
            if key is None or await anyio.to_thread.run_sync(tenant_of, self.store, key) is None:
                await _refuse(send)
                return
        await self.app(scope, receive, send)


async def _refuse(send: Any) -> None:
    message = "a valid API key is required: Authorization: Bearer KEY"
    body = json.dumps({"error": {"code": 2, "type": "Unauthorized", "message": message}})
    headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body.encode()})
