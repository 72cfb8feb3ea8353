"""The agent write path, part three: owners approve or reject what waits for review.

Approval publishes and keeps the taint; only status, reason and the review fields change.
`proposals_decide` is the one loop over many proposals, for the console's bulk actions and the
admin's, reporting each proposal's outcome.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from memory.exceptions import ProposalStateError, ProposalValidating
from memory.models import Fact, Proposal
from memory.services.consolidation import Rejection, base_move, new_item
from memory.services.facts import project_touch
from memory.services.publishing import publication_record
from memory.services.taint_prints import prints_record
from workspaces.exceptions import InvalidRequest, UnforgetterError
from workspaces.models import Membership


def _reviewer_check(proposal: Proposal, reviewer: User) -> None:
    if not Membership.objects.filter(workspace_id=proposal.workspace_id, user_id=reviewer.pk).exists():
        raise ProposalStateError("Only the workspace's owners and reviewers may review its proposals.")


@transaction.atomic
def proposal_approve(*, proposal: Proposal, reviewer: User, note: str = "") -> Proposal:
    """Publish a proposal that passed validation and waits for review. Its taint stays.

    If the item it changes moved on meanwhile, newer decisions win: the proposal is rejected with
    reason `conflict` instead (check `status` on the returned proposal).
    """
    _reviewer_check(proposal, reviewer)
    locked = Proposal.objects.select_for_update(of=("self",)).select_related("project").get(pk=proposal.pk)
    if locked.status == Proposal.Status.QUARANTINED:
        # Quarantined proposals have not been checked for injections or secrets yet.
        raise ProposalValidating(
            "Only proposals awaiting review can be approved; this one is quarantined. It is still being "
            "validated by the consolidator and can be approved once it passes."
        )
    if locked.status != Proposal.Status.AWAITING_REVIEW:
        raise ProposalStateError(
            "Only proposals awaiting review can be approved; "
            f"this one is {locked.get_status_display().lower()}."
        )
    now = timezone.now()
    base = None
    base_ref = locked.supersedes or (
        locked.target if locked.op in (Proposal.Op.CLOSE_THREAD, Proposal.Op.REJECT) else ""
    )
    outcome = Proposal.Status.PUBLISHED
    reason = detail = ""
    if base_ref:
        base = Fact.objects.filter(workspace_id=locked.workspace_id, ref=base_ref).first()
        if base is None or not base.is_live:
            outcome, reason = Proposal.Status.REJECTED, Proposal.Reason.CONFLICT
            detail = f"{base_ref} is no longer current: a newer decision came first."
    if outcome == Proposal.Status.PUBLISHED:
        try:
            if base is not None:
                base_move(base, locked.op)
            item = new_item(locked, locked.project, base, now)
            if item is not None:
                item.save(force_insert=True)
                prints_record([item])
        except Rejection as rejection:
            outcome, reason, detail = Proposal.Status.REJECTED, rejection.reason, rejection.detail
    locked.status, locked.reason, locked.reason_detail = outcome, reason, detail
    locked.reviewer_id = reviewer.pk
    locked.reviewed_at = now
    locked.review_note = note
    locked.save(update_fields=["status", "reason", "reason_detail", "reviewer", "reviewed_at", "review_note"])
    if outcome == Proposal.Status.PUBLISHED:
        project_touch(project_ids=[locked.project_id], now=now)
        publication_record(workspace=locked.workspace, published_count=1, changed=True)
    return locked


@transaction.atomic
def proposal_reject(*, proposal: Proposal, reviewer: User, note: str) -> Proposal:
    """Reject a proposal that has not been published. It is kept, with the reviewer's reason."""
    _reviewer_check(proposal, reviewer)
    note = note.strip()
    if not note:
        raise InvalidRequest("Say why the proposal is rejected: the agent and later reviewers read it.")
    locked = Proposal.objects.select_for_update().get(pk=proposal.pk)
    if locked.status not in (*Proposal.Status.pending(), Proposal.Status.AWAITING_REVIEW):
        raise ProposalStateError(
            f"Only pending proposals can be rejected; this one is {locked.get_status_display().lower()}."
        )
    now = timezone.now()
    locked.status = Proposal.Status.REJECTED
    locked.reason = Proposal.Reason.REVIEWER
    locked.reason_detail = note[:500]
    locked.decided_at = locked.decided_at or now
    locked.reviewer_id = reviewer.pk
    locked.reviewed_at = now
    locked.review_note = note
    locked.save(
        update_fields=[
            "status",
            "reason",
            "reason_detail",
            "decided_at",
            "reviewer",
            "reviewed_at",
            "review_note",
        ]
    )
    return locked


@dataclass
class Decisions:
    """What deciding several proposals did to each, by seq."""

    done: list[int] = field(default_factory=list)
    # Approved, but the item it changes moved on: rejected as a conflict (seq, why).
    conflicts: list[tuple[int, str]] = field(default_factory=list)
    # Approvals refused because the consolidator has not validated the proposal yet.
    validating: list[tuple[int, str]] = field(default_factory=list)
    refused: list[tuple[int, str]] = field(default_factory=list)


def proposals_decide(
    *, proposals: Iterable[Proposal], reviewer: User, approve: bool, note: str = ""
) -> Decisions:
    """Approve or reject each proposal on its own (one transaction each), in seq order.

    One refusal does not stop the others: each proposal's outcome is reported.
    """
    decisions = Decisions()
    for proposal in sorted(proposals, key=lambda p: (p.workspace_id, p.seq)):
        try:
            if approve:
                decided = proposal_approve(proposal=proposal, reviewer=reviewer, note=note)
            else:
                decided = proposal_reject(proposal=proposal, reviewer=reviewer, note=note)
        except ProposalValidating as exc:
            decisions.validating.append((proposal.seq, exc.message))
        except UnforgetterError as exc:
            decisions.refused.append((proposal.seq, exc.message))
        else:
            if approve and decided.status != Proposal.Status.PUBLISHED:
                decisions.conflicts.append(
                    (proposal.seq, decided.reason_detail or decided.get_reason_display())
                )
            else:
                decisions.done.append(proposal.seq)
    return decisions
