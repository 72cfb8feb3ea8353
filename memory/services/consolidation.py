"""The agent write path, part two: pending proposals are consolidated exactly once.

Invariants kept here and nowhere else:

- Consolidation claims a batch by locking the workspace's Watermark row and advancing it in the
  same transaction as the batch's effects and status changes: a batch happens once or not at all.
- A published item carries its proposal's taint (an update: the worse of that and the old
  version's); nothing lowers it.
- Only status, reason, decided_at and the signals found of a proposal change here.
- A proposal with a risk signal is held for review, whatever its zone's trust, unless its zone's
  policy publishes risk signals (`TrustZone.Review.ATTACKS`); a concrete attack is rejected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from memory.conflicts import older_decision_cited
from memory.models import Fact, Kind, Proposal, State, Taint, Watermark
from memory.refs import new_ref
from memory.services.facts import project_touch
from memory.services.publishing import publication_record
from memory.services.taint_prints import prints_record
from memory.validation import (
    change_check,
    cited_refs,
    forged_evidence,
    proposal_findings,
    provenance_present,
    target_kind_check,
)
from workspaces.exceptions import UnforgetterError
from workspaces.models import Project, TrustZone, Workspace
from workspaces.prepared import Prepared, PreparedObjects, PreparedUpdate
from workspaces.scope import AgentScope
from workspaces.selectors import agent_scopes


@dataclass
class ConsolidationReport:
    claimed: int = 0
    published: int = 0
    awaiting_review: int = 0
    rejected: int = 0
    skipped: int = 0
    batches: int = 0
    busy: bool = False
    reasons: dict[str, int] = field(default_factory=dict)

    def add(self, other: ConsolidationReport) -> None:
        for name in ("claimed", "published", "awaiting_review", "rejected", "skipped", "batches"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for reason, count in other.reasons.items():
            self.reasons[reason] = self.reasons.get(reason, 0) + count
        self.busy = self.busy or other.busy

    def as_dict(self) -> dict[str, Any]:
        return {
            "claimed": self.claimed,
            "published": self.published,
            "awaiting_review": self.awaiting_review,
            "rejected": self.rejected,
            "skipped": self.skipped,
            "batches": self.batches,
            "busy": self.busy,
            "reasons": dict(self.reasons),
        }


class Rejection(Exception):
    def __init__(self, reason: str, detail: str, signals: list[dict[str, Any]] | None = None) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail[:500]
        self.signals = signals or []


# Rejections that judge what is proposed, not when or by whom: a repeat of the same content is
# refused for them. A change refused for a stale base, a revoked credential or missing evidence
# may be proposed again once that is fixed.
_CONTENT_REASONS = frozenset(
    {
        Proposal.Reason.INJECTION,
        Proposal.Reason.SECRET,
        Proposal.Reason.REVIEWER,
        Proposal.Reason.PREVIOUSLY_REJECTED,
        Proposal.Reason.PROTECTED_TARGET,
    }
)


class _Batch:
    """What one batch needs from the database, read once, kept current as the batch applies."""

    def __init__(self, workspace: Workspace, proposals: list[Proposal]) -> None:
        now = timezone.now()
        self.workspace = workspace
        refs = {p.supersedes or p.target for p in proposals} - {""}
        # What updates cite, to tell an update that revives an older decision (memory.conflicts).
        refs.update(ref for p in proposals if p.op == Proposal.Op.UPDATE_FACT for ref in _cited(p))
        self.facts: dict[str, Fact] = {
            f.ref: f for f in cast(list[Fact], _batch_facts.objects(workspace.pk, sorted(refs)))
        }
        digests = sorted({p.content_digest for p in proposals})
        self.rejected = {digest for (digest,) in _rejected_digests.rows(workspace.pk, digests)}
        zones = sorted({p.zone for p in proposals})
        self.zone_review: dict[str, str] = dict(_zone_reviews.rows(workspace.pk, zones))
        # Each proposal is decided under its credential's authority as it is now, not as it was
        # when the proposal was made: a narrowed or revoked credential gets no write through.
        self.now = now
        self.scopes: dict[int, AgentScope] = agent_scopes(
            p.connection_id for p in proposals if p.connection_id is not None
        )
        project_ids = sorted({p.project_id for p in proposals})
        self.projects: dict[int, Project] = {
            p.pk: p for p in cast(list[Project], _batch_projects.objects(project_ids))
        }
        self.touched_projects: set[int] = set()


# What every batch reads, compiled once per process and shape (workspaces.prepared): under
# propose load batches are small and many, and building these queries cost more than running them.
_batch_facts = PreparedObjects(
    lambda workspace_id, refs: Fact.objects.filter(workspace_id=workspace_id, ref__in=refs)
)
_rejected_digests = Prepared(
    lambda workspace_id, digests: Proposal.objects.filter(
        workspace_id=workspace_id,
        status=Proposal.Status.REJECTED,
        reason__in=sorted(_CONTENT_REASONS),
        content_digest__in=digests,
    ).values_list("content_digest")
)
_zone_reviews = Prepared(
    lambda workspace_id, names: TrustZone.objects.filter(
        workspace_id=workspace_id, name__in=names
    ).values_list("name", "review")
)
_batch_projects = PreparedObjects(lambda project_ids: Project.objects.filter(pk__in=project_ids))


def _cited(proposal: Proposal) -> list[str]:
    evidence = (
        [e for e in proposal.evidence if isinstance(e, dict)] if isinstance(proposal.evidence, list) else []
    )
    return cited_refs(text=proposal.text, evidence=evidence, base=proposal.supersedes)


def _validate(batch: _Batch, proposal: Proposal) -> tuple[Fact | None, list[dict[str, Any]]]:
    """Run every check of the consolidator, in order; raise Rejection; return the base item and
    the risk signals found."""
    evidence = proposal.evidence if isinstance(proposal.evidence, list) else []
    try:
        change = change_check(
            op=proposal.op,
            text=proposal.text,
            target=proposal.target,
            supersedes=proposal.supersedes,
            kind=proposal.kind if proposal.op in (Proposal.Op.ADD_FACT, Proposal.Op.UPDATE_FACT) else None,
        )
    except UnforgetterError as exc:
        reason = (
            Proposal.Reason.PROTECTED_TARGET if exc.code == "protected_target" else Proposal.Reason.SCHEMA
        )
        raise Rejection(reason, exc.message) from None
    if not all(isinstance(e, dict) for e in evidence):
        raise Rejection(Proposal.Reason.SCHEMA, "The evidence is not a list of items.")

    scope = batch.scopes.get(proposal.connection_id or 0)
    project = batch.projects[proposal.project_id]
    if scope is None or not scope.usable(batch.now):
        raise Rejection(Proposal.Reason.SCOPE, "The credential was revoked or expired before consolidation.")
    if not scope.sees_project(
        workspace_id=project.workspace_id, project_id=project.pk, data_class=project.data_class
    ):
        raise Rejection(Proposal.Reason.SCOPE, "The project is no longer in the credential's catalogue.")

    base = batch.facts.get(change.base) if change.base else None
    if change.base:
        if base is None or base.project_id != project.pk:
            raise Rejection(Proposal.Reason.SCOPE, f"No item {change.base} in project {project.slug}.")
        if base.kind in Kind.protected():
            raise Rejection(Proposal.Reason.PROTECTED_TARGET, f"{change.base} is a protected {base.kind}.")
        if not scope.sees_item(
            workspace_id=base.workspace_id, project_id=base.project_id, data_class=base.data_class
        ):
            raise Rejection(Proposal.Reason.SCOPE, f"{change.base} is outside the credential's data classes.")
        try:
            target_kind_check(op=change.op, kind=base.kind)
        except UnforgetterError as exc:
            raise Rejection(Proposal.Reason.SCHEMA, exc.message) from None
        if not base.is_live:
            raise Rejection(
                Proposal.Reason.CONFLICT,
                f"{change.base} is {base.state} now: a newer decision came first. Re-read and propose again.",
            )
        if change.op == Proposal.Op.UPDATE_FACT:
            cited = [f for r in _cited(proposal) if (f := batch.facts.get(r)) and f.project_id == project.pk]
            older = older_decision_cited(base=base, text=proposal.text, evidence=evidence, cited=cited)
            if older is not None:
                raise Rejection(Proposal.Reason.CONFLICT, older)

    if not provenance_present(evidence):
        raise Rejection(Proposal.Reason.PROVENANCE, "No evidence says what the change rests on.")
    forged = forged_evidence(evidence)
    if forged is not None:
        raise Rejection(Proposal.Reason.PROVENANCE, forged)
    findings = proposal_findings(text=proposal.text, evidence=evidence)
    if findings.attack is not None:
        where, signal = findings.attack
        raise Rejection(signal.kind, f"{where}: {signal.detail} ({signal.label})", [findings.attack_dict()])
    if proposal.content_digest in batch.rejected:
        raise Rejection(
            Proposal.Reason.PREVIOUSLY_REJECTED, "The same change was proposed and rejected before."
        )
    return base, findings.risks


def _held(batch: _Batch, proposal: Proposal, risks: list[dict[str, Any]]) -> bool:
    """Whether a validated proposal waits for an owner: tainted, the workspace or its zone reviews
    everything, or it carries a risk signal its zone does not publish."""
    if proposal.status == Proposal.Status.QUARANTINED or batch.workspace.review_every_proposal:
        return True
    policy = batch.zone_review.get(proposal.zone, TrustZone.Review.SIGNALS)
    return policy == TrustZone.Review.ALL or (bool(risks) and policy != TrustZone.Review.ATTACKS)


def _source(proposal: Proposal) -> str:
    """The published item's provenance source: the first evidence ref, else the proposal itself."""
    for item in proposal.evidence:
        if isinstance(item, dict) and str(item.get("ref") or "").strip():
            return str(item["ref"]).strip()[:500]
    return f"unforgetter:{proposal.ref}"


_BASE_STATE_AFTER: dict[str, str] = {
    Proposal.Op.UPDATE_FACT: State.SUPERSEDED,
    Proposal.Op.CLOSE_THREAD: State.CLOSED,
    Proposal.Op.REJECT: State.RETRACTED,
}


def base_move(base: Fact, op: str) -> None:
    """Supersede, close or retract the base item; Rejection(conflict) if it moved on meanwhile.

    A conditional update is the check, so a concurrent owner edit is never overwritten.
    """
    new_state: str = _BASE_STATE_AFTER[op]
    moved = Fact.objects.filter(pk=base.pk, state=base.state).update(state=new_state)
    if moved != 1:
        raise Rejection(Proposal.Reason.CONFLICT, f"{base.ref} changed meanwhile: a newer decision won.")
    base.state = new_state


def new_item(proposal: Proposal, project: Project, base: Fact | None, now: datetime) -> Fact | None:
    """The item a published add, update or new thread becomes (unsaved), or None."""
    op = proposal.op
    if op not in (Proposal.Op.ADD_FACT, Proposal.Op.OPEN_THREAD, Proposal.Op.UPDATE_FACT):
        return None
    kind = (
        Kind.THREAD
        if op == Proposal.Op.OPEN_THREAD
        else (proposal.kind or (base.kind if base else Kind.FACT))
    )
    return Fact(
        workspace_id=proposal.workspace_id,
        project_id=proposal.project_id,
        ref=new_ref(kind),
        kind=kind,
        text=proposal.text,
        state=Kind.live_state(kind),
        data_class=base.data_class if base else project.data_class,
        source=_source(proposal),
        actor=proposal.actor,
        # Taint never decreases: an update carries the worse of its proposal and the old version.
        taint=max(proposal.taint, base.taint if base else Taint.CLEAN),
        supersedes=base,
        proposal=proposal,
        created_at=now,
    )


@dataclass
class _Decisions:
    """A batch's outcomes, written in a few statements when the batch ends."""

    published: list[Proposal] = field(default_factory=list)
    awaiting: list[Proposal] = field(default_factory=list)
    rejected: list[Proposal] = field(default_factory=list)
    items: list[Fact] = field(default_factory=list)

    def reject(self, proposal: Proposal, rejection: Rejection, now: datetime) -> None:
        proposal.status, proposal.reason = Proposal.Status.REJECTED, rejection.reason
        proposal.reason_detail, proposal.decided_at = rejection.detail, now
        proposal.signals = rejection.signals
        self.rejected.append(proposal)

    def write(self, now: datetime) -> None:
        for status, group in (
            (Proposal.Status.PUBLISHED, self.published),
            (Proposal.Status.AWAITING_REVIEW, self.awaiting),
        ):
            if not group:
                continue
            # Status and time are the same for the whole group: one UPDATE. Only the signals differ
            # row by row, and bulk_update's CASE per field is costly: it gets that one field alone.
            _decided.update([p.pk for p in group], status=status, decided_at=now)
            flagged = [p for p in group if p.signals]
            for proposal in group:
                proposal.status, proposal.decided_at = status, now
            if flagged:
                Proposal.objects.bulk_update(flagged, ["signals"], batch_size=500)
        if self.rejected:
            Proposal.objects.bulk_update(
                self.rejected, ["status", "reason", "reason_detail", "decided_at", "signals"], batch_size=500
            )
        if self.items:
            # bulk_create, not a PreparedInsert: on PostgreSQL it sends a column's values as one
            # array (UNNEST), cheaper for a full batch, and no dearer measured for a small one.
            Fact.objects.bulk_create(self.items, batch_size=500)
            prints_record(self.items)


# A batch's decisions and its watermark, written with SQL built once per process and row count
# (workspaces.prepared).
_decided = PreparedUpdate(Proposal, ["status", "decided_at"])
_watermark_advance = PreparedUpdate(Watermark, ["seq", "updated_at"])


def _consolidate_one(
    batch: _Batch, proposal: Proposal, decisions: _Decisions, report: ConsolidationReport, now: datetime
) -> None:
    try:
        base, risks = _validate(batch, proposal)
        proposal.signals = risks
        if _held(batch, proposal, risks):
            decisions.awaiting.append(proposal)
            report.awaiting_review += 1
            return
        if base is not None:
            base_move(base, proposal.op)
    except Rejection as rejection:
        decisions.reject(proposal, rejection, now)
        if rejection.reason in _CONTENT_REASONS:
            batch.rejected.add(proposal.content_digest)
        report.rejected += 1
        report.reasons[rejection.reason] = report.reasons.get(rejection.reason, 0) + 1
        return
    item = new_item(proposal, batch.projects[proposal.project_id], base, now)
    if item is not None:
        decisions.items.append(item)
    decisions.published.append(proposal)
    batch.touched_projects.add(proposal.project_id)
    report.published += 1


# The claim, with SKIP LOCKED or (`wait`) waiting for the holder. of=self: the joined workspace row
# must stay free, or submissions would queue behind the whole batch instead of only its closing
# publication. Both compiled once per process, as is the batch's read of its proposals.
_watermark_claim = {
    wait: PreparedObjects(
        lambda workspace_id, wait=wait: (
            Watermark.objects.select_for_update(skip_locked=not wait, of=("self",))
            .select_related("workspace")
            .filter(workspace_id=workspace_id)
        )
    )
    for wait in (False, True)
}
_proposals_by_size: dict[int, PreparedObjects] = {}


def _batch_proposals(size: int) -> PreparedObjects:
    """The next `size` proposals past a watermark, locked (so an owner's review waits for the batch)."""
    prepared = _proposals_by_size.get(size)
    if prepared is None:
        prepared = _proposals_by_size[size] = PreparedObjects(
            lambda workspace_id, after: (
                Proposal.objects.select_for_update(of=("self",))
                .filter(workspace_id=workspace_id, seq__gt=after)
                .order_by("seq")[:size]
            )
        )
    return prepared


def proposal_consolidate(
    *, workspace_id: int, batch_size: int | None = None, wait: bool = False
) -> ConsolidationReport:
    """Consolidate one batch of a workspace's pending proposals, in seq order, exactly once.

    The claim is the Watermark row, locked with SKIP LOCKED: another worker holding it means this
    call does nothing (`busy`); with `wait`, it waits for that worker's batch to commit instead.
    The batch's proposal rows are locked too, so an owner's review waits for the batch rather than
    racing it. Effects, status changes, the watermark and the publication commit together; a
    worker killed mid-batch leaves no trace and the next claim starts where it did.
    """
    size = batch_size or settings.UNFORGETTER["CONSOLIDATION_BATCH"]
    report = ConsolidationReport()
    if _batch_claim(workspace_id=workspace_id, size=size, wait=wait, report=report):
        return report
    # Nothing claimed: another worker holds the watermark, or the workspace has none yet. Created
    # outside the batch's transaction, so a deleted workspace fails here (its foreign key is
    # checked at commit on PostgreSQL), and only on a workspace's first batch.
    if Watermark.objects.filter(workspace_id=workspace_id).exists():
        report.busy = True
        return report
    try:
        Watermark.objects.get_or_create(workspace_id=workspace_id)
    except IntegrityError:
        return report  # the workspace was deleted after this task was queued: nothing to do
    if not _batch_claim(workspace_id=workspace_id, size=size, wait=wait, report=report):
        report.busy = True
    return report


def _batch_claim(*, workspace_id: int, size: int, wait: bool, report: ConsolidationReport) -> bool:
    """Claim the workspace's watermark and consolidate the batch past it; False if not claimed."""
    with transaction.atomic():
        claimed = cast(list[Watermark], _watermark_claim[wait].objects(workspace_id))
        if not claimed:
            return False
        watermark = claimed[0]
        # Everything past the watermark has committed: seq is allocated under the workspace lock
        # and committed before the next one is allocated, so no lower seq can appear later.
        proposals = cast(list[Proposal], _batch_proposals(size).objects(workspace_id, watermark.seq))
        if not proposals:
            return True
        now = timezone.now()
        batch = _Batch(watermark.workspace, proposals)
        decisions = _Decisions()
        report.batches = 1
        for proposal in proposals:
            report.claimed += 1
            if proposal.status not in Proposal.Status.pending():
                report.skipped += 1  # decided by an owner before the consolidator reached it
                continue
            _consolidate_one(batch, proposal, decisions, report, now)
        decisions.write(now)
        watermark.seq = proposals[-1].seq
        watermark.updated_at = now
        _watermark_advance.update([watermark.pk], seq=watermark.seq, updated_at=now)
        if report.published:
            project_touch(project_ids=batch.touched_projects, now=now)
            publication_record(workspace=watermark.workspace, published_count=report.published, changed=True)
    return True


def consolidation_run(
    *,
    workspace_id: int,
    batch_size: int | None = None,
    max_batches: int | None = None,
    wait: bool = False,
) -> ConsolidationReport:
    """Consolidate batches until nothing is pending, or another worker holds the workspace (with
    `wait`: until nothing is pending, taking turns with other workers)."""
    total = ConsolidationReport()
    while max_batches is None or total.batches < max_batches:
        report = proposal_consolidate(workspace_id=workspace_id, batch_size=batch_size, wait=wait)
        total.add(report)
        if report.busy or report.claimed == 0:
            break
    return total


def workspaces_pending() -> list[int]:
    """Workspaces with proposals the consolidator has not reached (a small partial index)."""
    return [workspace_id for (workspace_id,) in _pending.rows()]


# Read on every cycle of every consolidator: compiled once per process.
_pending = Prepared(
    lambda: (
        Proposal.objects.filter(status__in=Proposal.Status.pending())
        .values_list("workspace_id")
        .distinct()
        .order_by()
    )
)
