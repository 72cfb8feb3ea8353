"""The token verifier of the MCP endpoint.

It turns a presented bearer credential into the `AgentScope` that carries its authority, or None
(HTTP 401 with a `resource_metadata` challenge, before any tool runs). The credential's rows are
read on every request (workspaces.bearers), so a revocation is effective on the next call in every
process.
"""

from __future__ import annotations

from contextvars import ContextVar

from django.utils import timezone
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken

from mcpbridge.threads import in_request_thread
from workspaces.bearers import bearer_verified
from workspaces.exceptions import ForbiddenScope, Unauthorized
from workspaces.models import Connection
from workspaces.scope import AgentScope
from workspaces.scopes import SCOPE_PROPOSE, SCOPE_READ
from workspaces.selectors import last_used_is_stale
from workspaces.services import connection_touch

__all__ = ["SCOPE_PROPOSE", "SCOPE_READ", "ConnectionTokenVerifier", "current_scope", "require_scope"]

_verified: ContextVar[tuple[AgentScope, str] | None] = ContextVar("unforgetter_scope", default=None)


def authenticate(raw: str) -> tuple[AgentScope, str] | None:
    """The scope behind a bearer credential and the resource it was issued for; use is recorded."""
    verified = bearer_verified(raw)
    if verified is None:
        return None
    found, scope = verified
    now = timezone.now()
    if last_used_is_stale(found.connection, now):
        connection_touch(connection=found.connection, now=now)
    return scope, found.resource


class ConnectionTokenVerifier:
    async def verify_token(self, token: str) -> AccessToken | None:
        found = await in_request_thread(authenticate, token)
        if found is None:
            return None
        scope, resource = found
        _verified.set(found)
        return AccessToken(
            token=token,
            client_id=f"connection:{scope.connection_id}",
            subject=scope.actor,
            scopes=sorted(scope.grants),
            expires_at=int(scope.expires_at.timestamp()),
            resource=resource,
        )


def current_scope() -> AgentScope:
    """The scope the current MCP request was authenticated with."""
    token = get_access_token()
    verified = _verified.get()
    if token is None or verified is None or token.client_id != f"connection:{verified[0].connection_id}":
        raise Unauthorized("This request carries no valid credential.")
    return verified[0]


def require_scope(name: str) -> AgentScope:
    """The current request's scope, if its credential carries the OAuth scope `name`.

    Personal tokens carry the scopes of their role; OAuth tokens carry what was consented,
    narrowed to the role. Refused as a tool error (forbidden_scope), not an HTTP status.
    """
    scope = current_scope()
    if name in scope.grants:
        return scope
    if name == SCOPE_PROPOSE and scope.role != Connection.Role.CONTRIBUTOR:
        message = "This credential is read-only: it may read memory but not propose changes."
    elif name == SCOPE_PROPOSE:
        message = f"This credential may not propose memory changes: it lacks the {name} scope."
    else:
        message = f"This credential lacks the {name} scope."
    raise ForbiddenScope(
        message, action="Do not retry. Ask the workspace owner for a contributor connection."
    )
