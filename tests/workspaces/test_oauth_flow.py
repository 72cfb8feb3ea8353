"""The whole OAuth flow, driven by the MCP SDK's own OAuth client against the live server."""

from __future__ import annotations

import httpx

from tests.conftest import LiveServer, Tenant
from tests.workspaces.oauth_harness import (
    Consent,
    ConsentDriver,
    HandClient,
    OAuthMCPClient,
    pkce_pair,
    session_cookies,
)
from workspaces.models import Connection


def test_sdk_client_discovers_registers_consents_and_calls_a_tool(
    oauth_live: LiveServer, tenant: Tenant, mode: str
) -> None:
    driver = ConsentDriver(oauth_live.url, session_cookies(tenant.owner), Consent(projects=["handbook"]))
    client = OAuthMCPClient(oauth_live.mcp_url, driver)

    result = client.call("list_projects", mode=mode)

    assert not result.is_error, result.structured_content
    assert result.structured_content is not None
    assert [p["id"] for p in result.structured_content["projects"]] == ["handbook"]
    connection = Connection.objects.get(kind=Connection.Kind.OAUTH)
    assert connection.workspace == tenant.workspace
    assert connection.created_by == tenant.owner
    assert connection.role == Connection.Role.READER
    assert client.storage.tokens is not None
    assert client.storage.tokens.scope == "memory:read"
    assert "Claude Code (tests)" in driver.pages[0]


def test_unauthenticated_call_is_challenged_with_metadata_and_scope(oauth_live: LiveServer) -> None:
    response = httpx.post(oauth_live.mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert f'resource_metadata="{oauth_live.url}/.well-known/oauth-protected-resource/mcp"' in challenge
    assert 'scope="memory:read memory:propose"' in challenge


def test_consent_page_shows_who_asks_for_what_and_where_it_returns(
    oauth_live: LiveServer, tenant: Tenant
) -> None:
    hand = HandClient.register(
        oauth_live.url, client_name="Cursor", redirect_uris=["http://127.0.0.1:33418/callback"]
    )
    driver = ConsentDriver(oauth_live.url, session_cookies(tenant.owner), Consent(approve=False))
    _, challenge = pkce_pair()
    driver.run(
        hand.authorize_url(
            code_challenge=challenge,
            code_challenge_method="S256",
            resource=oauth_live.mcp_url,
            scope="memory:read memory:propose openid",
        )
    )
    page = driver.pages[0]
    assert "Connect Cursor to Unforgetter?" in page
    assert "registered itself by dynamic client registration" in page
    assert "127.0.0.1:33418" in page
    assert "memory:read" in page
    assert "memory:propose" in page
    assert oauth_live.mcp_url in page
    assert "ignored: openid" in page
    assert '<option value="cursor" selected>' in page, "the zone is guessed from the client name"
    assert "Payroll" not in page, "restricted projects are never offered"
