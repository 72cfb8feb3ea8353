"""Glue between django-oauth-toolkit and Connections.

An OAuth Connection points at the DOT Application it was consented for and at the consenting
user; DOT's access tokens for that pair carry the Connection's authority.
"""

from __future__ import annotations

from workspaces.models import Connection


def oauth_tokens_revoke(*, connection: Connection) -> None:
    """Revoke every DOT grant, access and refresh token behind an OAuth connection."""
    from oauth2_provider.models import get_access_token_model, get_grant_model, get_refresh_token_model

    if connection.oauth_application_id is None:
        return
    filters = {"application_id": connection.oauth_application_id, "user_id": connection.created_by_id}
    for refresh in get_refresh_token_model().objects.filter(**filters, revoked__isnull=True):
        refresh.revoke()
    get_access_token_model().objects.filter(**filters).delete()
    get_grant_model().objects.filter(**filters).delete()


def connection_for_oauth_token(raw: str) -> tuple[Connection, str] | None:
    """The usable Connection behind a DOT access token, with the resource the token is bound to.

    No OAuth grant creates a Connection yet (the consent flow does), so no DOT token carries
    authority here.
    """
    return None
