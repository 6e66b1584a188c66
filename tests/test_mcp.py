"""The MCP server driven over stdio by the SDK's own client, as an agent would use it."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from memlineage.recall.context import count_tokens


def server_params(db: str) -> StdioServerParameters:
    env = {**os.environ}
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "memlineage", "mcp", "--db", db, "--tenant", "acme"],
        env=env,
    )


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
