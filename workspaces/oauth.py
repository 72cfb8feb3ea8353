"""Glue between django-oauth-toolkit and Connections.

An OAuth Connection points at the DOT Application it was consented for and at the consenting
user; DOT's access tokens for that pair carry the Connection's authority, and only while they are
bound (RFC 8707) to our `/mcp` resource. DOT's models are not swapped: everything here works on
DOT's own rows, and the tokens themselves are stored as checksums only (RFC 9700 token storage).
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import Exists, OuterRef
from django.utils import timezone
from oauth2_provider.models import (
    get_access_token_model,
    get_application_model,
    get_grant_model,
    get_refresh_token_model,
)
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2.rfc6749 import errors as oauth_errors

from workspaces.models import Connection
from workspaces.net import is_loopback_host
from workspaces.scopes import scopes_for_role
from workspaces.throttle import window_hit


class OAuthGrant(NamedTuple):
    """What a DOT access token carries here: its Connection, bound resource and granted scopes."""

    connection: Connection
    resource: str
    scopes: frozenset[str]


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
    return oauth_errors.CustomOAuth2Error(error="invalid_target", description=description, request=request)


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


# --- scopes -----------------------------------------------------------------------------------------


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


# --- the resource server side ---------------------------------------------------------------------


def _checksum(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def oauth_grant_for_token(raw: str) -> OAuthGrant | None:
    """The usable Connection behind a DOT access token, with its bound resource and scopes.

    None unless the token exists, is unexpired, is bound to exactly one resource, and its
    application and user have a usable OAuth Connection (the one consented last). The resource
    is returned as stored so the MCP SDK's audience check refuses tokens for anything else; the
    scopes are the token's, narrowed to what the Connection's role allows.
    """
    token = (
        get_access_token_model()
        .objects.filter(token_checksum=_checksum(raw), expires__gt=timezone.now())
        .only("application_id", "user_id", "resource", "scope", "expires")
        .first()
    )
    if token is None or token.application_id is None or token.user_id is None:
        return None
    resources = list(token.resource or [])
    if len(resources) != 1:
        # An unbound token (e.g. a DCR registration access token) is never accepted here.
        return None
    connection = (
        Connection.objects.usable()
        .select_related("workspace", "zone")
        .filter(
            kind=Connection.Kind.OAUTH, oauth_application_id=token.application_id, created_by_id=token.user_id
        )
        .first()
    )
    if connection is None:
        return None
    scopes = frozenset(token.scope.split()) & scopes_for_role(connection.role)
    return OAuthGrant(connection=connection, resource=resources[0], scopes=scopes)


def oauth_tokens_revoke(*, connection: Connection) -> None:
    """Revoke every DOT grant, access and refresh token behind an OAuth connection."""
    if connection.oauth_application_id is None or connection.created_by_id is None:
        return
    filters = {"application_id": connection.oauth_application_id, "user_id": connection.created_by_id}
    now = timezone.now()
    # Refresh tokens first, marked revoked in one statement (their access tokens go next), so a
    # refresh racing this revocation finds its token already spent.
    get_refresh_token_model().objects.filter(**filters, revoked__isnull=True).update(
        revoked=now, updated=now, access_token=None
    )
    get_access_token_model().objects.filter(**filters).delete()
    get_grant_model().objects.filter(**filters).delete()


# --- registration hygiene -------------------------------------------------------------------------


def registration_throttle_hit(address: str) -> int | None:
    """Count one registration from `address`; the seconds to wait when over the limit, else None.

    A fixed window in the Django cache (shared by every process when CACHE_URL is Redis): at most
    OAUTH_REGISTRATIONS_PER_WINDOW registrations per address per window.
    """
    return window_hit(
        f"oauth-dcr:{address}",
        limit=settings.OAUTH_REGISTRATIONS_PER_WINDOW,
        window_seconds=int(settings.OAUTH_REGISTRATION_WINDOW.total_seconds()),
    )


def oauth_clients_prune(*, older_than: timedelta | None = None) -> int:
    """Delete self-registered clients (DCR or client-ID metadata) never consented to.

    A client is stale when it registered more than `older_than` ago (default
    OAUTH_CLIENT_PRUNE_AFTER) and has no Connection, no grant and no refresh token: nobody ever
    approved it. Its registration access token goes with it. Returns how many were deleted.
    """
    Application = get_application_model()
    cutoff = timezone.now() - (older_than if older_than is not None else settings.OAUTH_CLIENT_PRUNE_AFTER)
    stale = (
        Application.objects.filter(
            registration_source__in=[Application.RegistrationSource.DCR, Application.RegistrationSource.CIMD],
            created__lt=cutoff,
        )
        .exclude(Exists(Connection.objects.filter(oauth_application=OuterRef("pk"))))
        .exclude(Exists(get_grant_model().objects.filter(application=OuterRef("pk"))))
        .exclude(Exists(get_refresh_token_model().objects.filter(application=OuterRef("pk"))))
    )
    _, per_model = Application.objects.filter(pk__in=list(stale.values_list("pk", flat=True))).delete()
    return per_model.get(Application._meta.label, 0)
