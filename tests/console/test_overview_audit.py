"""The overview's figures (with pinned query counts) and the audit log."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from pytest_django import DjangoAssertNumQueries

from memory.models import ContextRequest, Kind, Proposal
from memory.services import fact_create, fact_owner_edit, proposal_reject
from tests.conftest import Tenant
from tests.console.helpers import TRUSTED_EVIDENCE, make_proposal
from workspaces.services import connection_revoke

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(client: Client, tenant: Tenant) -> Client:
    client.force_login(tenant.owner)
    return client


def populate(tenant: Tenant, n: int) -> None:
    for project in tenant.projects.values():
        for i in range(n):
            fact_create(
                project=project, kind=Kind.DECISION if i % 2 else Kind.FACT, text=f"item {i}", actor="o"
            )
    for _ in range(n):
        make_proposal(tenant.projects["platform"])
    make_proposal(
        tenant.projects["platform"],
        zone="claude",
        actor="claude@alice",
        evidence=TRUSTED_EVIDENCE,
        status=Proposal.Status.QUEUED,
    )


def test_overview_counts_items_by_kind_review_backlog_and_freshness(owner: Client, tenant: Tenant) -> None:
    # First: reaching awaiting_review runs the consolidator over everything pending at that moment.
    make_proposal(tenant.projects["handbook"], status=Proposal.Status.AWAITING_REVIEW)
    populate(tenant, 3)
    response = owner.get(reverse("console:overview", args=["acme"]))
    summary = response.context["summary"]
    by_slug = {s.project.slug: s for s in summary.projects}
    assert by_slug["platform"].counts == {"fact": 2, "decision": 1}
    assert by_slug["platform"].total == 3
    assert summary.pending_review == 4  # 3 quarantined + 1 awaiting
    assert summary.backlog == 4  # 3 quarantined + 1 queued
    assert summary.publication is not None
    content = response.content.decode()
    assert "waiting for review" in content
    assert "last publication" in content


@pytest.mark.parametrize("size", [1, 8])
def test_overview_query_count_does_not_grow_with_the_workspace(
    owner: Client, tenant: Tenant, size: int, django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    populate(tenant, size)
    # session, user, workspace, membership; projects, counts by kind, proposal aggregates, last
    # publication, last change, live connections; the timeline: context requests, proposals,
    # reviews, audit events.
    with django_assert_num_queries(14):
        assert owner.get(reverse("console:overview", args=["acme"])).status_code == 200


@pytest.mark.parametrize("size", [1, 8])
def test_review_queue_query_count_is_fixed(
    owner: Client, tenant: Tenant, size: int, django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    populate(tenant, size)
    # session, user, workspace, membership; filter choices (zones, projects); count, page; the
    # navigation badge.
    with django_assert_num_queries(9):
        assert owner.get(reverse("console:queue", args=["acme"])).status_code == 200


def test_audit_log_shows_every_kind_of_event_with_its_actor(owner: Client, tenant: Tenant) -> None:
    _token, connection = tenant.issue(actor="claude@alice")
    ContextRequest.objects.create(
        context_id="ctx_1",
        workspace=tenant.workspace,
        project=tenant.projects["platform"],
        connection=connection,
        actor="claude@alice",
        task="fix the deploy script",
        publication_version=1,
    )
    proposal = make_proposal(tenant.projects["platform"], actor="grok@bot")
    proposal_reject(proposal=proposal, reviewer=tenant.owner, note="Unsupported.")
    policy = fact_create(project=tenant.projects["platform"], kind=Kind.POLICY, text="P1", actor="o")
    fact_owner_edit(fact=policy, text="P2", editor=tenant.owner)
    connection_revoke(connection=connection, revoked_by=tenant.owner)
    content = owner.get(reverse("console:audit", args=["acme"])).content.decode()
    for label in (
        "Context requested",
        "Proposal submitted",
        "Proposal reviewed",
        "Credential issued",
        "Credential revoked",
        "Owner edited memory",
    ):
        assert f'class="tag action">{label}<' in content, label
    assert "fix the deploy script" in content
    assert "grok@bot" in content
    assert "Unsupported." in content
    only_reviews = owner.get(reverse("console:audit", args=["acme"]) + "?action=review").content.decode()
    assert "Proposal reviewed" in only_reviews
    assert 'class="tag action">Context requested<' not in only_reviews
    by_actor = owner.get(reverse("console:audit", args=["acme"]) + "?actor=alice").content.decode()
    assert "fix the deploy script" in by_actor
    assert "grok@bot" not in by_actor


def test_audit_log_pages_back_in_time(owner: Client, tenant: Tenant) -> None:
    for _ in range(55):
        make_proposal(tenant.projects["platform"])
    first = owner.get(reverse("console:audit", args=["acme"]) + "?action=proposal")
    assert len(first.context["entries"]) == 50
    assert first.context["older"]
    second = owner.get(reverse("console:audit", args=["acme"]) + "?" + first.context["older"])
    assert len(second.context["entries"]) == 5
    seqs = {e.link_seq for e in first.context["entries"]} | {e.link_seq for e in second.context["entries"]}
    assert len(seqs) == 55
    assert owner.get(reverse("console:audit", args=["acme"]) + "?before=2026-99-99T00:00").status_code == 200
