"""The token verifier of the MCP endpoint.

It turns a presented bearer credential into the `AgentScope` that carries its authority, or None
(HTTP 401 with a `resource_metadata` challenge, before any tool runs). The credential's rows are
read on every request (workspaces.bearers), so a revocation is effective on the next call in every
process.
"""

from __future__ import annotations

import functools
import time
from contextvars import ContextVar

from django.conf import settings
from django.utils import timezone
from mcp.server.auth.middleware.auth_context import auth_context_var, get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from pydantic import AnyHttpUrl, ValidationError

from mcpbridge.threads import in_request_thread
from workspaces.bearers import ReadAhead, bearer_verified
from workspaces.exceptions import ForbiddenScope, Unauthorized
from workspaces.models import Connection
from workspaces.outages import OUTAGE_ERRORS
from workspaces.scope import AgentScope
from workspaces.scopes import SCOPE_PROPOSE, SCOPE_READ
from workspaces.selectors import last_used_is_stale
from workspaces.services import connection_touch

__all__ = [
    "SCOPE_PROPOSE",
    "SCOPE_READ",
    "ConnectionTokenVerifier",
    "authenticated_here",
    "current_scope",
    "require_scope",
]

_verified: ContextVar[tuple[AgentScope, str] | None] = ContextVar("unforgetter_scope", default=None)


def authenticate(raw: str, also: ReadAhead | None = None) -> tuple[AgentScope, str] | None:
    """The scope behind a bearer credential and the resource it was issued for; use is recorded.
    `also`: the call's first read, run in the credential's statement (workspaces.bearers)."""
    verified = bearer_verified(raw, also)
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
        _verified.set(found)
        return _access_token(token, *found)


def _access_token(token: str, scope: AgentScope, resource: str) -> AccessToken:
    return AccessToken(
        token=token,
        client_id=f"connection:{scope.connection_id}",
        subject=scope.actor,
        scopes=sorted(scope.grants),
        expires_at=int(scope.expires_at.timestamp()),
        resource=resource,
    )


def authenticated_here(token: str, connection_id: int, also: ReadAhead | None = None) -> bool:
    """Verify `token` in the calling request thread, as the SDK's auth middleware would accept it
    (mcpbridge.direct): usable, unexpired, issued for this resource, granting memory:read, and
    still the connection `connection_id`. If so the request's scope is set, as `verify_token` and
    the middleware set it. False leaves the request to the SDK, which then answers it.
    """
    try:
        found = authenticate(token, also)
    except OUTAGE_ERRORS:
        return False
    if found is None:
        return False
    scope, resource = found
    access = _access_token(token, scope, resource)
    if (
        scope.connection_id != connection_id
        or (access.expires_at and access.expires_at < int(time.time()))
        or not _for_this_resource(resource, settings.MCP_RESOURCE_URL)
        or SCOPE_READ not in access.scopes
    ):
        return False
    _verified.set(found)
    auth_context_var.set(AuthenticatedUser(access))
    return True


@functools.lru_cache(maxsize=64)
def _for_this_resource(resource: str | None, ours: str) -> bool:
    """The SDK's resource check (mcp.server.auth.middleware.bearer_auth): compared as URLs."""
    try:
        token_resource = str(AnyHttpUrl(resource or ""))
    except ValidationError:
        return False
    return token_resource.removesuffix("/") == str(AnyHttpUrl(ours)).removesuffix("/")


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
