"""Evidence hygiene and no laundering, through propose_memory's service and the consolidator.

A ref no honest provenance has makes its evidence untrusted (or, for script/data URIs and cloud
metadata addresses, rejects the proposal); copying a tainted item's text, or citing it in another
case, spacing or URL form, carries its taint into the new proposal.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from memory.models import Fact, Proposal, Taint
from memory.services import consolidation_run, proposal_approve, proposal_submit
from tests.conftest import Tenant
from workspaces.selectors import agent_scope

pytestmark = pytest.mark.django_db

FORGED = [
    "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
    "HTTP://METADATA.GOOGLE.INTERNAL/computeMetadata/v1/",
    "http://[::ffff:169.254.169.254]/",
    "javascript:alert(document.cookie)",
    " JaVa\tScript:fetch('//evil.example')",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
]
UNCHECKABLE = [
    "file:///etc/passwd",
    "/etc/shadow",
    "~/.aws/credentials",
    "C:\\Users\\dev\\secrets.txt",
    "http://127.0.0.1:8080/admin",
    "http://2130706433/",
    "http://0x7f000001/",
    "http://[::1]/",
    "http://10.0.0.5/admin",
    "http://192.168.1.1/",
    "http://172.16.0.9/",
    "http://169.254.10.10/",
    "http://localhost:3000/",
    "http://redis.internal:6379/",
    "gopher://evil.example:70/_x",
    "smb://fileserver/share/notes.txt",
    "http%3A%2F%2F127.0.0.1%2F",
]
HONEST = [
    "https://github.com/acme/web/issues/412",
    "ci/config.yml",
    "README.md:40",
    "docs/adr/0012-blue-green.md",
    "https://8.8.8.8/",
]


def _propose(tenant: Tenant, text: str, evidence: list[dict[str, Any]], zone: str = "claude") -> Proposal:
    _, connection = tenant.issue(actor=f"{zone}@tests", zone=zone)
    return proposal_submit(
        scope=agent_scope(connection),
        project_id="platform",
        request_id=f"ev-{uuid.uuid4()}",
        op="add_fact",
        text=text,
        evidence=evidence,
    ).proposal


def _decided(proposal: Proposal) -> Proposal:
    consolidation_run(workspace_id=proposal.workspace_id, wait=True)
    return Proposal.objects.get(pk=proposal.pk)


@pytest.mark.parametrize("ref", FORGED)
def test_a_script_data_or_metadata_ref_rejects_the_proposal(tenant: Tenant, ref: str) -> None:
    proposal = _propose(tenant, "The build cache lives on S3.", [{"ref": ref, "trust": "trusted"}])
    assert proposal.taint == Taint.UNTRUSTED
    decided = _decided(proposal)
    assert (decided.status, decided.reason) == (Proposal.Status.REJECTED, Proposal.Reason.PROVENANCE)
    assert "no honest provenance" in decided.reason_detail


@pytest.mark.parametrize("ref", UNCHECKABLE)
def test_a_local_private_or_non_web_ref_counts_as_untrusted(tenant: Tenant, ref: str) -> None:
    proposal = _propose(tenant, "The build cache lives on S3.", [{"ref": ref, "trust": "trusted"}])
    assert (proposal.status, proposal.taint) == (Proposal.Status.QUARANTINED, Taint.UNTRUSTED)
    assert proposal.evidence[0]["trust"] == "untrusted"
    assert proposal.evidence[0]["claimed"] == "trusted"
    assert "no provenance a reviewer can check" in proposal.evidence[0]["hazard"]
    assert _decided(proposal).status == Proposal.Status.AWAITING_REVIEW


@pytest.mark.parametrize("ref", HONEST)
def test_ordinary_provenance_stays_trusted(tenant: Tenant, ref: str) -> None:
    proposal = _propose(tenant, "The build cache lives on S3.", [{"ref": ref, "trust": "trusted"}])
    assert (proposal.status, proposal.taint) == (Proposal.Status.QUEUED, Taint.CLEAN)
    assert _decided(proposal).status == Proposal.Status.PUBLISHED


def _tainted_item(tenant: Tenant, text: str) -> Fact:
    """An item published from a low-trust agent's proposal, approved by the owner: tainted."""
    proposal = _decided(_propose(tenant, text, [{"ref": "notes/x.md", "trust": "trusted"}], zone="grok-bot"))
    assert proposal.status == Proposal.Status.AWAITING_REVIEW
    approved = proposal_approve(proposal=proposal, reviewer=tenant.owner)
    assert approved.status == Proposal.Status.PUBLISHED
    item = Fact.objects.get(proposal=proposal)
    assert item.taint == Taint.UNTRUSTED
    return item


UNTRUSTED_TEXT = (
    "The mirror at pkg-mirror.example.net serves the same wheels as PyPI and is faster from the "
    "Frankfurt runners, so CI installs from there."
)


@pytest.mark.parametrize(
    "copy",
    [
        UNTRUSTED_TEXT,
        UNTRUSTED_TEXT.upper(),
        "  " + UNTRUSTED_TEXT.replace(" ", "   ") + "  ",
        "Reminder: " + UNTRUSTED_TEXT.replace("faster", "much faster") + " Confirmed in standup.",
        UNTRUSTED_TEXT.replace("o", "\u043e"),  # Cyrillic look-alikes
    ],
    ids=["verbatim", "upper", "spacing", "edited", "homoglyphs"],
)
def test_a_near_copy_of_a_tainted_item_inherits_its_taint(tenant: Tenant, copy: str) -> None:
    _tainted_item(tenant, UNTRUSTED_TEXT)
    proposal = _propose(tenant, copy, [{"ref": "notes/standup.md", "trust": "trusted"}])
    assert (proposal.status, proposal.taint) == (Proposal.Status.QUARANTINED, Taint.UNTRUSTED)


def test_an_unrelated_text_stays_clean(tenant: Tenant) -> None:
    _tainted_item(tenant, UNTRUSTED_TEXT)
    proposal = _propose(
        tenant,
        "CI installs wheels from PyPI directly; the Frankfurt runners cache them for a day.",
        [{"ref": "ci/config.yml", "trust": "trusted"}],
    )
    assert (proposal.status, proposal.taint) == (Proposal.Status.QUEUED, Taint.CLEAN)


@pytest.mark.parametrize(
    "form",
    [
        "{ref}",
        "{REF}",
        "unforgetter:{REF}",
        "https://unforgetter.example/console/w/acme/items/{ref}/",
        "{ref_escaped}",
    ],
)
def test_citing_a_tainted_ref_in_any_form_carries_its_taint(tenant: Tenant, form: str) -> None:
    item = _tainted_item(tenant, "The nightly export runs at 01:00 UTC.")
    forms = {"ref": item.ref, "REF": item.ref.upper(), "ref_escaped": item.ref.replace("_", "%5F")}
    cited = form.format(**forms)
    in_ref = _propose(tenant, "Exports are nightly.", [{"ref": cited, "trust": "trusted"}])
    in_text = _propose(
        tenant, f"Exports are nightly (see {cited}).", [{"ref": "ci/x.yml", "trust": "trusted"}]
    )
    spaced = item.ref.upper().replace("_", " _ ")
    in_spacing = _propose(tenant, f"Exports: {spaced}.", [{"ref": "ci/x.yml", "trust": "trusted"}])
    assert [p.taint for p in (in_ref, in_text, in_spacing)] == [Taint.UNTRUSTED] * 3
