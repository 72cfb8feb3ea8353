"""The agent write path, part one: proposals are submitted (propose_memory).

Invariants kept here and nowhere else:

- A proposal is stored once per (workspace, actor, request_id); replays return the original.
- `seq` is allocated, and the previous attestation read, under the Workspace row's lock in the
  transaction that inserts the proposal, so seq order is commit order and the HMAC chain is a chain.
- Taint is the maximum over the zone, the evidence and every cited item, and never decreases.

Consolidation is in memory.services.consolidation, review in memory.services.decisions.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db import connection as db_connection
from django.utils import timezone

from memory import ledger
from memory.contract import ProposalReceipt
from memory.dispatch import consolidation_enqueue
from memory.exceptions import DuplicateRequest
from memory.models import Fact, Kind, Proposal, Taint
from memory.rules import (
    MAX_EVIDENCE_ITEMS,
    MAX_EVIDENCE_REF,
    MAX_EVIDENCE_TEXT,
    REQUEST_ID_HELP,
    REQUEST_ID_RE,
)
from memory.validation import (
    CheckedChange,
    change_check,
    cited_refs,
    content_digest,
    target_kind_check,
)
from workspaces.exceptions import ForbiddenScope, InvalidRequest, RateLimited
from workspaces.models import Project, Workspace
from workspaces.scope import AgentScope
from workspaces.selectors import project_for_agent
from workspaces.throttle import window_hit

logger = logging.getLogger(__name__)

TRUSTED = "trusted"
UNTRUSTED = "untrusted"


@dataclass(frozen=True)
class Submitted:
    """What propose_memory answers: the stored proposal, and whether this call was a replay."""

    proposal: Proposal
    duplicate: bool = False
    same_content: bool = True

    def payload(self) -> ProposalReceipt:
        proposal = self.proposal
        body = ProposalReceipt(
            proposal_id=proposal.ref, status=submitted_status(proposal), taint=proposal.taint_label
        )
        if self.duplicate:
            body["duplicate_request"] = True
            body["current_status"] = proposal.status
            message = f"request_id {proposal.request_id!r} was already used; this is its original result."
            if not self.same_content:
                message += (
                    " This call's change or evidence differs from the original and was NOT stored; "
                    "use a new request_id for a new proposal."
                )
            body["warnings"] = [DuplicateRequest(message).as_dict()]
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


def _evidence_check(evidence: Sequence[Mapping[str, Any]], scope: AgentScope) -> list[dict[str, Any]]:
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
        counted = UNTRUSTED if scope.is_low_trust else claimed
        entry: dict[str, Any] = {"claimed": claimed, "trust": counted}
        if ref:
            entry["ref"] = ref
        if text:
            entry["text"] = text
        stored.append(entry)
    return stored


def _target_resolve(scope: AgentScope, project: Project, change: CheckedChange) -> Fact | None:
    """The item an update, close or retraction applies to, as this credential may see it."""
    if not change.base:
        return None
    fact = Fact.objects.filter(workspace_id=scope.workspace_id, ref=change.base).only(
        "id", "workspace_id", "ref", "kind", "state", "data_class", "project_id", "taint"
    )
    found = fact.first()
    if found is not None and found.kind in Kind.protected():
        target_kind_check(op=change.op, kind=found.kind)  # raises ProtectedTarget
    if found is None or found.project_id != project.pk:
        raise InvalidRequest(f"No item {change.base!r} in project {project.slug!r}.")
    if not scope.sees_item(
        workspace_id=found.workspace_id, project_id=found.project_id, data_class=found.data_class
    ):
        raise ForbiddenScope(
            f"Item {change.base!r} is outside this credential's data classes.",
            action="Do not retry. Propose only changes to items get_context or search_memory returned.",
        )
    target_kind_check(op=change.op, kind=found.kind)
    return found


def _rate_check(scope: AgentScope) -> None:
    per_minute = settings.UNFORGETTER.get("PROPOSE_RATE_PER_MINUTE") or 0
    if per_minute <= 0:
        return
    if window_hit(f"propose:{scope.connection_id}", limit=per_minute, window_seconds=60) is not None:
        raise RateLimited(
            f"This credential may propose {per_minute} changes a minute; wait for the next minute."
        )


def proposal_submit(
    *,
    scope: AgentScope,
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
    if not scope.can_propose:
        raise ForbiddenScope(
            "This credential is read-only: it may read memory but not propose changes.",
            action="Do not retry. Ask the workspace owner for a contributor credential.",
        )
    if not REQUEST_ID_RE.match(request_id):
        raise InvalidRequest(f"request_id must be {REQUEST_ID_HELP}")
    change_args = {"op": op, "text": text, "target": target, "supersedes": supersedes, "kind": kind}
    workspace_id = scope.workspace_id
    existing = _existing(workspace_id, scope.actor, request_id)
    if existing is not None:
        return _replay(existing, project_id=project_id, change=change_args, evidence=evidence)
    _rate_check(scope)

    change = change_check(op=op, text=text, target=target, supersedes=supersedes, kind=kind)
    project = project_for_agent(scope, project_id)
    target_fact = _target_resolve(scope, project, change)
    stored_evidence = _evidence_check(evidence, scope)
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
            Taint.UNTRUSTED if scope.is_low_trust else Taint.CLEAN,
            *(Taint.UNTRUSTED if e["trust"] == UNTRUSTED else Taint.CLEAN for e in stored_evidence),
            *cited.values(),
        ]
    )
    status = Proposal.Status.QUARANTINED if taint > Taint.CLEAN else Proposal.Status.QUEUED
    proposal = Proposal(
        workspace_id=workspace_id,
        project=project,
        connection_id=scope.connection_id,
        actor=scope.actor,
        zone=scope.zone,
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
            transaction.on_commit(lambda: consolidation_enqueue(workspace_id), robust=True)
    except IntegrityError:
        # A concurrent replay committed first: the unique (workspace, actor, request_id)
        # constraint is the last word on replays, and the transaction above left nothing behind.
        existing = _existing(workspace_id, scope.actor, request_id)
        if existing is None:
            raise
        return _replay(existing, project_id=project_id, change=change_args, evidence=evidence)
    return Submitted(proposal=proposal)


def _existing(workspace_id: int, actor: str, request_id: str) -> Proposal | None:
    # The common case is "no such request": an index-only probe, the row only for a replay.
    key = {"workspace_id": workspace_id, "actor": actor, "request_id": request_id}
    pk = Proposal.objects.filter(**key).values_list("pk", flat=True).first()
    return None if pk is None else Proposal.objects.select_related("project").get(pk=pk)
