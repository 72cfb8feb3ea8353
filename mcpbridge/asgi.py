"""The MCP endpoint as an ASGI app: the SDK's stateless Streamable HTTP with JSON responses."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcpbridge.auth import SCOPE_PROPOSE, SCOPE_READ
from mcpbridge.direct import DirectToolCalls
from mcpbridge.server import build_server
from workspaces.exceptions import Unavailable
from workspaces.net import loopback_netlocs
from workspaces.outages import OUTAGE_ERRORS, unavailable


def transport_security() -> TransportSecuritySettings:
    """DNS-rebinding protection: only our public host and loopback, plus configured extras."""
    public = urlsplit(settings.PUBLIC_URL)
    configured = settings.UNFORGETTER
    loopback = loopback_netlocs()
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[public.netloc, *loopback, *configured["MCP_ALLOWED_HOSTS"]],
        allowed_origins=[
            settings.PUBLIC_URL,
            *(f"http://{host}" for host in loopback if host.endswith(":*")),
            *configured["MCP_ALLOWED_ORIGINS"],
        ],
    )


class ChallengeScope:
    """Adds `scope` to the SDK's Bearer challenges (MCP authorization, RFC 6750 section 3).

    The SDK's RequireAuthMiddleware answers 401 and 403 `insufficient_scope` with
    `resource_metadata` but no `scope`, so a client would not know to ask for `memory:propose`.
    A 401 names every scope a connection can use (the consent page decides what is granted);
    a 403 names the scope the request lacked.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_scope(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] in (401, 403):
                message = {**message, "headers": _with_scope(message.get("headers", []), message["status"])}
            await send(message)

        await self.app(scope, receive, send_with_scope)


def _with_scope(headers: Any, status: int) -> list[tuple[bytes, bytes]]:
    wanted = f"{SCOPE_READ} {SCOPE_PROPOSE}" if status == 401 else SCOPE_READ
    result = []
    for name, value in headers:
        if (
            name.lower() == b"www-authenticate"
            and value.lower().startswith(b"bearer")
            and b"scope=" not in value
        ):
            value = value + f', scope="{wanted}"'.encode()
        result.append((name, value))
    return result


class AnswerOutages:
    """A database outage met before a tool runs (verifying the credential) answers HTTP 503.

    Inside a tool an outage is an `unavailable` tool error (mcpbridge.server); here, in the SDK's
    authentication, it would be Starlette's bare 500. The body is the tools' error object.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def tracked_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked_send)
        except OUTAGE_ERRORS as exc:
            if started or scope["type"] != "http":
                raise
            await _send_unavailable(send, unavailable("mcp authentication", exc))


async def _send_unavailable(send: Send, error: Unavailable) -> None:
    body = json.dumps({"error": error.as_dict()}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(error.retry_after).encode()),
    ]
    await send({"type": "http.response.start", "status": error.http_status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def build_mcp_app() -> ASGIApp:
    server = build_server()
    security = transport_security()
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
        transport_security=security,
    )
    # Outermost of the app's own middleware, inside Starlette's error middleware, so the 503 is
    # sent instead of its 500.
    app.add_middleware(AnswerOutages)
    # In front of it all: the hot tools/call answered directly; everything else reaches the SDK.
    return DirectToolCalls(ChallengeScope(app), server, security)
