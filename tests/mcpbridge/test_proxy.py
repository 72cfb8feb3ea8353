"""The stdio proxy relays a local stdio client to the remote /mcp, authority from the token."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from tests.conftest import LiveServer, Tenant

# Each test starts the stdio proxy as a process of its own.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _through_proxy(live: LiveServer, token: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcpbridge.proxy", "--url", live.mcp_url],
        env={**os.environ, "UNFORGETTER_TOKEN": token},
        cwd=str(ROOT),
    )

    async def run() -> list[Any]:
        async with Client(params, mode="legacy") as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return asyncio.run(asyncio.wait_for(run(), 60))


def test_stdio_client_reads_memory_through_the_proxy(live: LiveServer, tenant: Tenant) -> None:
    token, _ = tenant.issue(data_classes=["public"])
    [result] = _through_proxy(live, token, [("list_projects", {})])
    assert not result.is_error
    assert [p["id"] for p in result.structured_content["projects"]] == ["handbook"]


def test_proxy_with_a_revoked_token_is_refused(live: LiveServer, tenant: Tenant) -> None:
    from workspaces.services import connection_revoke

    token, connection = tenant.issue()
    connection_revoke(connection=connection)
    with pytest.raises(BaseException) as caught:  # noqa: PT011 - the SDK may wrap it in an ExceptionGroup
        _through_proxy(live, token, [("list_projects", {})])
    errors = _leaves(caught.value)
    assert any(isinstance(e, MCPError) for e in errors), errors
    refused = [e for e in errors if isinstance(e, MCPError)]
    assert refused[0].error.data == {"code": "unauthorized", "http_status": 401}
    assert "revoked" in refused[0].error.message


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]
