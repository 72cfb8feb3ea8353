"""The agent write path: proposals are submitted, consolidated exactly once, and reviewed.

Invariants kept here and nowhere else:

- A proposal is stored once per (workspace, actor, request_id); replays return the original.
- `seq` is allocated, and the previous attestation read, under the Workspace row's lock in the
  transaction that inserts the proposal, so seq order is commit order and the HMAC chain is a chain.
- Taint is the maximum over the zone, the evidence and every cited item, and never decreases: a
  published item carries its proposal's taint, approval included.
- Consolidation claims a batch by locking the workspace's Watermark row and advancing it in the
  same transaction as the batch's effects and status changes: a batch happens once or not at all.
- Only status, reason, decided_at and the review fields of a proposal ever change.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db import connection as db_connection
from django.utils import timezone

from memory import ledger
from memory.exceptions import ProposalStateError
from memory.models import Fact, Kind, Proposal, State, Taint, Watermark, new_ref
from memory.services.publishing import publication_record
from memory.validation import (
    MAX_EVIDENCE_ITEMS,
    MAX_EVIDENCE_REF,
    MAX_EVIDENCE_TEXT,
    REQUEST_ID_RE,
    CheckedChange,
    change_check,
    cited_refs,
    content_digest,
    provenance_present,
    signals_find,
    target_kind_check,
)
from workspaces.exceptions import ForbiddenScope, InvalidRequest, RateLimited, UnforgetterError
from workspaces.models import Connection, Membership, Project, TrustZone, Workspace
from workspaces.selectors import allowed_data_classes, project_for_agent

logger = logging.getLogger(__name__)

TRUSTED = "trusted"
UNTRUSTED = "untrusted"


# --- Submission ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Submitted:
    """What propose_memory answers: the stored proposal, and whether this call was a replay."""

    proposal: Proposal
    duplicate: bool = False
    same_content: bool = True

    def payload(self) -> dict[str, Any]:
        proposal = self.proposal
        body: dict[str, Any] = {
            "proposal_id": proposal.ref,
            "status": submitted_status(proposal),
            "taint": proposal.taint_label,
        }
        if self.duplicate:
            body["duplicate_request"] = True
            body["current_status"] = proposal.status
            message = f"request_id {proposal.request_id!r} was already used; this is its original result."
            if not self.same_content:
                message += (
                    " This call's change or evidence differs from the original and was NOT stored; "
                    "use a new request_id for a new proposal."
                )
            body["warnings"] = [
                {
                    "code": "duplicate_request",
                    "message": message,
                    "action": "Treat as success; the original result is returned.",
                }
            ]
        return body


def submitted_status(proposal: Proposal) -> str:
    """The status propose_memory answered: quarantined exactly when the proposal is tainted."""
    return Proposal.Status.QUARANTINED if proposal.taint > Taint.CLEAN else Proposal.Status.QUEUED


def _request_form(
    *, project_slug: str, change: Mapping[str, Any], evidence: Sequence[Mapping[str, Any]]
) -> str:
    """What a caller sent, canonically: a replay is compared with the original through this."""
    body = {
        "project": project_slug,
        "change": {
            "op": change.get("op") or "",
            "kind": change.get("kind") or "",
            "target": (change.get("target") or "").strip(),
            "text": change.get("text") or "",
        },
        "evidence": [
            {"ref": (e.get("ref") or "").strip(), "text": e.get("text") or "", "trust": e.get("trust") or ""}
            for e in evidence
        ],
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _stored_request_form(proposal: Proposal) -> str:
    change = {
        "op": proposal.op,
        # add_fact without a kind is stored as kind "fact"; a replay spelling it out is the same.
        "kind": proposal.kind if proposal.op == Proposal.Op.ADD_FACT else "",
        "target": proposal.target if proposal.op != Proposal.Op.UPDATE_FACT else proposal.supersedes,
        "text": proposal.text,
    }
    evidence = [
        {"ref": e.get("ref"), "text": e.get("text"), "trust": e.get("claimed")} for e in proposal.evidence
    ]
    return _request_form(project_slug=proposal.project.slug, change=change, evidence=evidence)


def _replay(
    existing: Proposal, *, project_id: str, change: Mapping[str, Any], evidence: Sequence[Mapping[str, Any]]
) -> Submitted:
    normalised = dict(change)
    if normalised.get("op") == Proposal.Op.ADD_FACT:
        normalised["kind"] = normalised.get("kind") or Kind.FACT
    else:
        normalised["kind"] = ""
    if normalised.get("op") == Proposal.Op.UPDATE_FACT:
        normalised["target"] = normalised.get("supersedes") or normalised.get("target")
    same = _request_form(
        project_slug=project_id, change=normalised, evidence=evidence
    ) == _stored_request_form(existing)
    return Submitted(proposal=existing, duplicate=True, same_content=same)


def _evidence_check(evidence: Sequence[Mapping[str, Any]], zone: TrustZone) -> list[dict[str, Any]]:
    """Evidence as stored: what was claimed and what it counts as. A low-trust zone's claims of
    `trusted` count as untrusted: trust is never raised by asserting it."""
    if not evidence:
        raise InvalidRequest("evidence needs at least one item: what the change is based on.")
    if len(evidence) > MAX_EVIDENCE_ITEMS:
        raise InvalidRequest(f"evidence holds at most {MAX_EVIDENCE_ITEMS} items.")
    stored = []
    for index, item in enumerate(evidence):
        ref = (item.get("ref") or "").strip()
        text = item.get("text") or ""
        claimed = item.get("trust")
        if claimed not in (TRUSTED, UNTRUSTED):
            raise InvalidRequest(f"evidence[{index}].trust must be trusted or untrusted.")
        if not ref and not text:
            raise InvalidRequest(f"evidence[{index}] needs a ref or a text.")
        if len(ref) > MAX_EVIDENCE_REF or len(text) > MAX_EVIDENCE_TEXT:
            raise InvalidRequest(
                f"evidence[{index}] is too long: refs up to {MAX_EVIDENCE_REF}, texts up to "
                f"{MAX_EVIDENCE_TEXT} characters."
            )
        counted = UNTRUSTED if zone.is_low_trust else claimed
        entry: dict[str, Any] = {"claimed": claimed, "trust": counted}
        if ref:
            entry["ref"] = ref
        if text:
            entry["text"] = text
        stored.append(entry)
    return stored


def _target_resolve(connection: Connection, project: Project, change: CheckedChange) -> Fact | None:
    """The item an update, close or retraction applies to, as this credential may see it."""
    if not change.base:
        return None
    fact = Fact.objects.filter(workspace_id=connection.workspace_id, ref=change.base).only(
        "id", "ref", "kind", "state", "data_class", "project_id", "taint"
    )
    found = fact.first()
    if found is not None and found.kind in Kind.protected():
        target_kind_check(op=change.op, kind=found.kind)  # raises ProtectedTarget
    if found is None or found.project_id != project.pk:
        raise InvalidRequest(f"No item {change.base!r} in project {project.slug!r}.")
    if found.data_class not in allowed_data_classes(connection):
        raise ForbiddenScope(
            f"Item {change.base!r} is outside this credential's data classes.",
            action="Do not retry. Propose only changes to items get_context or search_memory returned.",
        )
    target_kind_check(op=change.op, kind=found.kind)
    return found


def _rate_check(connection: Connection) -> None:
    per_minute = settings.UNFORGETTER.get("PROPOSE_RATE_PER_MINUTE") or 0
    if per_minute <= 0:
        return
    window = int(timezone.now().timestamp() // 60)
    key = f"unforgetter:propose-rate:{connection.pk}:{window}"
    cache.add(key, 0, timeout=120)
    if cache.incr(key) > per_minute:
        raise RateLimited(
            f"This credential may propose {per_minute} changes a minute; wait for the next minute."
        )


def proposal_submit(
    *,
    connection: Connection,
    project_id: str,
    request_id: str,
    op: str,
    text: str,
    evidence: Sequence[Mapping[str, Any]],
    target: str | None = None,
    supersedes: str | None = None,
    kind: str | None = None,
) -> Submitted:
    """Store an agent's proposed change, attested, as queued or quarantined; or replay the original.

    Quarantined when any evidence counts as untrusted, the zone is low-trust or anything cited is
    tainted; the taint is the maximum of those. Evidence refs are looked up among our own items
    (citations) and never fetched. Consolidation is enqueued when the insert commits.
    """
    if not connection.can_propose:
        raise ForbiddenScope(
            "This credential is read-only: it may read memory but not propose changes.",
            action="Do not retry. Ask the workspace owner for a contributor credential.",
        )
    if not REQUEST_ID_RE.match(request_id):
        raise InvalidRequest("request_id must be 8-128 characters of A-Z a-z 0-9 . _ : -")
    change_args = {"op": op, "text": text, "target": target, "supersedes": supersedes, "kind": kind}
    workspace_id = connection.workspace_id
    existing = _existing(workspace_id, connection.actor, request_id)
    if existing is not None:
        return _replay(existing, project_id=project_id, change=change_args, evidence=evidence)
    _rate_check(connection)

    change = change_check(op=op, text=text, target=target, supersedes=supersedes, kind=kind)
    project = project_for_agent(connection, project_id)
    target_fact = _target_resolve(connection, project, change)
    zone = connection.zone
    stored_evidence = _evidence_check(evidence, zone)
    if target_fact is not None and change.op == Proposal.Op.UPDATE_FACT and not change.kind:
        change = CheckedChange(
            op=change.op, kind=target_fact.kind, text=change.text, target=change.target, base=change.base
        )

    refs = cited_refs(text=text, evidence=stored_evidence, base=change.base)
    cited: dict[str, int] = {}
    if refs:
        cited = dict(Fact.objects.filter(workspace_id=workspace_id, ref__in=refs).values_list("ref", "taint"))
    for entry in stored_evidence:
        ref = entry.get("ref", "").removeprefix("unforgetter:")
        if ref in cited:
            entry["cites"] = ref
    taint = max(
        [
            Taint.UNTRUSTED if zone.is_low_trust else Taint.CLEAN,
            *(Taint.UNTRUSTED if e["trust"] == UNTRUSTED else Taint.CLEAN for e in stored_evidence),
            *cited.values(),
        ]
    )
    status = Proposal.Status.QUARANTINED if taint > Taint.CLEAN else Proposal.Status.QUEUED
    proposal = Proposal(
        workspace_id=workspace_id,
        project=project,
        connection=connection,
        actor=connection.actor,
        zone=zone.name,
        request_id=request_id,
        op=change.op,
        kind=change.kind,
        target=change.target,
        text=change.text,
        supersedes=change.base if change.op == Proposal.Op.UPDATE_FACT else "",
        evidence=stored_evidence,
        content_digest=content_digest(project_id=project.pk, change=change),
        status=status,
        taint=taint,
        created_at=timezone.now(),
    )
    try:
        with transaction.atomic():
            # The workspace row's lock orders every insert of this workspace: seq and the previous
            # attestation are read under it and the insert commits before the next writer reads.
            # (SQLite has no row locks: its IMMEDIATE transactions already take the one write lock.)
            if db_connection.features.has_select_for_update:
                Workspace.objects.select_for_update().filter(pk=workspace_id).values_list(
                    "pk", flat=True
                ).get()
            last = (
                Proposal.objects.filter(workspace_id=workspace_id)
                .order_by("-seq")
                .values_list("seq", "attestation")
                .first()
            )
            proposal.seq = (last[0] if last else 0) + 1
            proposal.attestation = ledger.attest(proposal, last[1] if last else "")
            proposal.save(force_insert=True)
            transaction.on_commit(lambda: _enqueue(workspace_id), robust=True)
    except IntegrityError:
        # A concurrent replay committed first: the unique (workspace, actor, request_id)
        # constraint is the last word on replays, and the transaction above left nothing behind.
        existing = _existing(workspace_id, connection.actor, request_id)
        if existing is None:
            raise
        return _replay(existing, project_id=project_id, change=change_args, evidence=evidence)
    return Submitted(proposal=proposal)


def _existing(workspace_id: int, actor: str, request_id: str) -> Proposal | None:
    # The common case is "no such request": an index-only probe, the row only for a replay.
    key = {"workspace_id": workspace_id, "actor": actor, "request_id": request_id}
    pk = Proposal.objects.filter(**key).values_list("pk", flat=True).first()
    return None if pk is None else Proposal.objects.select_related("project").get(pk=pk)


def _enqueue(workspace_id: int) -> None:
    from memory.worker import consolidation_enqueue

    consolidation_enqueue(workspace_id)


# --- Consolidation ------------------------------------------------------------------------------


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


class _Rejection(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail[:500]


@dataclass
class _Scope:
    usable: bool
    classes: frozenset[str]
    all_projects: bool
    projects: frozenset[int]


class _Batch:
    """What one batch needs from the database, read once, kept current as the batch applies."""

    def __init__(self, workspace: Workspace, proposals: list[Proposal]) -> None:
        now = timezone.now()
        self.workspace = workspace
        refs = {p.supersedes or p.target for p in proposals} - {""}
        self.facts: dict[str, Fact] = {
            f.ref: f for f in Fact.objects.filter(workspace=workspace, ref__in=refs)
        }
        digests = {p.content_digest for p in proposals}
        self.rejected = set(
            Proposal.objects.filter(
                workspace=workspace, status=Proposal.Status.REJECTED, content_digest__in=digests
            ).values_list("content_digest", flat=True)
        )
        connection_ids = {p.connection_id for p in proposals} - {None}
        self.scopes: dict[int, _Scope] = {}
        connections = Connection.objects.filter(pk__in=connection_ids).prefetch_related("projects")
        for c in connections:
            self.scopes[c.pk] = _Scope(
                usable=c.is_usable(now),
                classes=frozenset(allowed_data_classes(c)),
                all_projects=c.all_projects,
                projects=frozenset(p.pk for p in c.projects.all()),
            )
        self.projects: dict[int, Project] = {
            p.pk: p for p in Project.objects.filter(pk__in={p.project_id for p in proposals})
        }
        self.touched_projects: set[int] = set()


def _validate(batch: _Batch, proposal: Proposal) -> Fact | None:
    """Run every check of the consolidator, in order; raise _Rejection; return the base item."""
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
        raise _Rejection(reason, exc.message) from None
    if not all(isinstance(e, dict) for e in evidence):
        raise _Rejection(Proposal.Reason.SCHEMA, "The evidence is not a list of items.")

    scope = batch.scopes.get(proposal.connection_id or 0)
    project = batch.projects[proposal.project_id]
    if scope is None or not scope.usable:
        raise _Rejection(Proposal.Reason.SCOPE, "The credential was revoked or expired before consolidation.")
    if project.data_class not in scope.classes or not (scope.all_projects or project.pk in scope.projects):
        raise _Rejection(Proposal.Reason.SCOPE, "The project is no longer in the credential's catalogue.")

    base = batch.facts.get(change.base) if change.base else None
    if change.base:
        if base is None or base.project_id != project.pk:
            raise _Rejection(Proposal.Reason.SCOPE, f"No item {change.base} in project {project.slug}.")
        if base.kind in Kind.protected():
            raise _Rejection(Proposal.Reason.PROTECTED_TARGET, f"{change.base} is a protected {base.kind}.")
        if base.data_class not in scope.classes:
            raise _Rejection(
                Proposal.Reason.SCOPE, f"{change.base} is outside the credential's data classes."
            )
        try:
            target_kind_check(op=change.op, kind=base.kind)
        except UnforgetterError as exc:
            raise _Rejection(Proposal.Reason.SCHEMA, exc.message) from None
        wanted = State.OPEN if base.kind == Kind.THREAD else State.ACTIVE
        if base.state != wanted:
            raise _Rejection(
                Proposal.Reason.CONFLICT,
                f"{change.base} is {base.state} now: a newer decision came first. Re-read and propose again.",
            )

    if not provenance_present(evidence):
        raise _Rejection(Proposal.Reason.PROVENANCE, "No evidence says what the change rests on.")
    found = signals_find(text=proposal.text, evidence=evidence)
    if found is not None:
        where, signal = found
        raise _Rejection(signal.kind, f"{where}: {signal.detail} ({signal.label})")
    if proposal.content_digest in batch.rejected:
        raise _Rejection(
            Proposal.Reason.PREVIOUSLY_REJECTED, "The same change was proposed and rejected before."
        )
    return base


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


def _base_move(base: Fact, op: str) -> None:
    """Supersede, close or retract the base item; _Rejection(conflict) if it moved on meanwhile.

    A conditional update is the check, so a concurrent owner edit is never overwritten.
    """
    new_state: str = _BASE_STATE_AFTER[op]
    moved = Fact.objects.filter(pk=base.pk, state=base.state).update(state=new_state)
    if moved != 1:
        raise _Rejection(Proposal.Reason.CONFLICT, f"{base.ref} changed meanwhile: a newer decision won.")
    base.state = new_state


def _new_item(proposal: Proposal, project: Project, base: Fact | None, now: datetime) -> Fact | None:
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
        state=State.OPEN if op == Proposal.Op.OPEN_THREAD else State.ACTIVE,
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

    def reject(self, proposal: Proposal, rejection: _Rejection, now: datetime) -> None:
        proposal.status, proposal.reason = Proposal.Status.REJECTED, rejection.reason
        proposal.reason_detail, proposal.decided_at = rejection.detail, now
        self.rejected.append(proposal)

    def write(self, now: datetime) -> None:
        for status, group in (
            (Proposal.Status.PUBLISHED, self.published),
            (Proposal.Status.AWAITING_REVIEW, self.awaiting),
        ):
            if group:
                Proposal.objects.filter(pk__in=[p.pk for p in group]).update(status=status, decided_at=now)
        if self.rejected:
            Proposal.objects.bulk_update(
                self.rejected, ["status", "reason", "reason_detail", "decided_at"], batch_size=500
            )
        if self.items:
            Fact.objects.bulk_create(self.items, batch_size=500)


def _consolidate_one(
    batch: _Batch, proposal: Proposal, decisions: _Decisions, report: ConsolidationReport, now: datetime
) -> None:
    try:
        base = _validate(batch, proposal)
        hold = proposal.status == Proposal.Status.QUARANTINED or batch.workspace.review_every_proposal
        if hold:
            decisions.awaiting.append(proposal)
            report.awaiting_review += 1
            return
        if base is not None:
            _base_move(base, proposal.op)
    except _Rejection as rejection:
        decisions.reject(proposal, rejection, now)
        batch.rejected.add(proposal.content_digest)
        report.rejected += 1
        report.reasons[rejection.reason] = report.reasons.get(rejection.reason, 0) + 1
        return
    item = _new_item(proposal, batch.projects[proposal.project_id], base, now)
    if item is not None:
        decisions.items.append(item)
    decisions.published.append(proposal)
    batch.touched_projects.add(proposal.project_id)
    report.published += 1


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
    try:
        Watermark.objects.get_or_create(workspace_id=workspace_id)
    except IntegrityError:
        return report  # the workspace was deleted after this task was queued: nothing to do
    with transaction.atomic():
        watermark = (
            # of=self: the joined workspace row must stay free, or submissions would queue behind
            # the whole batch instead of only its closing publication.
            Watermark.objects.select_for_update(skip_locked=not wait, of=("self",))
            .select_related("workspace")
            .filter(workspace_id=workspace_id)
            .first()
        )
        if watermark is None:
            report.busy = True
            return report
        # Everything past the watermark has committed: seq is allocated under the workspace lock
        # and committed before the next one is allocated, so no lower seq can appear later.
        proposals = list(
            Proposal.objects.select_for_update(of=("self",))
            .filter(workspace_id=workspace_id, seq__gt=watermark.seq)
            .order_by("seq")[:size]
        )
        if not proposals:
            return report
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
        watermark.save(update_fields=["seq", "updated_at"])
        if report.published:
            Project.objects.filter(pk__in=batch.touched_projects).update(updated_at=now)
            publication_record(workspace=watermark.workspace, published_count=report.published, changed=True)
    return report


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
    return list(
        Proposal.objects.filter(status__in=Proposal.Status.pending())
        .values_list("workspace_id", flat=True)
        .distinct()
        .order_by()
    )


# --- Review -------------------------------------------------------------------------------------


def _reviewer_check(proposal: Proposal, reviewer: AbstractBaseUser) -> None:
    if not Membership.objects.filter(workspace_id=proposal.workspace_id, user_id=reviewer.pk).exists():
        raise ProposalStateError("Only the workspace's owners and reviewers may review its proposals.")


@transaction.atomic
def proposal_approve(*, proposal: Proposal, reviewer: AbstractBaseUser, note: str = "") -> Proposal:
    """Publish a proposal that passed validation and waits for review. Its taint stays.

    If the item it changes moved on meanwhile, newer decisions win: the proposal is rejected with
    reason `conflict` instead (check `status` on the returned proposal).
    """
    _reviewer_check(proposal, reviewer)
    locked = Proposal.objects.select_for_update(of=("self",)).select_related("project").get(pk=proposal.pk)
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
        wanted = State.OPEN if base is not None and base.kind == Kind.THREAD else State.ACTIVE
        if base is None or base.state != wanted:
            outcome, reason = Proposal.Status.REJECTED, Proposal.Reason.CONFLICT
            detail = f"{base_ref} is no longer current: a newer decision came first."
    if outcome == Proposal.Status.PUBLISHED:
        try:
            if base is not None:
                _base_move(base, locked.op)
            item = _new_item(locked, locked.project, base, now)
            if item is not None:
                item.save(force_insert=True)
        except _Rejection as rejection:
            outcome, reason, detail = Proposal.Status.REJECTED, rejection.reason, rejection.detail
    locked.status, locked.reason, locked.reason_detail = outcome, reason, detail
    locked.reviewer_id = reviewer.pk
    locked.reviewed_at = now
    locked.review_note = note
    locked.save(update_fields=["status", "reason", "reason_detail", "reviewer", "reviewed_at", "review_note"])
    if outcome == Proposal.Status.PUBLISHED:
        Project.objects.filter(pk=locked.project_id).update(updated_at=now)
        publication_record(workspace=locked.workspace, published_count=1, changed=True)
    return locked


@transaction.atomic
def proposal_reject(*, proposal: Proposal, reviewer: AbstractBaseUser, note: str) -> Proposal:
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


__all__ = [
    "ConsolidationReport",
    "Submitted",
    "consolidation_run",
    "proposal_approve",
    "proposal_consolidate",
    "proposal_reject",
    "proposal_submit",
    "submitted_status",
    "workspaces_pending",
]
