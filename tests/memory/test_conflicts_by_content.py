"""Conflicts by content: an update that revives an older decision to overturn a newer one."""

from __future__ import annotations

import uuid

import pytest

from memory.models import Fact, Kind, Proposal, State
from memory.services import consolidation_run, fact_create, proposal_submit
from tests.conftest import Tenant
from workspaces.selectors import agent_scope

pytestmark = pytest.mark.django_db


def _update(tenant: Tenant, target: str, text: str, evidence_text: str = "") -> Proposal:
    _, connection = tenant.issue()
    evidence = [
        {
            "ref": "notes/arch-sync.md",
            "trust": "trusted",
            **({"text": evidence_text} if evidence_text else {}),
        }
    ]
    proposal = proposal_submit(
        scope=agent_scope(connection),
        project_id="platform",
        request_id=f"c-{uuid.uuid4()}",
        op="update_fact",
        target=target,
        text=text,
        evidence=evidence,
    ).proposal
    consolidation_run(workspace_id=tenant.workspace.pk, wait=True)
    return Proposal.objects.get(pk=proposal.pk)


@pytest.fixture
def decisions(tenant: Tenant) -> tuple[Fact, Fact]:
    """An older decision and the newer one that superseded it."""
    older = fact_create(
        project=tenant.projects["platform"], kind=Kind.DECISION, text="Use Redis 6.", actor="o"
    )
    newer = Fact.objects.get(proposal=_update(tenant, older.ref, "Use Redis 7: 6 is end of life."))
    older.refresh_from_db()
    assert older.state == State.SUPERSEDED
    return older, newer


@pytest.mark.parametrize(
    "cite",
    ["Per {older}, we go back to Redis 6.", "Back to Redis 6 (see {OLDER}).", "evidence:{older}"],
)
def test_citing_a_superseded_decision_to_overturn_the_newer_one_is_a_conflict(
    tenant: Tenant, decisions: tuple[Fact, Fact], cite: str
) -> None:
    older, newer = decisions
    cited = cite.format(older=older.ref, OLDER=older.ref.upper())
    if cited.startswith("evidence:"):
        proposal = _update(tenant, newer.ref, "Back to Redis 6.", evidence_text=f"As {cited[9:]} says.")
    else:
        proposal = _update(tenant, newer.ref, cited)
    assert (proposal.status, proposal.reason) == (Proposal.Status.REJECTED, Proposal.Reason.CONFLICT)
    assert older.ref in proposal.reason_detail
    assert Fact.objects.get(pk=newer.pk).state == State.ACTIVE


def test_an_older_decision_date_is_a_conflict(tenant: Tenant, decisions: tuple[Fact, Fact]) -> None:
    _, newer = decisions
    proposal = _update(tenant, newer.ref, "As decided on 2024-03-01, the cache stays on Redis 6.")
    assert (proposal.status, proposal.reason) == (Proposal.Status.REJECTED, Proposal.Reason.CONFLICT)
    assert "2024-03-01" in proposal.reason_detail


@pytest.mark.parametrize(
    "text",
    [
        "Use Redis 7.2: the 7.0 line has the replication bug.",
        "Use Redis 7; the benchmark of 2024-03-01 still holds for 7.",  # a date, but not a decision
        "Use Redis 7, as decided on 2031-01-10 in the architecture meeting.",  # newer than the base
    ],
)
def test_an_update_that_rests_on_nothing_older_is_published(
    tenant: Tenant, decisions: tuple[Fact, Fact], text: str
) -> None:
    _, newer = decisions
    assert _update(tenant, newer.ref, text).status == Proposal.Status.PUBLISHED
