"""Connections: the list, issuing a token (shown once), revoking with proof, trust zones."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from mcpbridge.auth import authenticate
from tests.conftest import Tenant
from workspaces.models import AuditEvent, Connection, TrustZone
from workspaces.selectors import credential_refused

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(client: Client, tenant: Tenant) -> Client:
    client.force_login(tenant.owner)
    return client


def issue(owner: Client, **fields: object) -> str:
    data: dict[str, object] = {
        "actor": "claude-code@alice",
        "label": "Alice's laptop",
        "zone": TrustZone.objects.get(workspace__slug="acme", name="claude").pk,
        "role": "contributor",
        "all_projects": "on",
        "data_classes": ["public", "internal"],
        "ttl": "30d",
    }
    data.update(fields)
    return owner.post(reverse("console:issue", args=["acme"]), data).content.decode()


def test_connections_list_every_credential_with_its_scope_and_dates(owner: Client, tenant: Tenant) -> None:
    tenant.issue(actor="cursor@bob", zone="cursor", label="Bob's Cursor", projects=["platform"])
    _token, revoked = tenant.issue(actor="old@carol")
    revoked.revoked_at = revoked.created_at
    revoked.save(update_fields=["revoked_at"])
    content = owner.get(reverse("console:connections", args=["acme"])).content.decode()
    for expected in (
        "cursor@bob",
        "Bob&#x27;s Cursor",
        "platform",
        "Contributor",
        "old@carol",
        "revoked",
        "live",
    ):
        assert expected in content, expected
    assert "never" in content  # last used


def test_issuing_a_token_shows_it_once_with_client_snippets(owner: Client, tenant: Tenant) -> None:
    response = owner.post(
        reverse("console:issue", args=["acme"]),
        {
            "actor": "claude-code@alice",
            "zone": TrustZone.objects.get(workspace=tenant.workspace, name="claude").pk,
            "role": "contributor",
            "all_projects": "on",
            "data_classes": ["public", "internal"],
            "ttl": "30d",
        },
    )
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    content = response.content.decode()
    token = re.search(r'id="token" value="(unf_[A-Za-z0-9_-]+)"', content)
    assert token is not None
    found = authenticate(token.group(1))
    assert found is not None
    connection = Connection.objects.get(pk=found[0].connection_id)
    assert connection.actor == "claude-code@alice"
    assert connection.created_by == tenant.owner
    for client in ("Claude Code", "Cursor", "VS Code", "Codex", "ChatGPT", "Inspector"):
        assert client in content, client
    # The endpoint clients must type: PUBLIC_URL's /mcp (the live-server fixture repoints it).
    assert f'<code id="mcp-url">{settings.PUBLIC_URL}/mcp</code>' in content
    assert 'data-copy="#token"' in content
    # Shown once: no other page ever carries it.
    for url in (
        reverse("console:connections", args=["acme"]),
        reverse("console:connection", args=["acme", connection.pk]),
    ):
        assert token.group(1) not in owner.get(url).content.decode()
    assert AuditEvent.objects.filter(action=AuditEvent.Action.TOKEN_ISSUED, user=tenant.owner).exists()


def test_issue_form_explains_what_is_wrong(owner: Client, tenant: Tenant) -> None:
    content = issue(owner, actor="", all_projects="", data_classes=[], ttl="forever")
    assert "This field is required." in content
    assert "Choose at least one project, or all projects." in content
    assert "is not a duration" in content
    low = TrustZone.objects.get(workspace=tenant.workspace, name="grok-bot")
    content = issue(owner, zone=low.pk, ttl="30d")
    assert "allows credentials of at most" in content
    assert not Connection.objects.exists()


def test_restricted_data_class_cannot_be_chosen(owner: Client) -> None:
    content = issue(owner, data_classes=["restricted"])
    assert "Select a valid choice" in content
    assert not Connection.objects.exists()


def test_issue_for_chosen_projects(owner: Client) -> None:
    issue(owner, all_projects="", projects=["platform", "handbook"])
    connection = Connection.objects.get()
    assert not connection.all_projects
    assert sorted(connection.projects.values_list("slug", flat=True)) == ["handbook", "platform"]


def test_revoking_proves_the_verifier_refuses_the_credential(owner: Client, tenant: Tenant) -> None:
    token, connection = tenant.issue(actor="grok@bot", zone="grok-bot", ttl=timedelta(hours=1))
    assert authenticate(token) is not None
    response = owner.post(reverse("console:revoke", args=["acme", connection.pk]), follow=True)
    content = response.content.decode()
    assert "Verified: the MCP endpoint now refuses this credential (HTTP 401)." in content
    assert authenticate(token) is None
    assert credential_refused(connection)
    assert AuditEvent.objects.filter(action=AuditEvent.Action.TOKEN_REVOKED, connection=connection).exists()


def test_revoking_with_the_pasted_token_runs_it_through_the_real_verifier(
    owner: Client, tenant: Tenant
) -> None:
    token, connection = tenant.issue()
    url = reverse("console:revoke", args=["acme", connection.pk])
    content = owner.post(url, {"token": token}, follow=True).content.decode()
    assert "Tested the pasted token with the MCP endpoint&#x27;s verifier: refused." in content
    other_token, _other = tenant.issue(actor="someone-else")
    verify = reverse("console:verify", args=["acme", connection.pk])
    content = owner.post(verify, {"token": other_token}, follow=True).content.decode()
    assert "not this connection&#x27;s credential; nothing was tested" in content
    assert authenticate(other_token) is not None


def test_a_live_credential_is_not_claimed_refused(owner: Client, tenant: Tenant) -> None:
    _token, connection = tenant.issue()
    content = owner.get(reverse("console:connection", args=["acme", connection.pk])).content.decode()
    assert "Verified" not in content
    assert not credential_refused(connection)
    assert "Revoke this credential" in content


def test_oauth_connections_are_listed_by_kind_and_revoked_with_proof(owner: Client, tenant: Tenant) -> None:
    from oauth2_provider.models import Application

    app = Application.objects.create(
        name="Claude Code",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1:33418/callback",
    )
    _token, template = tenant.issue()
    Connection.objects.create(
        workspace=tenant.workspace,
        kind=Connection.Kind.OAUTH,
        actor="claude-code@oauth",
        zone=template.zone,
        role=Connection.Role.READER,
        all_projects=True,
        data_classes=["public"],
        oauth_application=app,
        created_by=tenant.owner,
        expires_at=template.expires_at,
    )
    content = owner.get(reverse("console:connections", args=["acme"])).content.decode()
    assert "claude-code@oauth" in content
    assert "OAuth" in content
    oauth = Connection.objects.get(kind=Connection.Kind.OAUTH)
    assert not credential_refused(oauth)
    page = owner.post(reverse("console:revoke", args=["acme", oauth.pk]), follow=True).content.decode()
    assert "Verified: the MCP endpoint now refuses this credential (HTTP 401)." in page
    assert "OAuth access and refresh tokens were revoked with it" in page
    assert credential_refused(oauth)


def test_owner_edits_a_trust_zone(owner: Client, tenant: Tenant) -> None:
    zone = TrustZone.objects.get(workspace=tenant.workspace, name="cursor")
    url = reverse("console:zone_edit", args=["acme", zone.pk])
    owner.post(url, {f"z{zone.pk}-trust": "low", f"z{zone.pk}-max_token_ttl": "12h"})
    zone.refresh_from_db()
    assert zone.trust == "low"
    assert zone.max_token_ttl == timedelta(hours=12)
    owner.post(url, {f"z{zone.pk}-trust": "high", f"z{zone.pk}-max_token_ttl": ""})
    zone.refresh_from_db()
    assert zone.max_token_ttl is None
    content = owner.post(url, {f"z{zone.pk}-trust": "sky", f"z{zone.pk}-max_token_ttl": "x"}, follow=True)
    assert b"Select a valid choice" in content.content
    zone.refresh_from_db()
    assert zone.trust == "high"
    assert AuditEvent.objects.filter(action=AuditEvent.Action.ZONE_EDIT).count() == 2
    page = owner.get(reverse("console:zones", args=["acme"])).content.decode()
    assert "grok-bot" in page
    assert 'value="1d"' in page
