# TEMPORARY stand-in for the write-path branch; the lead replaces this file at merge
"""Owner review of a held proposal: approve (publish, taint kept) or reject with a reason."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from memory.models import Fact, Kind, Proposal, State
from memory.services.facts import fact_build, project_touch
from memory.services.publishing import publication_record
from workspaces.exceptions import InvalidRequest

REVIEWABLE = (Proposal.Status.QUARANTINED, Proposal.Status.AWAITING_REVIEW)


def _locked(proposal: Proposal) -> Proposal:
    locked = Proposal.objects.select_for_update().select_related("project").get(pk=proposal.pk)
    if locked.status not in REVIEWABLE:
        raise InvalidRequest(f"Proposal #{locked.seq} is {locked.status}; only held proposals are reviewed.")
    return locked


def _target(proposal: Proposal) -> Fact:
    target = (
        Fact.objects.select_for_update()
        .filter(workspace_id=proposal.workspace_id, project_id=proposal.project_id, ref=proposal.target)
        .first()
    )
    if target is None or target.state not in State.current() or target.kind in Kind.protected():
        raise InvalidRequest("The item this proposal changes is no longer current.")
    return target


@transaction.atomic
def proposal_approve(*, proposal: Proposal, reviewer: Any, note: str = "") -> Proposal:
    locked = _locked(proposal)
    op = locked.op
    new: Fact | None = None
    if op in (Proposal.Op.ADD_FACT, Proposal.Op.OPEN_THREAD):
        kind = Kind.THREAD if op == Proposal.Op.OPEN_THREAD else Kind.FACT
        new = fact_build(project=locked.project, kind=kind, text=locked.text, actor=locked.actor)
    else:
        target = _target(locked)
        if op == Proposal.Op.UPDATE_FACT:
            new = fact_build(
                project=locked.project,
                kind=target.kind,
                text=locked.text,
                actor=locked.actor,
                data_class=target.data_class,
            )
            new.supersedes = target
            target.state = State.SUPERSEDED
        elif op == Proposal.Op.CLOSE_THREAD:
            target.state = State.CLOSED
        else:
            target.state = State.RETRACTED
        target.save(update_fields=["state"])
    if new is not None:
        new.source = f"proposal:{locked.seq}"
        new.taint = locked.taint
        new.proposal = locked
        new.save()
    now = timezone.now()
    locked.status = Proposal.Status.PUBLISHED
    locked.reviewer = reviewer
    locked.reviewed_at = now
    locked.decided_at = now
    locked.review_note = note
    locked.save(update_fields=["status", "reviewer", "reviewed_at", "decided_at", "review_note"])
    project_touch(project=locked.project)
    publication_record(workspace=locked.project.workspace, published_count=1, changed=True)
    return locked


@transaction.atomic
def proposal_reject(*, proposal: Proposal, reviewer: Any, note: str) -> Proposal:
    locked = _locked(proposal)
    if not note.strip():
        raise InvalidRequest("Give a reason for the rejection.")
    now = timezone.now()
    locked.status = Proposal.Status.REJECTED
    locked.reason = Proposal.Reason.REVIEWER
    locked.reviewer = reviewer
    locked.reviewed_at = now
    locked.decided_at = now
    locked.review_note = note.strip()
    locked.save(update_fields=["status", "reason", "reviewer", "reviewed_at", "decided_at", "review_note"])
    return locked
