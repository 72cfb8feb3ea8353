"""Who sees what: sign-in, membership (404 for anyone else), owner-only actions, CSRF."""

from __future__ import annotations

from typing import Any, cast

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from memory.models import Fact, Kind, Proposal
from memory.services import fact_create
from tests.conftest import Tenant
from tests.console.helpers import make_proposal
from tests.factories import UserFactory
from workspaces.models import AuditEvent, Membership, TrustZone
from workspaces.services import membership_add

pytestmark = pytest.mark.django_db


def scoped_urls(tenant: Tenant) -> dict[str, str]:
    """One URL of every scoped page, pointing at objects of `tenant`."""
    slug = tenant.workspace.slug
    proposal = make_proposal(tenant.projects["platform"])
    _token, connection = tenant.issue()
    fact = fact_create(
        project=tenant.projects["platform"], kind=Kind.POLICY, text="Deploy only on Tuesdays.", actor="o"
    )
    zone = TrustZone.objects.filter(workspace=tenant.workspace).first()
    assert zone is not None
    return {
        "overview": reverse("console:overview", args=[slug]),
        "queue": reverse("console:queue", args=[slug]),
        "proposal": reverse("console:proposal", args=[slug, proposal.seq]),
        "connections": reverse("console:connections", args=[slug]),
        "connection": reverse("console:connection", args=[slug, connection.pk]),
        "issue": reverse("console:issue", args=[slug]),
        "zones": reverse("console:zones", args=[slug]),
        "memory": reverse("console:memory", args=[slug]),
        "item": reverse("console:item", args=[slug, fact.ref]),
        "memory_new": reverse("console:memory_new", args=[slug]),
        "audit": reverse("console:audit", args=[slug]),
        # POST-only actions
        "approve": reverse("console:approve", args=[slug, proposal.seq]),
        "reject": reverse("console:reject", args=[slug, proposal.seq]),
        "bulk": reverse("console:bulk", args=[slug]),
        "revoke": reverse("console:revoke", args=[slug, connection.pk]),
        "verify": reverse("console:verify", args=[slug, connection.pk]),
        "zone_edit": reverse("console:zone_edit", args=[slug, zone.pk]),
        "memory_edit": reverse("console:memory_edit", args=[slug, fact.ref]),
    }


POST_ONLY = {"approve", "reject", "bulk", "revoke", "verify", "zone_edit", "memory_edit"}


def test_anonymous_visitors_are_sent_to_sign_in(client: Client, tenant: Tenant) -> None:
    for name, url in scoped_urls(tenant).items():
        response = client.post(url) if name in POST_ONLY else client.get(url)
        assert response.status_code == 302, name
        assert response["Location"].startswith("/console/login/?next="), name


def test_sign_in_page_signs_in_and_lands_on_the_only_workspace(client: Client, tenant: Tenant) -> None:
    page = client.get("/console/login/")
    assert page.status_code == 200
    assert b'autocomplete="current-password"' in page.content
    response = client.post(
        "/console/login/", {"username": tenant.owner.username, "password": "correct-horse-battery"}
    )
    assert response.status_code == 302
    home = client.get(response["Location"])
    assert home.status_code == 302
    assert home["Location"] == reverse("console:overview", args=[tenant.workspace.slug])


def test_wrong_password_is_refused_with_a_message(client: Client, tenant: Tenant) -> None:
    response = client.post("/console/login/", {"username": tenant.owner.username, "password": "nope"})
    assert response.status_code == 200
    assert b"Please enter a correct username and password" in response.content


def test_sign_out_is_a_post(client: Client, tenant: Tenant) -> None:
    client.force_login(tenant.owner)
    assert client.post("/console/logout/").status_code == 302
    assert client.get(reverse("console:queue", args=["acme"])).status_code == 302


def test_home_lists_every_workspace_of_a_member_of_several(
    client: Client, tenant: Tenant, other_tenant: Tenant
) -> None:
    membership_add(workspace=other_tenant.workspace, user=tenant.owner, role=Membership.Role.REVIEWER)
    client.force_login(tenant.owner)
    response = client.get("/console/")
    assert response.status_code == 200
    assert b"/console/w/acme/" in response.content
    assert b"/console/w/globex/" in response.content


def test_every_page_of_another_workspace_is_404(client: Client, tenant: Tenant, other_tenant: Tenant) -> None:
    client.force_login(other_tenant.owner)
    for name, url in scoped_urls(tenant).items():
        response = client.post(url) if name in POST_ONLY else client.get(url)
        assert response.status_code == 404, name
        assert b"acme" not in response.content.lower(), name


def test_objects_of_another_workspace_are_404_inside_my_own(
    client: Client, tenant: Tenant, other_tenant: Tenant
) -> None:
    """The slug is mine, the object id is theirs: still 404, and nothing changes."""
    theirs = scoped_urls(other_tenant)
    mine = tenant.workspace.slug
    client.force_login(tenant.owner)
    for name, url in theirs.items():
        if name in {
            "overview",
            "queue",
            "connections",
            "issue",
            "zones",
            "memory",
            "memory_new",
            "audit",
            "bulk",
        }:
            continue
        swapped = url.replace("/w/globex/", f"/w/{mine}/")
        response = (
            client.post(swapped, {"note": "x", "text": "y"}) if name in POST_ONLY else client.get(swapped)
        )
        assert response.status_code == 404, name
    assert not Proposal.objects.filter(workspace=other_tenant.workspace, reviewer__isnull=False).exists()
    assert not other_tenant.workspace.connections.filter(revoked_at__isnull=False).exists()


def test_bulk_review_ignores_sequence_numbers_of_another_workspace(
    client: Client, tenant: Tenant, other_tenant: Tenant
) -> None:
    theirs = make_proposal(other_tenant.projects["platform"])
    make_proposal(tenant.projects["platform"])  # same seq number 1 in my workspace is not theirs
    theirs_2 = make_proposal(other_tenant.projects["platform"])
    client.force_login(tenant.owner)
    client.post(
        reverse("console:bulk", args=["acme"]), {"action": "approve", "seqs": [theirs_2.seq], "note": ""}
    )
    theirs_2.refresh_from_db()
    theirs.refresh_from_db()
    assert theirs_2.status == Proposal.Status.QUARANTINED
    assert theirs.status == Proposal.Status.QUARANTINED


@pytest.fixture
def reviewer(tenant: Tenant) -> User:
    user = cast(User, UserFactory(username="rita"))
    membership_add(workspace=tenant.workspace, user=user, role=Membership.Role.REVIEWER)
    return user


def test_reviewer_reviews_but_cannot_manage_credentials_zones_or_protected_items(
    client: Client, tenant: Tenant, reviewer: User
) -> None:
    urls = scoped_urls(tenant)
    client.force_login(reviewer)
    for name in (
        "overview",
        "queue",
        "proposal",
        "connections",
        "connection",
        "zones",
        "memory",
        "item",
        "audit",
    ):
        assert client.get(urls[name]).status_code == 200, name
    for name in ("issue", "memory_new"):
        assert client.get(urls[name]).status_code == 403, name
    for name in ("revoke", "verify", "zone_edit", "memory_edit", "issue", "memory_new"):
        assert client.post(urls[name], {"text": "x", "trust": "low", "actor": "a"}).status_code == 403, name
    assert not AuditEvent.objects.filter(user=reviewer).exists()
    assert not Fact.objects.filter(edited_by=reviewer).exists()
    # Reviewing is what a reviewer is for.
    response = client.post(urls["reject"], {"note": "Not supported by the evidence."})
    assert response.status_code == 302
    assert Proposal.objects.get(workspace=tenant.workspace, seq=1).status == Proposal.Status.REJECTED


def test_reviewer_pages_hide_owner_only_controls(client: Client, tenant: Tenant, reviewer: User) -> None:
    urls = scoped_urls(tenant)
    client.force_login(reviewer)
    assert b"Issue a token" not in client.get(urls["connections"]).content
    assert b"Revoke this credential" not in client.get(urls["connection"]).content
    assert b"Save new version" not in client.get(urls["item"]).content


def test_csrf_is_enforced_on_every_action(tenant: Tenant) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(tenant.owner)
    urls = scoped_urls(tenant)
    data: dict[str, Any] = {"note": "because", "text": "x", "action": "approve", "seqs": [1]}
    for name in [*POST_ONLY, "issue", "memory_new"]:
        assert client.post(urls[name], data).status_code == 403, name
    assert client.post("/console/logout/").status_code == 403
    assert Proposal.objects.get(workspace=tenant.workspace, seq=1).status == Proposal.Status.QUARANTINED
    assert not tenant.workspace.connections.filter(revoked_at__isnull=False).exists()


def test_console_pages_carry_a_strict_content_security_policy(client: Client, tenant: Tenant) -> None:
    urls = scoped_urls(tenant)
    assert "script-src 'self'" in client.get("/console/login/")["Content-Security-Policy"]
    client.force_login(tenant.owner)
    pages = [name for name in urls if name not in POST_ONLY]
    assert len(pages) == 11
    for name in pages:
        policy = client.get(urls[name])["Content-Security-Policy"]
        assert "script-src 'self'" in policy, name
        assert "img-src 'self' data:" in policy, name


def test_a_user_without_workspaces_is_told_so(client: Client, tenant: Tenant) -> None:
    client.force_login(cast(User, UserFactory(username="nobody")))
    response = client.get("/console/")
    assert response.status_code == 200
    assert b"not a member of any workspace" in response.content
    assert client.get(reverse("console:overview", args=["acme"])).status_code == 404


def test_out_of_range_and_malformed_ids_are_404_not_500(client: Client, tenant: Tenant) -> None:
    client.force_login(tenant.owner)
    huge = "9" * 30
    for url in (
        f"/console/w/acme/review/{huge}/",
        f"/console/w/acme/connections/{huge}/",
        "/console/w/acme/memory/%00%E2%80%AE/",
        "/console/w/acme/memory/fact_doesnotexist00/",
        "/console/w/no-such-workspace/",
    ):
        assert client.get(url).status_code == 404, url
    for url in (
        "/console/w/acme/memory/?q=%00&project=%00&page=%00",
        "/console/w/acme/review/?actor=%00&zone=%00&page=-1",
        "/console/w/acme/audit/?actor=%00&before=%00",
    ):
        assert client.get(url).status_code == 200, url
    assert client.post(f"/console/w/acme/zones/{huge}/", {}).status_code == 404
    bulk = client.post(reverse("console:bulk", args=["acme"]), {"action": "approve", "seqs": ["x", huge]})
    assert bulk.status_code == 302
