"""The MCP server driven over stdio by the SDK's own client, as an agent would use it."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

import memlineage
from memlineage import Memory
from memlineage.model import EVENT_KINDS
from memlineage.recall.context import count_tokens
from memlineage.tokens import default_tokenizer
from test_http import free_port


def server_params(db: str) -> StdioServerParameters:
    env = {**os.environ}
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "memlineage", "mcp", "--db", db, "--tenant", "acme"],
        env=env,
    )


@contextlib.asynccontextmanager
async def stdio_session(db: str) -> AsyncIterator[tuple[ClientSession, Any]]:
    """A session with ``memlineage mcp`` over stdio, initialized: (session, its answer)."""
    async with (
        stdio_client(server_params(db)) as (read, write),
        ClientSession(read, write) as session,
    ):
        yield session, await session.initialize()


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


async def agent_session(db: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    async with (
        stdio_client(server_params(db)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        seen["tools"] = tools
        first = await call(
            session, "remember", subject="user-7", text="Never deploy on Fridays.", id="m-1"
        )
        await call(session, "remember", subject="user-7", text="I love jazz.", id="m-2")
        seen["remembered"] = first
        seen["consolidated"] = await call(session, "consolidate", subject="user-7")
        seen["recall"] = await call(session, "recall", subject="user-7")
        seen["queried"] = await call(
            session, "recall", subject="user-7", query="music jazz", budget=200
        )
        seen["claimed"] = await call(
            session,
            "recall",
            subject="user-7",
            query="music jazz",
            budget=200,
            include_claims=True,
        )
        seen["why"] = await call(session, "why", subject="user-7", key_or_text="jazz")
        seen["revoked"] = await call(session, "revoke", event_id="m-2", reason="withdrawn")
        seen["recall_after"] = await call(session, "recall", subject="user-7")
        resource = await session.read_resource("memlineage://memory/user-7")
        seen["resource"] = resource.contents[0].text  # type: ignore[union-attr]
    return seen


def test_remember_consolidate_recall_revoke_over_stdio(db_url: str, tmp_path: Path) -> None:
    seen = anyio.run(agent_session, db_url)
    tools = seen["tools"]
    assert {"remember", "recall", "revoke", "consolidate", "why"} <= set(tools)
    assert tools["why"].annotations.read_only_hint is True
    for name, tool in tools.items():
        assert tool.output_schema is not None, name
    assert tools["recall"].annotations.read_only_hint is True
    assert tools["revoke"].annotations.destructive_hint is True
    assert tools["remember"].annotations.read_only_hint is False
    assert seen["remembered"] == {"id": "m-1", "subject": "user-7", "seq": 1, "created": True}
    assert seen["consolidated"]["switched"] is True
    assert seen["recall"]["mode"] == "summary"
    queried = seen["queried"]["context"]
    assert "Never deploy on Fridays." in queried and "I love jazz." in queried
    chain = seen["why"]["matches"]
    assert chain and any(
        link["event_id"] == "m-2" and link["text"] == "I love jazz."
        for match in chain
        for link in match["chain"]
    )
    assert seen["revoked"]["stale"] == [seen["consolidated"]["artifact_id"]]
    # the tool returns what the budget allows, the context, and the claims only when asked
    assert seen["queried"].get("claims") is None and "summary" not in seen["queried"]
    assert count_tokens(seen["queried"]["context"]) <= 200
    assert seen["claimed"]["claims"] and seen["claimed"]["context"] == queried
    after = seen["recall_after"]
    assert after["mode"] == "raw"
    assert "Never deploy on Fridays." in after["context"] and "jazz" not in after["context"]
    assert "I love jazz." not in seen["resource"]
    assert "Never deploy on Fridays." in seen["resource"]


@pytest.mark.parametrize("missing", ["m-404"])
def test_a_tool_error_is_reported_not_a_crash(tmp_path: Path, missing: str) -> None:
    async def revoke_missing() -> Any:
        db = str(tmp_path / "m.db")
        async with (
            stdio_client(server_params(db)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await session.call_tool("revoke", {"event_id": missing})

    result = anyio.run(revoke_missing)
    assert result.is_error
    assert missing in result.content[0].text  # type: ignore[union-attr]


def test_tools_describe_every_parameter_in_plain_text(tmp_path: Path) -> None:
    async def listing() -> tuple[Any, dict[str, Any]]:
        async with stdio_session(str(tmp_path / "m.db")) as (session, init):
            return init, {t.name: t for t in (await session.list_tools()).tools}

    init, tools = anyio.run(listing)
    assert init.server_info.version == memlineage.__version__
    assert {"remember", "add_messages", "recall", "revoke", "consolidate", "why"} <= set(tools)
    for name, tool in tools.items():
        assert "``" not in tool.description and ":func:" not in tool.description, name
        for param, schema in tool.input_schema["properties"].items():
            assert schema.get("description"), (name, param)
    remember = tools["remember"].input_schema["properties"]
    assert remember["kind"]["anyOf"][0]["enum"] == list(EVENT_KINDS)
    assert "RFC 3339" in remember["at"]["description"]


async def remember_twice_and_recall(db: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    async with stdio_session(db) as (session, _):
        said = {"subject": "user-7", "text": "I prefer aisle seats."}
        seen["first"] = await call(session, "remember", **said)
        seen["retry"] = await call(session, "remember", **said)
        for i in range(100):
            text = f"Note {i}: the quarterly report for region {i} is filed under folder {i}."
            await call(session, "remember", subject="user-7", text=text, id=f"n-{i}")
        seen["budgeted"] = await call(
            session, "recall", subject="user-7", query="aisle seats", budget=200
        )
        seen["claims"] = await call(session, "recall", subject="user-7", include_claims=True)
        chat = [{"role": "user", "content": "Call me Ada.", "name": "Ada"}]
        for name in ("messages", "messages_again"):  # the second: a retried call
            seen[name] = await call(
                session, "add_messages", subject="user-8", messages=chat, thread="t-1"
            )
    return seen


def test_remember_retried_is_one_event_and_recall_fits_its_budget(db_url: str) -> None:
    seen = anyio.run(remember_twice_and_recall, db_url)
    assert seen["first"]["created"] is True
    assert seen["retry"] == {**seen["first"], "created": False}
    budgeted = seen["budgeted"]
    assert "I prefer aisle seats." in budgeted["context"]
    assert budgeted["tokens"] <= 200 and budgeted["left_out"] > 0
    assert budgeted["claims"] is None
    # the whole tool result, not just its context, is about the size the agent asked for
    assert default_tokenizer().count(json.dumps(budgeted)) < 400
    assert seen["claims"]["claims"] is not None
    assert seen["messages"]["appended"] == 1
    assert (seen["messages_again"]["appended"], seen["messages_again"]["existing"]) == (0, 1)
    with Memory(db_url, tenant="acme") as memory:
        assert [e.speaker for e in memory.events("user-8")] == ["Ada"]
        assert len(memory.events("user-7")) == 101


STANDALONE = ("mcp", "--transport", "streamable-http")


@contextlib.contextmanager
def mcp_over_http(db: str, command: Sequence[str] = STANDALONE) -> Iterator[str]:
    """The MCP endpoint of ``memlineage mcp --transport streamable-http`` (or of
    ``command``, e.g. ``serve``) as its own process on a free port."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "memlineage", *command, "--port", str(port), "--db", db],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the MCP server did not start"
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)


async def over_http(url: str, key: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        remembered = await call(session, "remember", subject="user-7", text="Never on Fridays.")
        recalled = await call(session, "recall", subject="user-7")
    return {"remembered": remembered, "recalled": recalled}


@pytest.mark.parametrize("command", [STANDALONE, ("serve",)], ids=["mcp", "serve"])
def test_streamable_http_behind_the_tenant_keys(db_url: str, command: Sequence[str]) -> None:
    """Standalone, or inside the HTTP service at /mcp beside its REST routes."""
    keys = {}
    for tenant in ("acme", "other"):
        with Memory(db_url, tenant=tenant) as memory:
            keys[tenant] = memory.create_key(label="mcp")
    with mcp_over_http(db_url, command) as url:
        seen = anyio.run(over_http, url, keys["acme"][1])
        assert seen["remembered"]["created"] is True
        assert "Never on Fridays." in seen["recalled"]["context"]
        other = anyio.run(over_http, url, keys["other"][1])  # its own tenant: a new event
        assert other["remembered"]["created"] is True
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        assert httpx.post(url, json=body).status_code == 401
        wrong = {"Authorization": "Bearer mlk_not-a-key"}
        assert httpx.post(url, json=body, headers=wrong).status_code == 401
        with Memory(db_url, tenant="acme") as memory:
            memory.revoke_key(keys["acme"][0])
        revoked = {"Authorization": f"Bearer {keys['acme'][1]}"}
        refused = httpx.post(url, json=body, headers=revoked)
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
        if command != STANDALONE:  # the REST routes answer beside it, with the same keys
            rest = url.removesuffix("/mcp") + "/v1/subjects/user-7/recall"
            other_key = {"Authorization": f"Bearer {keys['other'][1]}"}
            answer = httpx.get(rest, headers=other_key).json()
            assert "Never on Fridays." in json.dumps(answer)
    with Memory(db_url, tenant="acme") as memory:
        assert [e.text for e in memory.events("user-7")] == ["Never on Fridays."]
