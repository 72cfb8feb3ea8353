"""The whole OAuth flow, driven by the MCP SDK's own OAuth client against the live server."""

from __future__ import annotations

import httpx

from tests.conftest import LiveServer, Tenant
from tests.workspaces.oauth_harness import Consent, ConsentDriver, OAuthMCPClient, session_cookies
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
