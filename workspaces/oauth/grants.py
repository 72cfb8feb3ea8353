"""The resource server side: the Connection behind a DOT access token, and revoking its tokens."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import NamedTuple

from django.utils import timezone
from oauth2_provider.models import (
    get_access_token_model,
    get_grant_model,
    get_refresh_token_model,
)

from workspaces.models import Connection
from workspaces.scopes import scopes_for_role


class OAuthGrant(NamedTuple):
    """What a DOT access token carries here: its Connection, bound resource and granted scopes."""

    connection: Connection
    resource: str
    scopes: frozenset[str]
    expires: datetime


def oauth_token_checksum(raw: str) -> str:
    """How DOT stores an access token: the SHA-256 of the token, never the token."""
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
        .objects.filter(token_checksum=oauth_token_checksum(raw), expires__gt=timezone.now())
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
    return OAuthGrant(connection=connection, resource=resources[0], scopes=scopes, expires=token.expires)


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
