"""Helpers for the read-path tests: recording SDK clients, raw JSON-RPC POSTs and memory set-ups."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import httpx2
import pytest
from django.core.cache import cache

from memory.context import standing_parts_clear
from memory.embeddings.index import indexes
from memory.models import ContextRequest, Fact
from memory.services import fact_create
from tests.mcp_client import MCPClient
from workspaces.models import Project

PROTOCOL = "2026-07-28"


class RecordingMCPClient(MCPClient):
    """The SDK client facade, also recording the HTTP status of every response it receives."""

    def __init__(self, url: str, token: str | None, mode: str = "legacy") -> None:
        super().__init__(url, token, mode)
        self.statuses: list[int] = []

    def _http(self) -> httpx2.AsyncClient:
        async def record(response: httpx2.Response) -> None:
            self.statuses.append(response.status_code)

        headers = {"Authorization": f"Bearer {self.token}"} if self.token is not None else {}
        return httpx2.AsyncClient(headers=headers, timeout=30, event_hooks={"response": [record]})

    def refused(self, tool: str, arguments: dict[str, Any] | None = None) -> None:
        """Call a tool that must be refused with HTTP 401 before any tool runs."""
        self.statuses.clear()
        with pytest.raises(BaseException) as caught:  # noqa: PT011 - the SDK raises an ExceptionGroup
            self.call(tool, arguments)
        assert not isinstance(caught.value, (KeyboardInterrupt, SystemExit))
        assert 401 in self.statuses, self.statuses
        assert 200 not in self.statuses, self.statuses


def served_record(context_id: str, *, wait: float = 10.0) -> ContextRequest:
    """The audit record of a bundle a live server served. The server writes it just after its
    answer (workspaces.after_answer), so it may land a moment after the client has the bundle."""
    deadline = time.monotonic() + wait
    while (record := ContextRequest.objects.filter(context_id=context_id).first()) is None:
        assert time.monotonic() < deadline, f"no record of {context_id} after {wait} s"
        time.sleep(0.01)
    return record


def sdk_factory(live: Any) -> Callable[..., RecordingMCPClient]:
    """sdk(token, mode) -> a recording SDK client for the live server (each module's `sdk` fixture)."""

    def build(token: str | None, mode: str = "legacy") -> RecordingMCPClient:
        return RecordingMCPClient(live.mcp_url, token, mode)

    return build


@pytest.fixture(autouse=True)
def _fresh_bundle_cache() -> None:
    # Compiled bundles are cached per process by (connection, project, task, publication); ids
    # restart after a rolled-back test on SQLite, so a bundle of an earlier test could match.
    # The vector indexes are cached per project by their newest id, which restarts likewise.
    cache.clear()
    indexes.clear()
    standing_parts_clear()


def rpc_body(method: str, params: dict[str, Any] | None = None, *, request_id: int = 1) -> dict[str, Any]:
    """A 2026-07-28 (stateless) JSON-RPC request body."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**(params or {}), "_meta": meta}}


def rpc_headers(token: str | None, method: str = "tools/call", name: str | None = None) -> dict[str, str]:
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": PROTOCOL,
        "Mcp-Method": method,
    }
    if name:
        headers["Mcp-Name"] = name
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def raw_post(url: str, token: str | None, content: bytes | str, *, name: str | None = None) -> httpx.Response:
    """POST bytes to /mcp exactly as given (for input no SDK client would send)."""
    return httpx.post(url, content=content, headers=rpc_headers(token, name=name), timeout=30)


def raw_call(url: str, token: str | None, tool: str, arguments: Any) -> httpx.Response:
    body = rpc_body("tools/call", {"name": tool, "arguments": arguments})
    return raw_post(url, token, json.dumps(body), name=tool)


def add_item(
    project: Project, text: str, *, kind: str = "fact", data_class: str | None = None, **kw: Any
) -> Fact:
    """A published item in a project, created the way owners and imports create them.

    It records no publication, so the standing parts compiled before it are forgotten here.
    """
    fact = fact_create(
        project=project,
        kind=kind,
        text=text,
        actor=kw.pop("actor", "owner"),
        source=kw.pop("source", "tests/notes.md"),
        data_class=data_class,
        **kw,
    )
    standing_parts_clear()
    return fact


def all_items(bundle: dict[str, Any]) -> list[dict[str, Any]]:
    return [*bundle["policies"], *bundle["facts"], *bundle["open_threads"], *bundle["methods"]]
