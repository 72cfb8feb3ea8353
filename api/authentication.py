"""Bearer-credential authentication for the REST API: the same credentials and checks as /mcp."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from workspaces.bearers import bearer_verified
from workspaces.scope import AgentScope
from workspaces.scopes import SCOPE_READ


@dataclass(frozen=True)
class AgentPrincipal:
    """`request.user` for a request authenticated by an agent credential; `request.auth` is its scope."""

    scope: AgentScope
    is_authenticated: bool = True
    is_anonymous: bool = False

    @property
    def username(self) -> str:
        return self.scope.actor


class ConnectionAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[AgentPrincipal, AgentScope] | None:
        header = get_authorization_header(request).decode("latin-1")
        scheme, _, raw = header.partition(" ")
        if scheme.lower() != "bearer" or not raw.strip():
            return None
        verified = bearer_verified(raw.strip())
        # The API serves the same resource as /mcp: a token bound elsewhere, or one without the
        # read scope, carries no authority here.
        if (
            verified is None
            or verified[0].resource.rstrip("/") != settings.MCP_RESOURCE_URL.rstrip("/")
            or SCOPE_READ not in verified[0].scopes
        ):
            raise AuthenticationFailed("The token is unknown, expired or revoked.")
        scope = verified[1]
        return AgentPrincipal(scope), scope

    def authenticate_header(self, request: Request) -> str:
        return f'Bearer resource_metadata="{settings.PUBLIC_URL}/.well-known/oauth-protected-resource/mcp"'
