"""Discovery documents (RFC 8414, RFC 9728) and registration hygiene."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import httpx
import pytest
from django.core.management import call_command
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application

from tests.conftest import LiveServer, Tenant
from tests.workspaces.oauth_harness import ConsentDriver, HandClient, session_cookies
from workspaces.oauth import oauth_clients_prune


@pytest.mark.parametrize(
    "path", ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]
)
def test_protected_resource_metadata_names_the_mcp_resource_exactly(
    oauth_live: LiveServer, path: str
) -> None:
    response = httpx.get(oauth_live.url + path)
    assert response.status_code == 200
    document = response.json()
    assert document["resource"] == oauth_live.mcp_url
    assert document["authorization_servers"] == [oauth_live.url]
    assert document["scopes_supported"] == ["memory:propose", "memory:read"]
    assert document["bearer_methods_supported"] == ["header"]
    assert response.headers["access-control-allow-origin"] == "*"


def test_other_protected_resource_paths_are_not_found(oauth_live: LiveServer) -> None:
    assert httpx.get(f"{oauth_live.url}/.well-known/oauth-protected-resource/other").status_code == 404


def test_authorization_server_metadata_advertises_oauth_2_1_only(oauth_live: LiveServer) -> None:
    document = httpx.get(f"{oauth_live.url}/.well-known/oauth-authorization-server").json()
    base = oauth_live.url
    assert document["issuer"] == base
    assert document["authorization_endpoint"] == f"{base}/oauth/authorize/"
    assert document["token_endpoint"] == f"{base}/oauth/token/"
    assert document["registration_endpoint"] == f"{base}/oauth/register/"
    assert document["revocation_endpoint"] == f"{base}/oauth/revoke_token/"
    assert document["response_types_supported"] == ["code"]
    assert document["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert document["authorization_response_iss_parameter_supported"] is True
    assert document["client_id_metadata_document_supported"] is True
    assert "none" in document["token_endpoint_auth_methods_supported"]


def test_get_on_mcp_is_405_and_the_path_form_metadata_still_answers(oauth_live: LiveServer) -> None:
    assert httpx.get(oauth_live.mcp_url).status_code == 405
    assert httpx.get(f"{oauth_live.url}/.well-known/oauth-protected-resource/mcp").status_code == 200


def _age(application: Any, days: int) -> None:
    Application.objects.filter(pk=application.pk).update(created=timezone.now() - timedelta(days=days))


def test_prune_deletes_stale_unconsented_registrations_only(oauth_live: LiveServer, tenant: Tenant) -> None:
    stale = HandClient.register(oauth_live.url, client_name="never approved")
    fresh = HandClient.register(oauth_live.url, client_name="just registered")
    used = HandClient.register(oauth_live.url, client_name="approved")
    used.obtain(ConsentDriver(oauth_live.url, session_cookies(tenant.owner)), oauth_live.mcp_url)
    manual = Application.objects.create(
        name="by hand",
        client_type="public",
        authorization_grant_type="authorization-code",
        redirect_uris="https://example.com/cb",
    )
    for client in (stale, used):
        _age(Application.objects.get(client_id=client.client_id), days=30)
    _age(manual, days=30)

    assert oauth_clients_prune(older_than=timedelta(days=7)) == 1

    remaining = set(Application.objects.values_list("name", flat=True))
    assert remaining == {"just registered", "approved", "by hand"}
    assert not AccessToken.objects.filter(application__isnull=True).exists()
    assert fresh.client_id in set(Application.objects.values_list("client_id", flat=True))


def test_prune_command_reports_what_it_deleted(db: None) -> None:
    Application.objects.create(
        name="old",
        client_type="public",
        authorization_grant_type="authorization-code",
        redirect_uris="https://example.com/cb",
        registration_source=Application.RegistrationSource.DCR,
    )
    Application.objects.update(created=timezone.now() - timedelta(days=8))
    out = StringIO()
    call_command("prune_oauth_clients", "--older-than", "7d", stdout=out)
    assert out.getvalue().strip() == "Pruned 1 unused OAuth client registration(s)."
    assert not Application.objects.exists()
