"""The token verifier of the MCP endpoint.

It turns a presented bearer credential into the Connection that carries its authority, or None
(HTTP 401 with a `resource_metadata` challenge, before any tool runs). The database is read on
every request, so a revocation is effective on the next call in every process.
"""

from __future__ import annotations

from contextvars import ContextVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.utils import timezone
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken

from workspaces.exceptions import Unauthorized
from workspaces.models import Connection
from workspaces.selectors import connection_for_bearer, last_used_is_stale
from workspaces.services import connection_touch

SCOPE_READ = "memory:read"
SCOPE_PROPOSE = "memory:propose"

_verified: ContextVar[Connection | None] = ContextVar("unforgetter_connection", default=None)


def scopes_for(connection: Connection) -> list[str]:
    return [SCOPE_READ, SCOPE_PROPOSE] if connection.can_propose else [SCOPE_READ]


def authenticate(raw: str) -> tuple[Connection, str] | None:
    """The Connection behind a bearer credential and the resource it was issued for."""
    found = connection_for_bearer(raw)
    if found is None:
        return None
    connection, resource = found
    now = timezone.now()
    if last_used_is_stale(connection, now):
        connection_touch(connection=connection, now=now)
    return connection, resource


class ConnectionTokenVerifier:
    async def verify_token(self, token: str) -> AccessToken | None:
        found = await sync_to_async(authenticate)(token)
        if found is None:
            return None
        connection, resource = found
        _verified.set(connection)
        return AccessToken(
            token=token,
            client_id=f"connection:{connection.pk}",
            subject=connection.actor,
            scopes=scopes_for(connection),
            expires_at=int(connection.expires_at.timestamp()),
            resource=resource,
        )


def current_connection() -> Connection:
    """The Connection the current MCP request was authenticated as."""
    token = get_access_token()
    connection = _verified.get()
    if token is None or connection is None or token.client_id != f"connection:{connection.pk}":
        raise Unauthorized("This request carries no valid credential.")
    return connection


def resource_url() -> str:
    return str(settings.MCP_RESOURCE_URL)
