"""verify_ledger: the proposal chain names the first proposal edited, deleted or reordered."""

from __future__ import annotations

import uuid

import pytest
from django.core.management import CommandError, call_command

from memory.models import Proposal
from memory.services import proposal_submit, publication_record
from tests.conftest import Tenant
from workspaces.selectors import agent_scope

pytestmark = pytest.mark.django_db


@pytest.fixture
def ledger(tenant: Tenant) -> list[Proposal]:
    _, connection = tenant.issue()
    return [
        proposal_submit(
            scope=agent_scope(connection),
            project_id="platform",
            request_id=f"l-{uuid.uuid4()}",
            op="add_fact",
            text=f"Rule {i}: services own their schemas.",
            evidence=[{"ref": f"adr/{i}.md", "trust": "trusted"}],
        ).proposal
        for i in range(6)
    ]


def verify(tenant: Tenant) -> str:
    try:
        call_command("verify_ledger", tenant.workspace.slug, stdout=(out := _Out()))
    except CommandError as exc:
        return f"BROKEN {exc}"
    return out.text


class _Out:
    def __init__(self) -> None:
        self.text = ""

    def write(self, value: str) -> None:
        self.text += value

    def flush(self) -> None:
        pass


def test_an_intact_ledger_verifies(tenant: Tenant, ledger: list[Proposal]) -> None:
    assert "ledger intact, 6 proposals verified" in verify(tenant)


def test_an_edited_proposal_is_named(tenant: Tenant, ledger: list[Proposal]) -> None:
    Proposal.objects.filter(pk=ledger[3].pk).update(text="Rule 3: anyone may drop tables.")
    report = verify(tenant)
    assert report.startswith("BROKEN")
    assert f"#4 ({ledger[3].ref}): edited" in report


def test_edited_evidence_or_taint_is_detected(tenant: Tenant, ledger: list[Proposal]) -> None:
    Proposal.objects.filter(pk=ledger[1].pk).update(taint=0, evidence=[{"ref": "x", "trust": "trusted"}])
    assert f"#2 ({ledger[1].ref}): edited" in verify(tenant)


def test_a_deleted_proposal_is_named(tenant: Tenant, ledger: list[Proposal]) -> None:
    Proposal.objects.filter(pk=ledger[2].pk).delete()
    report = verify(tenant)
    assert "#3" in report
    assert "deleted" in report


def test_reordered_proposals_are_named(tenant: Tenant, ledger: list[Proposal]) -> None:
    # Swap the seqs of #2 and #3 (through a free value: seq is unique per workspace).
    Proposal.objects.filter(pk=ledger[1].pk).update(seq=1000)
    Proposal.objects.filter(pk=ledger[2].pk).update(seq=2)
    Proposal.objects.filter(pk=ledger[1].pk).update(seq=3)
    report = verify(tenant)
    assert f"#2 ({ledger[2].ref}): reordered" in report


def test_deleting_the_newest_proposal_is_caught_by_the_last_publication(
    tenant: Tenant, ledger: list[Proposal]
) -> None:
    publication_record(workspace=tenant.workspace)
    Proposal.objects.filter(pk=ledger[-1].pk).delete()
    report = verify(tenant)
    assert "#6" in report
    assert "deleted" in report


def test_status_and_review_changes_do_not_break_the_ledger(tenant: Tenant, ledger: list[Proposal]) -> None:
    Proposal.objects.filter(pk=ledger[0].pk).update(
        status=Proposal.Status.REJECTED, reason="reviewer", review_note="no", reason_detail="no"
    )
    assert "ledger intact" in verify(tenant)
