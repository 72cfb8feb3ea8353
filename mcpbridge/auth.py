"""The token verifier of the MCP endpoint.

It turns a presented bearer credential into the Connection that carries its authority, or None
(HTTP 401 with a `resource_metadata` challenge, before any tool runs). The database is read on
every request, so a revocation is effective on the next call in every process.
"""

from __future__ import annotations

from contextvars import ContextVar

from asgiref.sync import sync_to_async
from django.utils import timezone
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken

from workspaces.exceptions import ForbiddenScope, Unauthorized
from workspaces.models import Connection
from workspaces.scopes import SCOPE_PROPOSE, SCOPE_READ, scopes_for_role
from workspaces.selectors import BearerMatch, connection_for_bearer, last_used_is_stale
from workspaces.services import connection_touch

__all__ = ["SCOPE_PROPOSE", "SCOPE_READ", "ConnectionTokenVerifier", "current_connection", "require_scope"]

_verified: ContextVar[Connection | None] = ContextVar("unforgetter_connection", default=None)


def scopes_for(connection: Connection) -> list[str]:
    return sorted(scopes_for_role(connection.role))


def authenticate(raw: str) -> BearerMatch | None:
    """The Connection behind a bearer credential, the resource it was issued for, its scopes."""
    found = connection_for_bearer(raw)
    if found is None:
        return None
    now = timezone.now()
    if last_used_is_stale(found.connection, now):
        connection_touch(connection=found.connection, now=now)
    return found


class ConnectionTokenVerifier:
    async def verify_token(self, token: str) -> AccessToken | None:
        found = await sync_to_async(authenticate)(token)
        if found is None:
            return None
        connection = found.connection
        _verified.set(connection)
        return AccessToken(
            token=token,
            client_id=f"connection:{connection.pk}",
            subject=connection.actor,
            scopes=sorted(found.scopes),
            expires_at=int(connection.expires_at.timestamp()),
            resource=found.resource,
        )


def current_connection() -> Connection:
    """The Connection the current MCP request was authenticated as."""
    token = get_access_token()
    connection = _verified.get()
    if token is None or connection is None or token.client_id != f"connection:{connection.pk}":
        raise Unauthorized("This request carries no valid credential.")
    return connection


def require_scope(scope: str) -> None:
    """Refuse the current tool call unless the request's credential carries `scope`.

    Personal tokens carry the scopes of their role; OAuth tokens carry what was consented,
    narrowed to the role. Raised as a tool error (forbidden_scope), not an HTTP status.
    """
    connection = current_connection()
    token = get_access_token()
    if token is None or scope not in token.scopes:
        if scope == SCOPE_PROPOSE and not connection.can_propose:
            message = "This credential is read-only: it may read memory but not propose changes."
        elif scope == SCOPE_PROPOSE:
            message = f"This credential may not propose memory changes: it lacks the {scope} scope."
        else:
            message = f"This credential lacks the {scope} scope."
        raise ForbiddenScope(
            message,
            action="Do not retry. Ask the workspace owner for a contributor connection.",
        )
