"""A synchronous facade over the official `mcp` SDK client, for tests.

Each call opens a real Streamable HTTP connection to the live server, in either protocol era:
`legacy` (2025-11-25, initialize handshake) or `2026-07-28` (stateless, no handshake).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

MODES = ("legacy", "2026-07-28")


def new_second() -> None:
    """Wait until a wall-clock second has just begun.

    A credential's rate window is a wall-clock second (workspaces.limits): calls made right after
    this fall in one window however slow the machine is, where calls started at a random moment
    straddle two windows as often as they take a sizeable part of a second.
    """
    while time.time() % 1 > 0.02:
        time.sleep(0.002)


class MCPClient:
    def __init__(self, url: str, token: str | None, mode: str = "legacy") -> None:
        self.url = url
        self.token = token
        self.mode = mode

    def _http(self) -> httpx2.AsyncClient:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token is not None else {}
        return httpx2.AsyncClient(headers=headers, timeout=30)

    async def _with_client(self, action: Any) -> Any:
        async with self._http() as http:
            transport = streamable_http_client(self.url, http_client=http)
            async with Client(transport, mode=self.mode, cache=None) as client:
                return await action(client)

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        async def action(client: Client) -> CallToolResult:
            return await client.call_tool(tool, arguments or {})

        return asyncio.run(self._with_client(action))

    def calls(
        self, requests: list[tuple[str, dict[str, Any]]], *, from_new_second: bool = False
    ) -> list[CallToolResult]:
        """Several calls over one kept-alive connection; the first one just after a wall-clock
        second begins with `from_new_second` (once the connection is set up: see new_second)."""

        async def action(client: Client) -> list[CallToolResult]:
            if from_new_second:
                new_second()
            return [await client.call_tool(tool, args) for tool, args in requests]

        return asyncio.run(self._with_client(action))

    def tools(self) -> list[Any]:
        async def action(client: Client) -> list[Any]:
            return list((await client.list_tools()).tools)

        return asyncio.run(self._with_client(action))

    def instructions(self) -> str | None:
        """What the server tells an agent about using it (initialize or discovery)."""

        async def action(client: Client) -> str | None:
            if self.mode == "legacy":
                return client.instructions
            discovered = await client.session.send_discover(self.mode)
            return discovered.get("instructions")

        return asyncio.run(self._with_client(action))

    def ok(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call a tool that must succeed; return its structured content."""
        result = self.call(tool, arguments)
        assert not result.is_error, result.structured_content
        assert result.structured_content is not None
        return result.structured_content

    def error(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, str]:
        """Call a tool that must fail; return its {code, message, action}."""
        result = self.call(tool, arguments)
        assert result.is_error, result.structured_content
        assert result.structured_content is not None
        error: dict[str, str] = result.structured_content["error"]
        assert set(error) == {"code", "message", "action"}
        return error
