"""The MCP endpoint as an ASGI app: the SDK's stateless Streamable HTTP with JSON responses."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette

from mcpbridge.server import build_server

LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"]
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


def transport_security() -> TransportSecuritySettings:
    """DNS-rebinding protection: only our public host and loopback, plus configured extras."""
    public = urlsplit(settings.PUBLIC_URL)
    configured = settings.UNFORGETTER
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[public.netloc, *LOOPBACK_HOSTS, *configured["MCP_ALLOWED_HOSTS"]],
        allowed_origins=[settings.PUBLIC_URL, *LOOPBACK_ORIGINS, *configured["MCP_ALLOWED_ORIGINS"]],
    )


def build_mcp_app() -> Starlette:
    return build_server().streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
        transport_security=transport_security(),
    )
