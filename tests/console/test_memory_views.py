"""The memory browser, an item's history and provenance, and owner edits of protected items."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from memory.models import Fact, Kind, Proposal, Publication, State, Taint
from memory.services import fact_create, fact_owner_edit, proposal_approve
from tests.conftest import Tenant
from tests.console.helpers import make_proposal
from workspaces.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(client: Client, tenant: Tenant) -> Client:
    client.force_login(tenant.owner)
    return client


def memory_url(**params: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return reverse("console:memory", args=["acme"]) + (f"?{query}" if query else "")


def test_browser_filters_by_project_kind_state_and_searches(owner: Client, tenant: Tenant) -> None:
    platform, handbook = tenant.projects["platform"], tenant.projects["handbook"]
    fact_create(
        project=platform, kind=Kind.DECISION, text="Blue-green deploys behind the balancer.", actor="o"
    )
    fact_create(project=handbook, kind=Kind.CONVENTION, text="Write ADRs in Markdown.", actor="o")
    fact_create(
        project=platform, kind=Kind.FACT, text="An old retracted claim.", actor="o", state=State.RETRACTED
    )
    everything = owner.get(memory_url()).content.decode()
    assert "Blue-green" in everything
    assert "ADRs" in everything
    assert "retracted claim" not in everything  # current items by default
    assert "ADRs" not in owner.get(memory_url(project="platform")).content.decode()
    assert "Blue-green" not in owner.get(memory_url(kind="convention")).content.decode()
    assert "retracted claim" in owner.get(memory_url(state="retracted")).content.decode()
    searched = owner.get(memory_url(q="markdown")).content.decode()
    assert "ADRs" in searched
    assert "Blue-green" not in searched


def test_search_inside_a_project_uses_the_full_text_index(owner: Client, tenant: Tenant) -> None:
    platform = tenant.projects["platform"]
    fact_create(project=platform, kind=Kind.DECISION, text="Deploys run blue-green on Tuesdays.", actor="o")
    fact_create(project=platform, kind=Kind.FACT, text="Payments retry three times.", actor="o")
    found = owner.get(memory_url(project="platform", q="deploys+tuesdays")).content.decode()
    assert "blue-green" in found
    assert "Payments" not in found
    retired = fact_create(
        project=platform, kind=Kind.FACT, text="Deploys used canaries.", actor="o", state="retracted"
    )
    assert "used canaries." not in owner.get(memory_url(project="platform", q="canaries")).content.decode()
    assert (
        "used canaries."
        in owner.get(memory_url(project="platform", q="canaries", state="all")).content.decode()
    )
    assert retired.ref in owner.get(memory_url(q=retired.ref, state="all")).content.decode()


def test_search_inside_a_project_matches_every_word_by_its_stem_less_excluded_ones(
    owner: Client, tenant: Tenant
) -> None:
    platform = tenant.projects["platform"]
    fact_create(project=platform, kind=Kind.DECISION, text="Deploys run blue-green on Tuesdays.", actor="o")
    fact_create(project=platform, kind=Kind.FACT, text="The Tuesday deployment uses canaries.", actor="o")
    fact_create(project=platform, kind=Kind.FACT, text="Deployments are frozen in December.", actor="o")
    found = owner.get(memory_url(project="platform", q="deployed+tuesday")).content.decode()
    assert "blue-green" in found
    assert "deployment uses canaries" in found
    assert "frozen" not in found  # only one of the two words
    narrowed = owner.get(memory_url(project="platform", q="deployed+tuesday+-canaries")).content.decode()
    assert "blue-green" in narrowed
    assert "deployment uses canaries" not in narrowed  # the query itself is echoed in the page
    assert "blue-green" not in owner.get(memory_url(project="platform", q="deploys+fridays")).content.decode()


def test_search_follows_an_item_that_stopped_being_current_after_it_was_found(
    owner: Client, tenant: Tenant
) -> None:
    platform = tenant.projects["platform"]
    item = fact_create(project=platform, kind=Kind.FACT, text="Releases ship from the train.", actor="o")
    assert "from the train." in owner.get(memory_url(project="platform", q="releases")).content.decode()
    Fact.objects.filter(pk=item.pk).update(state=State.SUPERSEDED)  # as a newer version does
    assert "from the train." not in owner.get(memory_url(project="platform", q="releases")).content.decode()
    everything = owner.get(memory_url(project="platform", q="releases", state="all")).content.decode()
    assert "from the train." in everything
    superseded = owner.get(memory_url(project="platform", q="released", state="superseded")).content.decode()
    assert "from the train." in superseded


def test_browser_never_shows_another_workspace(owner: Client, tenant: Tenant, other_tenant: Tenant) -> None:
    fact = fact_create(
        project=other_tenant.projects["platform"], kind=Kind.FACT, text="Globex secret.", actor="o"
    )
    assert "Globex secret" not in owner.get(memory_url(q="Globex")).content.decode()
    assert "Globex secret" not in owner.get(memory_url(q=fact.ref)).content.decode()


def test_item_page_shows_history_provenance_taint_and_the_proposal_that_made_it(
    owner: Client, tenant: Tenant
) -> None:
    platform = tenant.projects["platform"]
    original = fact_create(
        project=platform,
        kind=Kind.FACT,
        text="Staging rebuilds weekly.",
        actor="owner",
        source="wiki/staging",
    )
    proposal = make_proposal(
        platform,
        op="update_fact",
        target=original.ref,
        text="Staging rebuilds daily.",
        status=Proposal.Status.AWAITING_REVIEW,
    )
    proposal_approve(proposal=proposal, reviewer=tenant.owner)
    newer = Fact.objects.get(proposal=proposal)
    content = owner.get(reverse("console:item", args=["acme", newer.ref])).content.decode()
    assert original.ref in content
    assert "Staging rebuilds weekly." in content
    assert f"proposal #{proposal.seq}" in content
    assert "produced this" in content
    assert Taint(newer.taint).label in content
    assert "grok-bot@team" in content
    old_page = owner.get(reverse("console:item", args=["acme", original.ref])).content.decode()
    assert newer.ref in old_page
    assert "wiki/staging" in old_page
    assert "Superseded" in old_page


def test_owner_edits_a_protected_item_as_a_new_recorded_version(owner: Client, tenant: Tenant) -> None:
    policy = fact_create(
        project=tenant.projects["platform"], kind=Kind.POLICY, text="Deploy on Tuesdays.", actor="o"
    )
    versions = Publication.objects.filter(workspace=tenant.workspace).count()
    response = owner.post(
        reverse("console:memory_edit", args=["acme", policy.ref]),
        {"text": "Deploy on Tuesdays and Thursdays.", "source": "handbook/change-policy.md"},
    )
    new = Fact.objects.get(supersedes=policy)
    assert response["Location"] == reverse("console:item", args=["acme", new.ref])
    policy.refresh_from_db()
    assert policy.state == State.SUPERSEDED
    assert new.state == State.ACTIVE
    assert new.kind == Kind.POLICY
    assert new.edited_by == tenant.owner
    assert new.actor == tenant.owner.username
    assert new.data_class == policy.data_class
    event = AuditEvent.objects.get(action=AuditEvent.Action.OWNER_EDIT)
    assert event.user == tenant.owner
    assert event.target == new.ref
    assert Publication.objects.filter(workspace=tenant.workspace, changed=True).count() >= 1
    assert Publication.objects.filter(workspace=tenant.workspace).count() == versions + 1
    page = owner.get(response["Location"]).content.decode()
    assert f"owner edit by <strong>{tenant.owner.username}</strong>" in page


def test_an_old_version_cannot_be_edited(owner: Client, tenant: Tenant) -> None:
    policy = fact_create(project=tenant.projects["platform"], kind=Kind.GOAL, text="Ship v1.", actor="o")
    fact_owner_edit(fact=policy, text="Ship v1 by June.", editor=tenant.owner)
    response = owner.post(
        reverse("console:memory_edit", args=["acme", policy.ref]), {"text": "Ship v2."}, follow=True
    )
    assert b"no longer current" in response.content
    assert Fact.objects.filter(supersedes=policy).count() == 1


def test_unprotected_items_are_not_edited_here(owner: Client, tenant: Tenant) -> None:
    fact = fact_create(project=tenant.projects["platform"], kind=Kind.FACT, text="A fact.", actor="o")
    assert b"Save new version" not in owner.get(reverse("console:item", args=["acme", fact.ref])).content
    response = owner.post(
        reverse("console:memory_edit", args=["acme", fact.ref]), {"text": "Edited."}, follow=True
    )
    assert b"Only goals, policies, permissions and identities" in response.content
    assert not Fact.objects.filter(supersedes=fact).exists()


def test_owner_adds_a_protected_item(owner: Client, tenant: Tenant) -> None:
    url = reverse("console:memory_new", args=["acme"])
    assert owner.get(url).status_code == 200
    response = owner.post(
        url,
        {
            "project": "platform",
            "kind": "identity",
            "text": "We are the Acme platform team.",
            "data_class": "",
        },
    )
    fact = Fact.objects.get(kind=Kind.IDENTITY)
    assert response["Location"] == reverse("console:item", args=["acme", fact.ref])
    assert fact.edited_by == tenant.owner
    assert fact.data_class == tenant.projects["platform"].data_class
    bad = owner.post(url, {"project": "platform", "kind": "fact", "text": "x"})
    assert b"Select a valid choice" in bad.content
    assert AuditEvent.objects.filter(action=AuditEvent.Action.OWNER_EDIT).count() == 1


def test_hostile_item_text_is_inert(owner: Client, tenant: Tenant) -> None:
    fact = fact_create(
        project=tenant.projects["platform"],
        kind=Kind.FACT,
        text="<script>x()</script>\u202e![a](http://e/?s)",
        actor="o",
    )
    for url in (memory_url(), reverse("console:item", args=["acme", fact.ref])):
        content = owner.get(url).content.decode()
        assert "<script>x()" not in content
        assert "⟨U+202E⟩" in content
