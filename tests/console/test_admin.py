"""The Django admin for superusers: changelists render, actions go through the services."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from memory.models import Fact, Kind, Proposal
from memory.services import fact_create
from tests.conftest import Tenant
from tests.console.helpers import make_proposal
from workspaces.models import AuditEvent, Connection
from workspaces.services import membership_add

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(client: Client) -> Client:
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    return client


def test_every_changelist_and_change_page_renders(admin: Client, tenant: Tenant) -> None:
    _token, connection = tenant.issue()
    proposal = make_proposal(tenant.projects["platform"])
    fact = fact_create(project=tenant.projects["platform"], kind=Kind.POLICY, text="P", actor="o")
    for path in (
        "workspaces/workspace",
        "workspaces/project",
        "workspaces/trustzone",
        "workspaces/membership",
        "workspaces/connection",
        "workspaces/auditevent",
        "memory/fact",
        "memory/proposal",
        "memory/publication",
        "memory/contextrequest",
    ):
        assert admin.get(f"/admin/{path}/").status_code == 200, path
    assert admin.get(f"/admin/workspaces/connection/{connection.pk}/change/").status_code == 200
    assert admin.get(f"/admin/memory/proposal/{proposal.pk}/change/").status_code == 200
    assert admin.get(f"/admin/memory/fact/{fact.pk}/change/").status_code == 200
    assert admin.get(f"/admin/workspaces/workspace/{tenant.workspace.pk}/change/").status_code == 200
    assert admin.get("/admin/workspaces/connection/?q=agent").status_code == 200
    for state in ("live", "revoked", "expired"):
        assert admin.get(f"/admin/workspaces/connection/?state={state}").status_code == 200


def test_admin_revoke_action_uses_the_revocation_service(admin: Client, tenant: Tenant) -> None:
    _token, connection = tenant.issue()
    admin.post(
        "/admin/workspaces/connection/",
        {"action": "revoke_selected", "_selected_action": [connection.pk]},
    )
    connection.refresh_from_db()
    assert connection.revoked_at is not None
    assert AuditEvent.objects.filter(action=AuditEvent.Action.TOKEN_REVOKED, actor="root").exists()
    assert Connection.objects.usable().count() == 0


def test_admin_review_actions_use_the_review_services(admin: Client, tenant: Tenant) -> None:
    platform = tenant.projects["platform"]
    keep = make_proposal(platform, text="Approve me", status=Proposal.Status.AWAITING_REVIEW)
    drop = make_proposal(platform, text="Reject me")
    validating = make_proposal(platform, text="Not validated yet")

    def act(action: str, *proposals: Proposal) -> str:
        response = admin.post(
            "/admin/memory/proposal/",
            {"action": action, "_selected_action": [p.pk for p in proposals]},
            follow=True,
        )
        return response.content.decode()

    # The review services only let members of the workspace review it: a superuser is no exception.
    page = act("approve_selected", keep)
    assert "Only the workspace&#x27;s owners and reviewers may review its proposals." in page
    keep.refresh_from_db()
    assert keep.status == Proposal.Status.AWAITING_REVIEW

    membership_add(workspace=tenant.workspace, user=User.objects.get(username="root"), role="reviewer")
    page = act("approve_selected", keep, validating)
    assert "Approved and published 1 proposal(s)." in page
    assert "Only proposals awaiting review can be approved; this one is quarantined." in page
    page = act("reject_selected", drop)
    assert "Rejected 1 proposal(s)." in page
    keep.refresh_from_db()
    drop.refresh_from_db()
    validating.refresh_from_db()
    assert keep.status == Proposal.Status.PUBLISHED
    assert drop.status == Proposal.Status.REJECTED
    assert validating.status == Proposal.Status.QUARANTINED
    assert Fact.objects.filter(proposal=keep, text="Approve me").exists()


def test_memory_items_cannot_be_changed_in_the_admin(admin: Client, tenant: Tenant) -> None:
    fact = fact_create(project=tenant.projects["platform"], kind=Kind.POLICY, text="P", actor="o")
    admin.post(f"/admin/memory/fact/{fact.pk}/change/", {"text": "changed"})
    fact.refresh_from_db()
    assert fact.text == "P"
    assert admin.get("/admin/memory/fact/add/").status_code == 403
