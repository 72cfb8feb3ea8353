"""The console's workspace page (export, delete with a receipt), new trust zones, and the public pages."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client, override_settings
from django.urls import reverse
from django.utils import timezone

from memory.models import Fact
from memory.services import fact_create
from tests.conftest import Tenant, make_tenant
from workspaces.models import AuditEvent, Connection, TrustZone, Workspace, WorkspaceDeletion
from workspaces.services import workspace_deletions_purge

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def exports_dir(tmp_path: Path, settings: object) -> Iterator[Path]:
    folder = tmp_path / "exports"
    with override_settings(UNFORGETTER={**settings.UNFORGETTER, "EXPORTS_DIR": folder}):  # type: ignore[attr-defined]
        yield folder


@pytest.fixture
def owner(client: Client, tenant: Tenant) -> Client:
    fact_create(
        project=tenant.projects["platform"], kind="decision", text="We deploy blue-green.", actor="ana"
    )
    client.force_login(tenant.owner)
    return client


def test_root_leads_to_the_quickstarts_or_the_console(client: Client, tenant: Tenant) -> None:
    assert client.get("/")["Location"] == reverse("console:quickstart")
    client.force_login(tenant.owner)
    assert client.get("/")["Location"] == reverse("console:home")


def test_the_advertised_documentation_url_is_the_quickstarts(client: Client, settings: object) -> None:
    metadata = client.get("/.well-known/oauth-protected-resource/mcp").json()
    documentation = metadata["resource_documentation"]
    page = client.get(documentation.removeprefix(settings.PUBLIC_URL))  # type: ignore[attr-defined]
    assert page.status_code == 200
    html = page.content.decode()
    for text in (
        "Claude Code",
        "Codex CLI",
        "Cursor",
        "Gemini CLI",
        "Paste this to your agent",
        "Codex Cloud",
    ):
        assert text in html
    assert f"{settings.MCP_RESOURCE_URL}" in html  # type: ignore[attr-defined]
    assert html.count('data-copy="#') >= 10
    assert "get_context" in html
    assert "api/v1/projects/PROJECT_ID/" in html
    assert "snapshot.md" in html


def test_an_owner_creates_a_trust_zone_and_it_can_be_used(owner: Client, tenant: Tenant) -> None:
    page = owner.get(reverse("console:zones", args=["acme"])).content.decode()
    assert "New trust zone" in page
    response = owner.post(
        reverse("console:zone_new", args=["acme"]),
        {"new-name": "ci-bots", "new-trust": "low", "new-max_token_ttl": "12h"},
        follow=True,
    )
    assert "Created the ci-bots zone." in response.content.decode()
    zone = TrustZone.objects.get(workspace=tenant.workspace, name="ci-bots")
    assert (zone.trust, zone.max_token_ttl) == ("low", timedelta(hours=12))
    assert AuditEvent.objects.filter(action="zone_edit", target="ci-bots", detail__created=True).exists()
    again = owner.post(
        reverse("console:zone_new", args=["acme"]), {"new-name": "ci-bots", "new-trust": "high"}, follow=True
    )
    assert "already a zone named" in again.content.decode()
    assert TrustZone.objects.filter(workspace=tenant.workspace, name="ci-bots").count() == 1
    _token, connection = tenant.issue(zone="ci-bots")
    assert connection.zone == zone


def test_trust_zones_and_the_workspace_page_are_in_the_navigation(owner: Client) -> None:
    html = owner.get(reverse("console:overview", args=["acme"])).content.decode()
    assert f'href="{reverse("console:zones", args=["acme"])}"' in html
    assert f'href="{reverse("console:workspace", args=["acme"])}"' in html


def test_export_downloads_a_zip_and_keeps_an_audited_copy(owner: Client, exports_dir: Path) -> None:
    page = owner.get(reverse("console:workspace", args=["acme"])).content.decode()
    assert "30 days" in page
    response = owner.post(reverse("console:export", args=["acme"]))
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"].startswith('attachment; filename="acme-')
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        manifest = json.loads(archive.read("acme/manifest.json"))
    assert [item["text"] for item in manifest["items"]] == ["We deploy blue-green."]
    assert len(list((exports_dir / "acme").glob("*.zip"))) == 1
    assert AuditEvent.objects.filter(action="export", workspace__slug="acme").count() == 1


def test_reviewers_cannot_export_or_delete(client: Client, tenant: Tenant) -> None:
    from django.contrib.auth.models import User

    from workspaces.models import Membership
    from workspaces.services import membership_add

    reviewer = User.objects.create_user("reviewer", password="x")
    membership_add(workspace=tenant.workspace, user=reviewer, role=Membership.Role.REVIEWER)
    client.force_login(reviewer)
    assert client.post(reverse("console:export", args=["acme"])).status_code == 403
    assert client.post(reverse("console:delete", args=["acme"]), {"confirm": "acme"}).status_code == 403
    assert Workspace.objects.filter(slug="acme").exists()


def test_delete_needs_the_typed_slug(owner: Client) -> None:
    response = owner.post(reverse("console:delete", args=["acme"]), {"confirm": "acm"}, follow=True)
    assert "slug to confirm deletion" in response.content.decode()
    assert Workspace.objects.filter(slug="acme").exists()


def test_delete_removes_everything_at_once_and_gives_a_receipt(
    owner: Client, tenant: Tenant, exports_dir: Path
) -> None:
    other = make_tenant("beta")
    fact_create(project=other.projects["platform"], kind="fact", text="Beta stays.", actor="ana")
    token, _ = tenant.issue()
    owner.post(reverse("console:export", args=["acme"]))
    api = Client(headers={"Authorization": f"Bearer {token}"})
    assert api.get("/api/v1/projects/").status_code == 200

    response = owner.post(reverse("console:delete", args=["acme"]), {"confirm": "acme"}, follow=True)
    receipt = WorkspaceDeletion.objects.get(slug="acme")
    assert response.request["PATH_INFO"] == reverse("console:receipt", args=[receipt.pk])
    html = response.content.decode()
    assert "Deletion receipt" in html
    assert "server-made export file(s)" in html
    assert receipt.removed.get("fact") == 1, receipt.removed
    assert receipt.removed["connection"] == 1
    assert receipt.purge_after - receipt.deleted_at == timedelta(days=30)
    assert len(receipt.files) == 1
    assert not (exports_dir / "acme").exists()  # set aside for the purge
    assert Path(receipt.files[0]).exists()
    # Gone from every serving path at once: the token, the rows; the other tenant untouched.
    assert api.get("/api/v1/projects/").status_code == 401
    assert not Workspace.objects.filter(slug="acme").exists()
    assert not Connection.objects.filter(workspace__slug="acme").exists()
    assert list(Fact.objects.values_list("text", flat=True)) == ["Beta stays."]
    # Only the owner who deleted it can read the receipt.
    stranger = Client()
    stranger.force_login(other.owner)
    assert stranger.get(reverse("console:receipt", args=[receipt.pk])).status_code == 404


def test_the_purge_waits_for_the_retention_window(owner: Client, exports_dir: Path) -> None:
    owner.post(reverse("console:export", args=["acme"]))
    owner.post(reverse("console:delete", args=["acme"]), {"confirm": "acme"})
    receipt = WorkspaceDeletion.objects.get(slug="acme")
    held = Path(receipt.files[0])
    assert workspace_deletions_purge(now=receipt.purge_after - timedelta(minutes=1)) == 0
    assert held.exists()
    assert workspace_deletions_purge(now=receipt.purge_after) == 1
    assert not held.exists()
    assert not held.parent.exists()
    receipt.refresh_from_db()
    assert receipt.purged_at is not None
    assert workspace_deletions_purge(now=timezone.now() + timedelta(days=365)) == 0


def test_the_cli_prints_the_receipt(tenant: Tenant) -> None:
    fact_create(project=tenant.projects["platform"], kind="fact", text="One.", actor="ana")
    out = StringIO()
    call_command("delete_workspace", "acme", "--confirm", "acme", stdout=out)
    text = out.getvalue()
    assert text.startswith("Deleted workspace acme (Acme) at ")
    assert "Removed at once from every serving path:" in text
    assert "1 fact" in text
    assert "Kept until " in text
    assert "Receipt #" in text
