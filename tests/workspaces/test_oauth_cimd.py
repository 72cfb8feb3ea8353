"""Client-ID metadata documents: a client identified by the URL of its metadata.

The network is not reachable from tests, so DOT's fetcher is replaced by one serving documents
from memory; everything after the fetch (validation, the Application row, consent, tokens) is
the real path.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from oauth2_provider.models import Application

from tests.conftest import LiveServer, Tenant
from tests.workspaces.oauth_harness import CALLBACK, ConsentDriver, OAuthMCPClient, pkce_pair, session_cookies
from workspaces.models import Connection

GOOD = "https://client.example/oauth/metadata.json"
PLAIN_HTTP = "https://client.example/oauth/plain-http.json"
DOCUMENTS: dict[str, dict[str, Any]] = {
    GOOD: {"client_name": "Cursor (metadata document)", "redirect_uris": [CALLBACK]},
    PLAIN_HTTP: {"client_name": "Sloppy", "redirect_uris": ["http://client.example/callback"]},
}


class MemoryFetcher:
    def fetch(self, client_id: str) -> tuple[dict[str, Any], int]:
        document = {
            "client_id": client_id,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            **DOCUMENTS[client_id],
        }
        return document, 3600


@pytest.fixture
def cimd(oauth_live: LiveServer, settings: Any) -> LiveServer:
    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER,
        "CIMD_METADATA_FETCHER": f"{__name__}.MemoryFetcher",
    }
    return oauth_live


def test_sdk_client_identified_by_its_metadata_document_gets_a_connection(
    cimd: LiveServer, tenant: Tenant
) -> None:
    driver = ConsentDriver(cimd.url, session_cookies(tenant.owner))
    client = OAuthMCPClient(cimd.mcp_url, driver)
    provider = client.provider
    client.provider = lambda: _with_metadata_url(provider())  # type: ignore[method-assign]

    result = client.call("list_projects")

    assert not result.is_error, result.structured_content
    application = Application.objects.get(client_id=GOOD)
    assert application.registration_source == Application.RegistrationSource.CIMD
    assert Connection.objects.get(kind=Connection.Kind.OAUTH).oauth_application == application
    assert "identified by its client metadata document" in driver.pages[0]
    assert "Cursor (metadata document)" in driver.pages[0]


def _with_metadata_url(provider: Any) -> Any:
    provider.context.client_metadata_url = GOOD
    return provider


def test_metadata_document_with_a_plain_http_redirect_is_refused(cimd: LiveServer, tenant: Tenant) -> None:
    _, challenge = pkce_pair()
    params = {
        "response_type": "code",
        "client_id": PLAIN_HTTP,
        "redirect_uri": "http://client.example/callback",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": cimd.mcp_url,
    }
    with httpx.Client(cookies=session_cookies(tenant.owner)) as http:
        response = http.get(f"{cimd.url}/oauth/authorize/", params=params)
    assert response.status_code == 400
    assert "location" not in response.headers
