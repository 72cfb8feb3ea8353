"""The review queue and the proposal page: held proposals, what they change, their neighbours."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Q, QuerySet

from memory.models import Fact, Proposal
from memory.rules import TARGETED_OPS
from workspaces.exceptions import NotFound
from workspaces.models import Workspace

# Held proposals: quarantined ones are tainted and not validated by the consolidator yet (they
# can be rejected, not approved); awaiting_review ones passed validation and wait for a decision.
REVIEW_STATUSES = (Proposal.Status.QUARANTINED, Proposal.Status.AWAITING_REVIEW)


def review_queue(workspace: Workspace, filters: dict[str, Any]) -> QuerySet[Proposal]:
    """Held proposals, newest first, narrowed by status, project, zone, actor and taint."""
    queryset = Proposal.objects.filter(workspace=workspace, status__in=REVIEW_STATUSES).select_related(
        "project"
    )
    if filters.get("project"):
        queryset = queryset.filter(project__slug=filters["project"])
    if filters.get("zone"):
        queryset = queryset.filter(zone=filters["zone"])
    if filters.get("actor"):
        queryset = queryset.filter(actor__icontains=filters["actor"])
    if filters.get("taint") not in (None, ""):
        queryset = queryset.filter(taint=int(filters["taint"]))
    if filters.get("status") in REVIEW_STATUSES:
        queryset = queryset.filter(status=filters["status"])
    return queryset.order_by("-seq")


def review_zones(workspace: Workspace) -> list[str]:
    """The zones the queue can be filtered by, from what is actually held."""
    held = Proposal.objects.filter(workspace=workspace, status__in=REVIEW_STATUSES)
    return sorted(set(held.values_list("zone", flat=True).distinct()))


def proposal_for_member(workspace: Workspace, seq: int) -> Proposal:
    proposal = (
        Proposal.objects.filter(workspace=workspace, seq=seq)
        .select_related("project", "connection", "reviewer")
        .first()
    )
    if proposal is None:
        raise NotFound("No such proposal.")
    return proposal


def proposals_for_member(workspace: Workspace, seqs: Iterable[int]) -> QuerySet[Proposal]:
    """Proposals of the member's workspace by seq (another workspace's seqs match nothing)."""
    return Proposal.objects.filter(workspace=workspace, seq__in=list(seqs)).select_related("project")


def proposal_target(proposal: Proposal) -> Fact | None:
    """The item an update, close or retraction is based on, inside the proposal's workspace.

    The same item `proposal_approve` checks: the version an update supersedes, the thread a close
    closes, the item a retraction retracts. Publishing never edits it beyond its state.
    """
    ref = proposal.supersedes or (proposal.target if proposal.op in TARGETED_OPS else "")
    if not ref:
        return None
    return Fact.objects.filter(workspace_id=proposal.workspace_id, ref=ref).select_related("project").first()


def target_is_current(fact: Fact) -> bool:
    """Whether a proposal based on `fact` can still be published: as `proposal_approve` decides,
    a thread must still be open and any other item active; otherwise approval is a conflict."""
    return fact.is_live


def target_successor(fact: Fact) -> Fact | None:
    """The version that superseded `fact`, if one did."""
    return Fact.objects.filter(supersedes=fact).order_by("id").first()


def proposals_related(proposal: Proposal, limit: int = 10) -> list[Proposal]:
    """Other proposals about the same item, with the same content, or from the same request."""
    refs = {r for r in (proposal.target, proposal.supersedes) if r}
    condition = Q(content_digest=proposal.content_digest)
    if refs:
        condition |= Q(target__in=refs) | Q(supersedes__in=refs)
    return list(
        Proposal.objects.filter(condition, workspace_id=proposal.workspace_id)
        .exclude(pk=proposal.pk)
        .select_related("project")
        .order_by("-seq")[:limit]
    )


def proposal_previous(proposal: Proposal) -> Proposal | None:
    """The proposal before this one in the workspace's attestation chain."""
    return (
        Proposal.objects.filter(workspace_id=proposal.workspace_id, seq__lt=proposal.seq)
        .order_by("-seq")
        .only("seq", "attestation")
        .first()
    )
