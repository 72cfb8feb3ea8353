"""A local stdio MCP server that relays every message to a remote Unforgetter `/mcp`.

For clients that only launch local servers (Claude Desktop's config file, older IDE plugins):

    UNFORGETTER_TOKEN=unf_... python -m mcpbridge.proxy --url https://memory.example.com/mcp

It is a transparent relay over the official SDK's transports: the remote server still decides
everything (authority comes from the token), and the token never appears on a command line.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import ErrorData, JSONRPCError

logger = logging.getLogger("unforgetter.proxy")


UNAUTHORIZED = ErrorData(
    code=-32001,
    message="unauthorized: the token is unknown, expired or revoked; the owner must issue a new one.",
    data={"code": "unauthorized", "http_status": 401},
)


class _Relay:
    def __init__(self) -> None:
        self.refused = False

    async def observe(self, response: httpx2.Response) -> None:
        if response.status_code == 401:
            self.refused = True

    def translate(self, item: SessionMessage) -> SessionMessage:
        """Name a refused credential instead of the transport's generic error."""
        if self.refused and isinstance(item.message, JSONRPCError):
            return SessionMessage(JSONRPCError(jsonrpc="2.0", id=item.message.id, error=UNAUTHORIZED))
        return item

    async def pump(self, source: Any, sink: Any, direction: str) -> None:
        async for item in source:
            if isinstance(item, Exception):
                logger.error("%s: %s", direction, item)
                continue
            await sink.send(self.translate(item))


async def relay(url: str, token: str) -> None:
    headers = {"Authorization": f"Bearer {token}", "User-Agent": "unforgetter-stdio-proxy"}
    state = _Relay()
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60, event_hooks={"response": [state.observe]}) as http,
        streamable_http_client(url, http_client=http) as (remote_read, remote_write),
        stdio_server() as (local_read, local_write),
        anyio.create_task_group() as tasks,
    ):

        async def upstream() -> None:
            await state.pump(local_read, remote_write, "client -> server")
            tasks.cancel_scope.cancel()  # the local client closed stdin: stop

        tasks.start_soon(upstream)
        tasks.start_soon(state.pump, remote_read, local_write, "server -> client")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcpbridge.proxy", description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("UNFORGETTER_URL", "http://127.0.0.1:8000/mcp"))
    parser.add_argument(
        "--token-env", default="UNFORGETTER_TOKEN", help="Environment variable holding the bearer token"
    )
    args = parser.parse_args(argv)
    token = os.environ.get(args.token_env, "")
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="unforgetter-proxy: %(message)s")
    for noisy in ("httpx", "httpx2", "mcp"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if not token:
        logger.error("set %s to an Unforgetter token", args.token_env)
        return 2
    anyio.run(relay, args.url, token)
    return 0


if __name__ == "__main__":
    sys.exit(main())
