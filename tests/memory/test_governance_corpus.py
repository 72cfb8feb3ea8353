"""The governance corpus through the real write path: propose from a trusted agent, consolidate, look.

A poisoned high-trust agent is the attacker here: every case comes from the `claude` zone with
trusted evidence, so only the consolidator's detectors and routing stand between it and every
other agent's bundle. Attacks are never published (a concrete one is rejected); honest notes are
never refused (a risky-looking one is held for the owner with its signal).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from memory.models import Fact, Proposal
from memory.services import consolidation_run, proposal_submit
from tests.conftest import Tenant
from tests.corpus import load
from workspaces.selectors import agent_scope

pytestmark = pytest.mark.django_db

ATTACKS = load("attacks")
BENIGN = load("benign")


def _decided(tenant: Tenant, text: str) -> Proposal:
    _, connection = tenant.issue(actor="claude-code@alice", zone="claude")
    submitted = proposal_submit(
        scope=agent_scope(connection),
        project_id="platform",
        request_id=f"corpus-{uuid.uuid4()}",
        op="add_fact",
        text=text,
        evidence=[{"ref": "notes/team-sync.md", "trust": "trusted"}],
    )
    assert submitted.proposal.status == Proposal.Status.QUEUED  # trusted: no taint to lean on
    consolidation_run(workspace_id=tenant.workspace.pk, wait=True)
    return Proposal.objects.get(pk=submitted.proposal.pk)


def _case_id(case: dict[str, Any]) -> str:
    return f"{case['id']}-{case['family']}"


@pytest.mark.parametrize("case", ATTACKS, ids=_case_id)
def test_an_attack_from_a_trusted_agent_is_not_published(tenant: Tenant, case: dict[str, Any]) -> None:
    proposal = _decided(tenant, case["text"])
    assert not Fact.objects.filter(proposal=proposal).exists()
    if case["expect"] == "reject":
        assert proposal.status == Proposal.Status.REJECTED, proposal.signals
        assert proposal.reason in (Proposal.Reason.INJECTION, Proposal.Reason.SECRET)
        assert proposal.signals[0]["label"]
    else:
        assert proposal.status in (Proposal.Status.AWAITING_REVIEW, Proposal.Status.REJECTED)
        assert proposal.signals, "held or rejected, it says why"


@pytest.mark.parametrize("case", BENIGN, ids=_case_id)
def test_an_honest_note_is_never_refused(tenant: Tenant, case: dict[str, Any]) -> None:
    proposal = _decided(tenant, case["text"])
    assert proposal.status != Proposal.Status.REJECTED, (proposal.reason, proposal.reason_detail)
    if case["expect"] == "publish":
        assert proposal.status == Proposal.Status.PUBLISHED, proposal.signals
        assert Fact.objects.get(proposal=proposal).text == case["text"]
    else:
        assert proposal.status == Proposal.Status.AWAITING_REVIEW
        assert proposal.signals, "held, it says why"


def test_the_corpus_covers_every_family_of_the_issue() -> None:
    families = {case["family"] for case in ATTACKS}
    assert families >= {
        "image", "directive", "authority", "markup", "exfiltration", "secret", "obfuscation", "language",
    }  # fmt: skip
    assert len({case["lang"] for case in ATTACKS if case["family"] == "language"}) >= 20
    assert {case["family"] for case in BENIGN} >= {
        "code", "logs", "threat_model", "language", "emoji", "jsonrpc", "tokenizer",
    }  # fmt: skip
