"""What a token and a client may point at: our MCP resource (RFC 8707) and safe redirect URIs."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from oauthlib.oauth2.rfc6749 import errors as oauth_errors

from workspaces.net import is_loopback_host

# --- resource indicators (RFC 8707) -----------------------------------------------------------------


def _resource_key(uri: str) -> tuple[str, str, int | None, str] | None:
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment or parts.username:
        return None
    port = port or {"http": 80, "https": 443}[parts.scheme]
    return parts.scheme, parts.hostname.lower(), port, parts.path.rstrip("/") or "/"


def is_mcp_resource(uri: str) -> bool:
    """True when `uri` names our MCP endpoint (case of host, default port and a trailing slash aside)."""
    key = _resource_key(uri)
    return key is not None and key == _resource_key(settings.MCP_RESOURCE_URL)


def resource_error(
    resources: list[str], *, request: Any = None, state: str | None = None
) -> Exception | None:
    """`invalid_target` unless exactly our MCP resource was requested: tokens are for /mcp only."""
    if len(resources) == 1 and is_mcp_resource(resources[0]):
        return None
    if not resources:
        description = f"The resource parameter is required; use {settings.MCP_RESOURCE_URL}."
    else:
        description = f"This server issues tokens only for the resource {settings.MCP_RESOURCE_URL}."
    error: Exception = oauth_errors.CustomOAuth2Error(
        error="invalid_target", description=description, request=request
    )
    return error


# --- redirect URIs --------------------------------------------------------------------------------


def redirect_uri_problem(uri: str) -> str | None:
    """Why a redirect URI is refused, or None.

    Allowed: https, http on a loopback host (any port, RFC 8252), and the private-use schemes
    named in OAUTH_NATIVE_REDIRECT_SCHEMES (none by default).
    """
    try:
        parts = urlsplit(uri)
    except ValueError:
        return f"{uri!r} is not a URI."
    if parts.fragment or "#" in uri:
        return f"{uri!r} must not carry a fragment."
    if parts.scheme and parts.scheme in settings.OAUTH_NATIVE_REDIRECT_SCHEMES:
        return None
    if not parts.hostname:
        return f"{uri!r} must be an absolute https URI or an http loopback URI."
    if parts.scheme == "https":
        return None
    if parts.scheme == "http" and is_loopback_host(parts.hostname):
        return None
    return f"{uri!r} is neither https nor http on a loopback address (127.0.0.1, [::1], localhost)."
