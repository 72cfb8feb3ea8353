"""Glue between django-oauth-toolkit and Connections.

An OAuth Connection points at the DOT Application it was consented for and at the consenting
user; DOT's access tokens for that pair carry the Connection's authority, and only while they are
bound (RFC 8707) to our `/mcp` resource. DOT's models are not swapped: everything here works on
DOT's own rows, and the tokens themselves are stored as checksums only (RFC 9700 token storage).

The OAuth2 validator (`workspaces.oauth.validator`) is not imported here: DOT loads it by its
dotted path (settings.OAUTH2_PROVIDER) when an OAuth endpoint is used, and DOT's own validators
pull in jwcrypto and requests, which a serving worker or a management command otherwise never
needs (about 60 ms of a command's start-up and 5 MB of a worker's memory).
"""

from workspaces.oauth.clients import oauth_clients_prune, registration_throttle_hit
from workspaces.oauth.grants import (
    OAuthGrant,
    oauth_grant_for_token,
    oauth_token_checksum,
    oauth_tokens_revoke,
)
from workspaces.oauth.resources import is_mcp_resource, redirect_uri_problem, resource_error

__all__ = [
    "OAuthGrant",
    "is_mcp_resource",
    "oauth_clients_prune",
    "oauth_grant_for_token",
    "oauth_token_checksum",
    "oauth_tokens_revoke",
    "redirect_uri_problem",
    "registration_throttle_hit",
    "resource_error",
]
