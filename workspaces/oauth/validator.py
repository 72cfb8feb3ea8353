"""DOT's request validator, narrowed to what an MCP resource server needs."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from oauth2_provider.oauth2_validators import OAuth2Validator

from workspaces.oauth.resources import redirect_uri_problem, resource_error


def known_scopes() -> list[str]:
    return list(settings.OAUTH2_PROVIDER["SCOPES"])


class UnforgetterOAuth2Validator(OAuth2Validator):
    """DOT's validator, narrowed to what an MCP resource server needs.

    - Unknown requested scopes (mcp-remote asks for `openid email profile`) are dropped, never
      an error; a request left with none gets the default scope.
    - Redirect URIs must be https or http on a loopback address, however the client registered
      (DCR, a client-ID metadata document, or by hand).
    - Every issued token is bound to exactly our `/mcp` resource: the grant carries it from the
      consent page, and a token request asking for anything else is `invalid_target`.
    """

    def validate_scopes(
        self, client_id: str, scopes: list[str], client: Any, request: Any, *args: Any, **kwargs: Any
    ) -> bool:
        known = set(known_scopes())
        kept = [scope for scope in dict.fromkeys(scopes) if scope in known]
        request.scopes = kept or list(settings.OAUTH2_PROVIDER["DEFAULT_SCOPES"])
        return True

    def validate_redirect_uri(
        self, client_id: str, redirect_uri: str, request: Any, *args: Any, **kwargs: Any
    ) -> bool:
        if redirect_uri_problem(redirect_uri) is not None:
            return False
        return bool(super().validate_redirect_uri(client_id, redirect_uri, request, *args, **kwargs))

    def _check_and_set_request_resource(self, request: Any) -> None:
        super()._check_and_set_request_resource(request)
        error = resource_error(list(request.resource or []), request=request)
        if error is not None:
            raise error
