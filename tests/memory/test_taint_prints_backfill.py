"""`manage.py taint_prints_backfill`: items tainted before prints existed get them, once.

Such items are made the way they were then: published through the real write path and approved
by the owner, with their prints then removed (what an item from before prints looks like).
"""

from __future__ import annotations

import uuid
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memory.models import Fact, Proposal, Taint, TaintPrint
from memory.services import consolidation_run, proposal_approve, proposal_submit
from tests.conftest import Tenant
from workspaces.selectors import agent_scope

pytestmark = pytest.mark.django_db

TEXTS = [
    f"The mirror number {n} at pkg-mirror.example.net serves the same wheels as PyPI for the runners."
    for n in range(7)
]


def _propose(tenant: Tenant, text: str, zone: str) -> Proposal:
    _, connection = tenant.issue(actor=f"{zone}@team", zone=zone)
    return proposal_submit(
        scope=agent_scope(connection),
        project_id="platform",
        request_id=f"backfill-{uuid.uuid4()}",
        op="add_fact",
        text=text,
        evidence=[{"ref": "notes/x.md", "trust": "trusted"}],
    ).proposal


def _old_tainted_items(tenant: Tenant) -> list[Fact]:
    for text in TEXTS:
        _propose(tenant, text, "grok-bot")
    consolidation_run(workspace_id=tenant.workspace.pk, wait=True)
    for proposal in Proposal.objects.filter(status=Proposal.Status.AWAITING_REVIEW):
        proposal_approve(proposal=proposal, reviewer=tenant.owner)
    TaintPrint.objects.all().delete()  # as before prints existed
    items = list(Fact.objects.filter(taint=Taint.UNTRUSTED))
    assert len(items) == len(TEXTS)
    return items


def _run(*args: str) -> str:
    out = StringIO()
    call_command("taint_prints_backfill", *args, stdout=out)
    return out.getvalue()


def test_backfill_fingerprints_old_tainted_items_so_copies_inherit_their_taint(tenant: Tenant) -> None:
    _old_tainted_items(tenant)
    before = _propose(tenant, TEXTS[0], "claude")
    assert before.taint == Taint.CLEAN  # the laundering the backfill closes

    output = _run("--batch-size", "3", "-v", "2")
    assert "7 tainted items have no taint prints." in output
    assert "  3 / 7 items" in output
    assert "  6 / 7 items" in output
    assert "Recorded taint prints for 7 items" in output
    assert TaintPrint.objects.values("fact_id").distinct().count() == 7

    after = _propose(tenant, TEXTS[3].upper(), "claude")
    assert (after.status, after.taint) == (Proposal.Status.QUARANTINED, Taint.UNTRUSTED)


def test_backfill_is_idempotent_and_skips_clean_items(tenant: Tenant) -> None:
    _old_tainted_items(tenant)
    _propose(tenant, "The staging database is rebuilt every Sunday.", "claude")
    consolidation_run(workspace_id=tenant.workspace.pk, wait=True)
    _run()
    rows = TaintPrint.objects.count()
    again = _run()
    assert "0 tainted items have no taint prints." in again
    assert "Recorded taint prints for 0 items" in again
    assert TaintPrint.objects.count() == rows
    clean = Fact.objects.get(taint=Taint.CLEAN)
    assert not TaintPrint.objects.filter(fact=clean).exists()


def test_backfill_refuses_an_unknown_workspace_and_a_bad_batch_size(tenant: Tenant) -> None:
    with pytest.raises(CommandError, match="No workspace 'nope'"):
        _run("--workspace", "nope")
    with pytest.raises(CommandError, match="at least 1"):
        _run("--batch-size", "0")
    assert "0 tainted items" in _run("--workspace", tenant.workspace.slug)
