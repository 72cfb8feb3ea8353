"""What the authorization server and the /mcp resource server refuse, and how."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, Grant, RefreshToken

from tests.conftest import LiveServer, Tenant
from tests.factories import UserFactory
from tests.mcp_client import MCPClient
from tests.workspaces.oauth_harness import (
    CALLBACK,
    Consent,
    ConsentDriver,
    HandClient,
    pkce_pair,
    session_cookies,
)
from workspaces.models import Connection
from workspaces.services import connection_revoke

LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


@pytest.fixture
def hand(oauth_live: LiveServer) -> HandClient:
    return HandClient.register(oauth_live.url)


@pytest.fixture
def driver(oauth_live: LiveServer, tenant: Tenant) -> ConsentDriver:
    return ConsentDriver(oauth_live.url, session_cookies(tenant.owner))


def _query(location: str | None) -> dict[str, str]:
    assert location is not None
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def _mcp_status(live: LiveServer, token: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    return httpx.post(live.mcp_url, json=LIST_TOOLS, headers=headers, timeout=30)


def _s256_url(hand: HandClient, live: LiveServer, **params: str | None) -> tuple[str, str]:
    """A valid authorization URL (S256 PKCE, our resource) with `params` changed: (verifier, url)."""
    verifier, challenge = pkce_pair()
    query: dict[str, str | None] = {
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": live.mcp_url,
        **params,
    }
    return verifier, hand.authorize_url(**query)


def _access_token(raw: str) -> AccessToken:
    return AccessToken.objects.get(token_checksum=hashlib.sha256(raw.encode()).hexdigest())


# --- the authorization endpoint -----------------------------------------------------------------


def test_authorization_without_pkce_is_refused_back_to_the_client(
    oauth_live: LiveServer, hand: HandClient, driver: ConsentDriver
) -> None:
    response = driver.run(hand.authorize_url(resource=oauth_live.mcp_url))
    assert response.status_code == 302
    query = _query(driver.location)
    assert driver.location is not None
    assert driver.location.startswith(CALLBACK)
    assert query["error"] == "invalid_request"
    assert query["state"] == "st-1"
    assert query["iss"] == oauth_live.url
    assert not Connection.objects.exists()


def test_plain_pkce_is_refused(oauth_live: LiveServer, hand: HandClient, driver: ConsentDriver) -> None:
    verifier, _ = pkce_pair()
    driver.run(
        hand.authorize_url(
            code_challenge=verifier, code_challenge_method="plain", resource=oauth_live.mcp_url
        )
    )
    query = _query(driver.location)
    assert query["error"] == "invalid_request"
    assert "S256" in query["error_description"]
    assert not Grant.objects.exists()


@pytest.mark.parametrize(
    "resource",
    [None, "https://elsewhere.example/mcp", "{live}/api", "{live}", "not a uri"],
    ids=["missing", "other-host", "other-path", "origin-only", "malformed"],
)
def test_authorization_for_anything_but_our_mcp_resource_is_invalid_target(
    oauth_live: LiveServer, hand: HandClient, driver: ConsentDriver, resource: str | None
) -> None:
    requested = resource.format(live=oauth_live.url) if resource else None
    driver.run(_s256_url(hand, oauth_live, resource=requested)[1])
    query = _query(driver.location)
    assert query["error"] == "invalid_target"
    assert not driver.pages, "no consent page is shown"
    assert not Grant.objects.exists()


def test_unregistered_redirect_uri_gets_an_error_page_and_no_redirect(
    oauth_live: LiveServer, hand: HandClient, driver: ConsentDriver
) -> None:
    _, url = _s256_url(hand, oauth_live, redirect_uri="http://127.0.0.1:9/elsewhere")
    with httpx.Client(cookies=driver.cookies) as http:
        response = http.get(url)
    assert response.status_code == 400
    assert "location" not in response.headers
    assert "cannot continue" in response.text


def test_signed_out_user_is_sent_to_sign_in_first(oauth_live: LiveServer, hand: HandClient) -> None:
    _, challenge = pkce_pair()
    url = hand.authorize_url(
        code_challenge=challenge, code_challenge_method="S256", resource=oauth_live.mcp_url
    )
    response = httpx.get(url)
    assert response.status_code == 302
    assert response.headers["location"].startswith("/console/login/?next=")


def test_denying_consent_returns_access_denied_and_grants_nothing(
    oauth_live: LiveServer, hand: HandClient, driver: ConsentDriver
) -> None:
    driver.consent = Consent(approve=False)
    _, challenge = pkce_pair()
    driver.run(
        hand.authorize_url(
            code_challenge=challenge, code_challenge_method="S256", resource=oauth_live.mcp_url
        )
    )
    query = _query(driver.location)
    assert query["error"] == "access_denied"
    assert query["iss"] == oauth_live.url
    assert not Connection.objects.exists()


def test_owner_cannot_grant_a_workspace_they_do_not_own(
    oauth_live: LiveServer, hand: HandClient, driver: ConsentDriver, other_tenant: Tenant
) -> None:
    driver.consent = Consent(workspace=other_tenant.workspace.slug)
    _, challenge = pkce_pair()
    response = driver.run(
        hand.authorize_url(
            code_challenge=challenge, code_challenge_method="S256", resource=oauth_live.mcp_url
        )
    )
    assert response.status_code == 200
    assert "Choose a workspace you own." in response.text
    assert not Connection.objects.exists()


def test_user_owning_no_workspace_cannot_approve(oauth_live: LiveServer, hand: HandClient) -> None:
    stranger = UserFactory(username="stranger")
    _, challenge = pkce_pair()
    url = hand.authorize_url(
        code_challenge=challenge, code_challenge_method="S256", resource=oauth_live.mcp_url
    )
    with httpx.Client(cookies=session_cookies(stranger)) as http:
        page = http.get(url)
    assert page.status_code == 200
    assert "You own no workspace" in page.text
    assert 'name="allow"' not in page.text


# --- the token endpoint and the resource server ------------------------------------------------------


def test_token_request_for_another_resource_is_invalid_target(
    oauth_live: LiveServer, hand: HandClient, driver: ConsentDriver
) -> None:
    verifier, challenge = pkce_pair()
    driver.run(
        hand.authorize_url(
            code_challenge=challenge, code_challenge_method="S256", resource=oauth_live.mcp_url
        )
    )
    code = _query(driver.location)["code"]
    response = hand.token(
        grant_type="authorization_code",
        code=code,
        redirect_uri=hand.redirect_uri,
        code_verifier=verifier,
        resource="https://elsewhere.example/mcp",
    )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_target"


def test_code_without_the_right_verifier_is_refused(
    oauth_live: LiveServer, hand: HandClient, driver: ConsentDriver
) -> None:
    _, challenge = pkce_pair()
    driver.run(
        hand.authorize_url(
            code_challenge=challenge, code_challenge_method="S256", resource=oauth_live.mcp_url
        )
    )
    code = _query(driver.location)["code"]
    wrong, _ = pkce_pair()
    response = hand.token(
        grant_type="authorization_code", code=code, redirect_uri=hand.redirect_uri, code_verifier=wrong
    )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"


def test_issued_token_is_bound_to_mcp_and_works(
    oauth_live: LiveServer, hand: HandClient, driver: ConsentDriver, mcp_client: Callable[..., MCPClient]
) -> None:
    tokens = hand.obtain(driver, oauth_live.mcp_url)
    assert tokens["scope"] == "memory:read"
    assert _access_token(tokens["access_token"]).resource == [oauth_live.mcp_url]
    assert _access_token(tokens["access_token"]).token == "", "only the checksum is stored"
    projects = mcp_client(tokens["access_token"]).ok("list_projects")["projects"]
    assert [p["id"] for p in projects] == ["handbook", "platform"]


def test_token_for_another_audience_is_refused(
    oauth_live: LiveServer, hand: HandClient, driver: ConsentDriver
) -> None:
    tokens = hand.obtain(driver, oauth_live.mcp_url)
    AccessToken.objects.filter(pk=_access_token(tokens["access_token"]).pk).update(
        resource=["https://elsewhere.example/mcp"]
    )
    response = _mcp_status(oauth_live, tokens["access_token"])
    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


def test_unbound_token_is_refused(oauth_live: LiveServer, hand: HandClient, driver: ConsentDriver) -> None:
    tokens = hand.obtain(driver, oauth_live.mcp_url)
    AccessToken.objects.filter(pk=_access_token(tokens["access_token"]).pk).update(resource=[])
    assert _mcp_status(oauth_live, tokens["access_token"]).status_code == 401


def test_expired_token_is_refused(oauth_live: LiveServer, hand: HandClient, driver: ConsentDriver) -> None:
    tokens = hand.obtain(driver, oauth_live.mcp_url)
    AccessToken.objects.filter(pk=_access_token(tokens["access_token"]).pk).update(
        expires=timezone.now() - timedelta(seconds=1)
    )
    assert _mcp_status(oauth_live, tokens["access_token"]).status_code == 401


def test_token_lacking_memory_read_gets_insufficient_scope(
    oauth_live: LiveServer, hand: HandClient, driver: ConsentDriver
) -> None:
    tokens = hand.obtain(driver, oauth_live.mcp_url)
    AccessToken.objects.filter(pk=_access_token(tokens["access_token"]).pk).update(scope="memory:propose")
    response = _mcp_status(oauth_live, tokens["access_token"])
    assert response.status_code == 403
    challenge = response.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert 'scope="memory:read"' in challenge
    assert "resource_metadata=" in challenge


def test_registration_access_token_is_not_an_mcp_credential(oauth_live: LiveServer) -> None:
    response = httpx.post(
        f"{oauth_live.url}/oauth/register/",
        json={"client_name": "x", "redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none"},
    )
    assert response.status_code == 201
    assert _mcp_status(oauth_live, response.json()["registration_access_token"]).status_code == 401


def test_revoking_the_connection_revokes_grant_access_and_refresh_tokens(
    oauth_live: LiveServer, hand: HandClient, driver: ConsentDriver, tenant: Tenant
) -> None:
    tokens = hand.obtain(driver, oauth_live.mcp_url)
    assert _mcp_status(oauth_live, tokens["access_token"]).status_code == 200
    connection = Connection.objects.get(kind=Connection.Kind.OAUTH)

    connection_revoke(connection=connection, revoked_by=tenant.owner)

    assert _mcp_status(oauth_live, tokens["access_token"]).status_code == 401
    refreshed = hand.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"])
    assert refreshed.status_code == 400
    assert refreshed.json()["error"] == "invalid_grant"
    assert not AccessToken.objects.filter(user=tenant.owner).exists()
    assert not Grant.objects.exists()
    assert not RefreshToken.objects.filter(revoked__isnull=True).exists()


def test_rfc7009_revocation_ends_the_access_token(
    oauth_live: LiveServer, hand: HandClient, driver: ConsentDriver
) -> None:
    tokens = hand.obtain(driver, oauth_live.mcp_url)
    response = httpx.post(
        f"{oauth_live.url}/oauth/revoke_token/",
        data={"token": tokens["access_token"], "client_id": hand.client_id},
    )
    assert response.status_code == 200
    assert _mcp_status(oauth_live, tokens["access_token"]).status_code == 401


def test_refresh_rotates_and_a_replayed_refresh_token_revokes_the_family(
    oauth_live: LiveServer, hand: HandClient, driver: ConsentDriver
) -> None:
    first = hand.obtain(driver, oauth_live.mcp_url)
    second_response = hand.token(grant_type="refresh_token", refresh_token=first["refresh_token"])
    assert second_response.status_code == 200, second_response.text
    second = second_response.json()
    assert second["refresh_token"] != first["refresh_token"]
    assert _access_token(second["access_token"]).resource == [oauth_live.mcp_url]
    assert _mcp_status(oauth_live, second["access_token"]).status_code == 200

    replay = hand.token(grant_type="refresh_token", refresh_token=first["refresh_token"])

    assert replay.status_code == 400
    assert _mcp_status(oauth_live, second["access_token"]).status_code == 401
    assert hand.token(grant_type="refresh_token", refresh_token=second["refresh_token"]).status_code == 400


def test_new_consent_replaces_the_previous_connection(
    oauth_live: LiveServer, hand: HandClient, driver: ConsentDriver
) -> None:
    first = hand.obtain(driver, oauth_live.mcp_url)
    driver.consent = Consent(role="contributor")
    second = hand.obtain(driver, oauth_live.mcp_url)

    assert _mcp_status(oauth_live, first["access_token"]).status_code == 401
    assert _mcp_status(oauth_live, second["access_token"]).status_code == 200
    assert second["scope"] == "memory:read memory:propose"
    connections = Connection.objects.filter(kind=Connection.Kind.OAUTH).order_by("created_at")
    assert [c.revoked_at is None for c in connections] == [False, True]
    assert connections[1].role == Connection.Role.CONTRIBUTOR


def test_unknown_requested_scopes_are_ignored_not_refused(
    oauth_live: LiveServer, hand: HandClient, driver: ConsentDriver
) -> None:
    verifier, url = _s256_url(hand, oauth_live, scope="openid email profile")
    driver.run(url)
    assert "openid" in driver.pages[0]  # shown as ignored
    code = _query(driver.location)["code"]
    response = hand.token(
        grant_type="authorization_code", code=code, redirect_uri=hand.redirect_uri, code_verifier=verifier
    )
    assert response.json()["scope"] == "memory:read"


def test_grok_zone_caps_the_oauth_connection_lifetime(
    oauth_live: LiveServer, hand: HandClient, driver: ConsentDriver
) -> None:
    driver.consent = Consent(zone="grok-bot")
    hand.obtain(driver, oauth_live.mcp_url)
    connection = Connection.objects.get(kind=Connection.Kind.OAUTH)
    assert connection.expires_at <= timezone.now() + timedelta(hours=24)


# --- registration --------------------------------------------------------------------------------


def _register(live: LiveServer, **metadata: Any) -> httpx.Response:
    body = {"client_name": "c", "redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none", **metadata}
    return httpx.post(f"{live.url}/oauth/register/", json=body, timeout=30)


@pytest.mark.parametrize(
    "redirect_uri",
    [
        "https://claude.ai/api/mcp/auth_callback",
        "http://127.0.0.1:33418/callback",
        "http://localhost:6274/cb",
    ],
)
def test_https_and_loopback_redirect_uris_register(oauth_live: LiveServer, redirect_uri: str) -> None:
    response = _register(oauth_live, redirect_uris=[redirect_uri])
    assert response.status_code == 201, response.text
    assert response.json()["redirect_uris"] == [redirect_uri]


@pytest.mark.parametrize(
    ("metadata", "error"),
    [
        ({"redirect_uris": ["http://evil.example/cb"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["cursor://anysphere.cursor-retrieval/oauth/callback"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["https://example.com/cb#frag"]}, "invalid_redirect_uri"),
        ({"redirect_uris": []}, "invalid_redirect_uri"),
        ({"grant_types": ["password"]}, "invalid_client_metadata"),
        ({"grant_types": ["client_credentials"]}, "invalid_client_metadata"),
        ({"response_types": ["token"]}, "invalid_client_metadata"),
    ],
    ids=["plain-http", "custom-scheme", "fragment", "none", "password", "client-credentials", "implicit"],
)
def test_registration_outside_oauth_2_1_is_refused(
    oauth_live: LiveServer, metadata: dict[str, Any], error: str
) -> None:
    response = _register(oauth_live, **metadata)
    assert response.status_code == 400
    assert response.json()["error"] == error
    assert not Application.objects.exists()


def test_registration_flood_from_one_address_is_throttled(oauth_live: LiveServer, settings: Any) -> None:
    settings.OAUTH_REGISTRATIONS_PER_WINDOW = 3
    statuses = [_register(oauth_live).status_code for _ in range(5)]
    assert statuses == [201, 201, 201, 429, 429]
    refused = _register(oauth_live)
    assert int(refused.headers["retry-after"]) > 0
    assert refused.json()["error"] == "rate_limited"
    assert Application.objects.count() == 3


def _registration(live: LiveServer) -> dict[str, Any]:
    response = _register(live)
    assert response.status_code == 201
    body: dict[str, Any] = response.json()
    return body


def test_registration_update_is_held_to_the_same_policy(oauth_live: LiveServer) -> None:
    registered = _registration(oauth_live)
    response = httpx.put(
        registered["registration_client_uri"],
        json={"redirect_uris": ["http://evil.example/cb"], "token_endpoint_auth_method": "none"},
        headers={"Authorization": f"Bearer {registered['registration_access_token']}"},
    )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_redirect_uri"
    assert Application.objects.get(client_id=registered["client_id"]).redirect_uris == CALLBACK


def test_deregistering_a_consented_client_revokes_its_connection_and_keeps_the_record(
    oauth_live: LiveServer, driver: ConsentDriver
) -> None:
    registered = _registration(oauth_live)
    hand = HandClient(base_url=oauth_live.url, client_id=registered["client_id"])
    tokens = hand.obtain(driver, oauth_live.mcp_url)

    response = httpx.delete(
        registered["registration_client_uri"],
        headers={"Authorization": f"Bearer {registered['registration_access_token']}"},
    )

    assert response.status_code == 204
    assert _mcp_status(oauth_live, tokens["access_token"]).status_code == 401
    connection = Connection.objects.get(kind=Connection.Kind.OAUTH)
    assert connection.revoked_at is not None
    assert Application.objects.get(client_id=hand.client_id).redirect_uris == ""
    _, url = _s256_url(hand, oauth_live)
    with httpx.Client(cookies=driver.cookies) as http:
        assert http.get(url).status_code == 400


def test_deregistering_an_unused_client_deletes_it(oauth_live: LiveServer) -> None:
    registered = _registration(oauth_live)
    response = httpx.delete(
        registered["registration_client_uri"],
        headers={"Authorization": f"Bearer {registered['registration_access_token']}"},
    )
    assert response.status_code == 204
    assert not Application.objects.exists()


def test_a_named_native_scheme_can_be_allowed(oauth_live: LiveServer, settings: Any) -> None:
    settings.OAUTH_NATIVE_REDIRECT_SCHEMES = ["cursor"]
    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER,
        "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https", "cursor"],
    }
    allowed = _register(oauth_live, redirect_uris=["cursor://anysphere.cursor-mcp/oauth/callback"])
    assert allowed.status_code == 201, allowed.text
    assert _register(oauth_live, redirect_uris=["vscode://callback"]).status_code == 400
