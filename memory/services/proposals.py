"""The agent write path, part one: proposals are submitted (propose_memory).

Invariants kept here and nowhere else:

- A proposal is stored once per (workspace, actor, request_id); replays return the original.
- `seq` is allocated, and the previous attestation read, under the Workspace row's lock in the
  transaction that inserts the proposal, so seq order is commit order and the HMAC chain is a chain.
- Taint is the maximum over the zone, the evidence, every cited item and every tainted item the
  text nearly copies, and never decreases.

Consolidation is in memory.services.consolidation, review in memory.services.decisions.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Required, TypedDict

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db import connection as db_connection
from django.utils import timezone

from memory import ledger
from memory.contract import ProposalReceipt
from memory.dispatch import consolidation_enqueue
from memory.evidence import ref_hazard
from memory.exceptions import DuplicateRequest
from memory.models import Fact, Kind, Proposal, Taint
from memory.redaction import redact
from memory.rules import (
    MAX_EVIDENCE_ITEMS,
    MAX_EVIDENCE_REF,
    MAX_EVIDENCE_TEXT,
    REQUEST_ID_HELP,
    REQUEST_ID_RE,
)
from memory.selectors import project_found_beside, project_read
from memory.services.group_commit import GroupCommit
from memory.services.taint_prints import copies_taint, shared_print_probe, unshared_bands
from memory.validation import (
    CheckedChange,
    change_check,
    cited_refs,
    content_digest,
    target_kind_check,
)
from workspaces.exceptions import ForbiddenScope, InvalidRequest, RateLimited
from workspaces.models import Project, Workspace
from workspaces.prepared import Beside, Prepared, PreparedInsert, Read
from workspaces.scope import AgentScope
from workspaces.selectors import project_for_agent, project_in_scope
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
    # The original was stored with its secrets redacted; so is what this call sent, to compare.
    normalised = dict(change)
    normalised["text"] = redact(str(change.get("text") or ""))
    evidence = [
        {**e, "ref": redact((e.get("ref") or "").strip()), "text": redact(e.get("text") or "")}
        for e in evidence
    ]
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
    `trusted` count as untrusted: trust is never raised by asserting it; nor does a ref into a
    local file, a private or metadata address or a non-web scheme (memory.evidence) count."""
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
        hazard = ref_hazard(ref) if ref else None
        counted = UNTRUSTED if scope.is_low_trust or hazard is not None else claimed
        entry: dict[str, Any] = {"claimed": claimed, "trust": counted}
        ref, text = redact(ref), redact(text)
        if ref:
            entry["ref"] = ref
        if hazard is not None:
            entry["hazard"] = f"The ref is {hazard[1]}: no provenance a reviewer can check."
        if text:
            entry["text"] = text
        stored.append(entry)
    return stored


def _target_resolve(reads: _Reads, project: Project, change: CheckedChange) -> Fact | None:
    """The item an update, close or retraction applies to, as this credential may see it."""
    if not change.base:
        return None
    scope = reads.scope
    found = reads.items([change.base]).get(change.base)
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
    wait = window_hit(f"propose:{scope.connection_id}", limit=per_minute, window_seconds=60)
    if wait is not None:
        raise RateLimited(
            f"This credential may propose {per_minute} changes a minute; retry in {wait} s.", retry_after=wait
        )


class ProposedChange(TypedDict, total=False):
    """One change of a submission: what propose_memory takes besides the credential and project."""

    request_id: Required[str]
    op: Required[str]
    text: Required[str]
    evidence: Required[Sequence[Mapping[str, Any]]]
    target: str | None
    supersedes: str | None
    kind: str | None


# Lookups by a list of keys are split into statements of at most this many parameters.
_CHUNK = 500


class _Reads:
    """What a submission reads besides its writes: the project, replays, and the items it names.

    Each is read once per submission, on first need, so a single proposal reads exactly what it
    did alone. A bulk submission announces its request ids and refs up front (`expect`); they are
    then read in a few chunked statements instead of one or two per change.
    """

    def __init__(self, scope: AgentScope, project_id: str, text: str | None = None) -> None:
        self.scope = scope
        self.project_id = project_id
        # A single change's text: whether a tainted item shares its prints is read in the first
        # statement too; where none does, its bands need no lookup of their own (copies_taint).
        self._text = text
        self.unshared: frozenset[int] = frozenset()
        self._found: Project | None = None  # the project's row, read and not yet checked
        self._project_read = False
        self._project: Project | None = None
        self._replays: dict[str, int | None] = {}  # request id -> the stored proposal's pk, or None
        self._items: dict[str, Fact | None] = {}  # ref -> the item of this workspace, or None
        self._expected_refs: set[str] = set()

    def project(self) -> Project:
        if self._project is None:
            if self._project_read:
                self._project = project_in_scope(self.scope, self.project_id, self._found)
            else:
                self._project = project_for_agent(self.scope, self.project_id)
        return self._project

    def expect(self, *, request_ids: Iterable[str], refs: Iterable[str]) -> None:
        self._probe([r for r in request_ids if r not in self._replays])
        self._expected_refs.update(refs)

    def existing(self, request_id: str) -> Proposal | None:
        """The proposal already stored under this request id (the actor's), if any.

        A submission's first probe is read with its project, in one statement (`proposal_first_read`):
        the project's row is kept, and checked only when the change needs it, so the errors
        come in the order they did.
        """
        if request_id not in self._replays and not self._project_read:
            beside = _first_beside(self.scope, request_id, self._text)
            found = project_found_beside(self.scope, self.project_id, beside)
            self._project_read = True
            if found is not None:
                self._found, (self._replays[request_id], *shared) = found
                if self._text is not None and shared == [None]:
                    self.unshared = unshared_bands(self._text)
        if request_id not in self._replays:  # no such project: nothing was read beside it
            self._probe([request_id])
        pk = self._replays[request_id]
        return None if pk is None else Proposal.objects.select_related("project").get(pk=pk)

    def stored_meanwhile(self, request_ids: Sequence[str]) -> dict[str, Proposal]:
        """Of these request ids, the ones another transaction has stored since (read afresh)."""
        for request_id in request_ids:
            self._replays.pop(request_id, None)
        self._probe(list(request_ids))
        return {r: p for r in request_ids if (p := self.existing(r)) is not None}

    def items(self, refs: Sequence[str]) -> dict[str, Fact]:
        """The workspace's items among `refs` (with any expected ones not read yet)."""
        missing = [r for r in refs if r not in self._items]
        if missing:
            unread = sorted(self._expected_refs.difference(self._items, missing))
            self._expected_refs.clear()
            fetch = [*dict.fromkeys(missing), *unread]
            for start in range(0, len(fetch), _CHUNK):
                chunk = fetch[start : start + _CHUNK]
                found = Fact.objects.filter(workspace_id=self.scope.workspace_id, ref__in=chunk).only(
                    "id", "workspace_id", "ref", "kind", "state", "data_class", "project_id", "taint"
                )
                self._items.update(dict.fromkeys(chunk))
                self._items.update((f.ref, f) for f in found)
        return {r: f for r in refs if (f := self._items[r]) is not None}

    def _probe(self, request_ids: list[str]) -> None:
        # The common case is "no such request": an index-only probe, the row only for a replay.
        scope = self.scope
        for start in range(0, len(request_ids), _CHUNK):
            chunk = request_ids[start : start + _CHUNK]
            self._replays.update(dict.fromkeys(chunk))
            self._replays.update(_replays_stored.rows(scope.workspace_id, scope.actor, chunk))


def _propose_check(scope: AgentScope) -> None:
    if not scope.can_propose:
        raise ForbiddenScope(
            "This credential is read-only: it may read memory but not propose changes.",
            action="Do not retry. Ask the workspace owner for a contributor credential.",
        )


def _change_args(change: ProposedChange) -> dict[str, Any]:
    return {
        "op": change["op"],
        "text": change["text"],
        "target": change.get("target"),
        "supersedes": change.get("supersedes"),
        "kind": change.get("kind"),
    }


def _prepare(reads: _Reads, change: ProposedChange) -> Submitted:
    """Check one change and build its proposal, unsaved, with its taint; or replay its request id.

    Every check of the write path is here, in the order the errors are reported in.
    """
    scope = reads.scope
    request_id = change["request_id"]
    if not REQUEST_ID_RE.match(request_id):
        raise InvalidRequest(f"request_id must be {REQUEST_ID_HELP}")
    change_args = _change_args(change)
    evidence = change["evidence"]
    existing = reads.existing(request_id)
    if existing is not None:
        return _replay(existing, project_id=reads.project_id, change=change_args, evidence=evidence)
    _rate_check(scope)

    checked = change_check(**change_args)
    checked = replace(checked, text=redact(checked.text))  # secrets are never stored in clear
    project = reads.project()
    target_fact = _target_resolve(reads, project, checked)
    stored_evidence = _evidence_check(evidence, scope)
    if target_fact is not None and checked.op == Proposal.Op.UPDATE_FACT and not checked.kind:
        checked = CheckedChange(
            op=checked.op, kind=target_fact.kind, text=checked.text, target=checked.target, base=checked.base
        )

    refs = cited_refs(text=change["text"], evidence=stored_evidence, base=checked.base)
    cited = {ref: fact.taint for ref, fact in reads.items(refs).items()} if refs else {}
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
        workspace_id=scope.workspace_id,
        project=project,
        connection_id=scope.connection_id,
        actor=scope.actor,
        zone=scope.zone,
        request_id=request_id,
        op=checked.op,
        kind=checked.kind,
        target=checked.target,
        text=checked.text,
        supersedes=checked.base if checked.op == Proposal.Op.UPDATE_FACT else "",
        evidence=stored_evidence,
        content_digest=content_digest(project_id=project.pk, change=checked),
        status=status,
        taint=taint,
        created_at=timezone.now(),
    )
    return Submitted(proposal=proposal)


def _first_beside(scope: AgentScope, request_id: str, text: str | None) -> Beside:
    """What a submission reads beside its project: the id of the proposal the actor stored under
    `request_id` (or NULL; the unique request key: at most one row), then, for a single change's
    `text`, whether a tainted item shares its prints (taint_prints.shared_print_probe)."""
    stored = Beside(
        '(SELECT "id" FROM "memory_proposal"'
        ' WHERE "workspace_id" = %s AND "actor" = %s AND "request_id" = %s)',
        [scope.workspace_id, scope.actor, request_id],
    )
    shared = shared_print_probe(scope.workspace_id, text) if text is not None else None
    if shared is None:
        return stored
    return Beside(f"{stored.sql}, {shared.sql}", [*stored.params, *shared.params])


def proposal_first_read(scope: AgentScope, project_id: str, request_id: str, text: str) -> Read:
    """The statement a proposal's submission runs first (its project, with its request id's
    stored proposal and its text's shared prints beside it), for the credential's statement to
    run it too (workspaces.bearers.ReadAhead)."""
    return project_read(scope, project_id, _first_beside(scope, request_id, text))


# The reads every proposal makes, compiled once per process (workspaces.prepared); the lock and
# the ledger's head are read by every publication too (memory.services.publishing).
_replays_stored = Prepared(
    lambda workspace_id, actor, request_ids: Proposal.objects.filter(
        workspace_id=workspace_id, actor=actor, request_id__in=request_ids
    ).values_list("request_id", "pk")
)
# The lock that orders a workspace's proposals and publications (see _store, publication_record).
workspace_lock = Prepared(
    lambda workspace_id: Workspace.objects.select_for_update().filter(pk=workspace_id).values_list("pk")
)
ledger_head = Prepared(
    lambda workspace_id: (
        Proposal.objects.filter(workspace_id=workspace_id)
        .order_by("-seq")
        .values_list("seq", "attestation")[:1]
    )
)


# Every proposal is inserted through this: its SQL is built once per process and row count.
_proposals_insert = PreparedInsert(Proposal)


def _store(workspace_id: int, proposals: Sequence[Proposal]) -> None:
    """Insert prepared proposals in order, each attested after the one before it."""
    with transaction.atomic():
        # The workspace row's lock orders every insert of this workspace: seq and the previous
        # attestation are read under it and the insert commits before the next writer reads.
        # (SQLite has no row locks: its IMMEDIATE transactions already take the one write lock.)
        if db_connection.features.has_select_for_update and not workspace_lock.rows(workspace_id):
            raise Workspace.DoesNotExist("The workspace was deleted.")
        last = ledger_head.rows(workspace_id)
        seq, previous = last[0] if last else (0, "")
        for proposal in proposals:
            seq += 1
            proposal.seq = seq
            proposal.attestation = previous = ledger.attest(proposal, previous)
        _proposals_insert.insert(proposals)
        transaction.on_commit(lambda: consolidation_enqueue(workspace_id), robust=True)


# Concurrent submissions of this process share one locked insert and one commit.
def _store_batch(workspace_id: int, proposals: Sequence[Proposal]) -> None:
    _store(workspace_id, proposals)  # looked up when called: tests race a writer through it


_group_commit: GroupCommit[Proposal] = GroupCommit(_store_batch)


def _unsaved(proposals: Sequence[Proposal]) -> Callable[[], None]:
    """Forget the ids a failed insert left on `proposals`, before they are inserted again."""

    def reset() -> None:
        for proposal in proposals:
            proposal.pk = None

    return reset


def _submit(reads: _Reads, changes: Sequence[ProposedChange]) -> list[Submitted]:
    """Prepare every change, then store the new ones together; replays answer the original."""
    results = [_prepare(reads, change) for change in changes]
    fresh = [i for i, submitted in enumerate(results) if not submitted.duplicate]
    copies_taint(reads.scope.workspace_id, [results[i].proposal for i in fresh], unshared=reads.unshared)
    while fresh:
        proposals = [results[i].proposal for i in fresh]
        try:
            _group_commit.write(reads.scope.workspace_id, proposals, before_retry=_unsaved(proposals))
        except IntegrityError:
            # A concurrent replay committed first: the unique (workspace, actor, request_id)
            # constraint is the last word on replays, and the transaction above left nothing
            # behind. Those become replays; the rest are stored again.
            taken = reads.stored_meanwhile([changes[i]["request_id"] for i in fresh])
            if not taken:
                raise
            for i in fresh:
                results[i].proposal.pk = None
                original = taken.get(changes[i]["request_id"])
                if original is not None:
                    results[i] = _replay(
                        original,
                        project_id=reads.project_id,
                        change=_change_args(changes[i]),
                        evidence=changes[i]["evidence"],
                    )
            fresh = [i for i in fresh if not results[i].duplicate]
        else:
            break
    return results


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
    _propose_check(scope)
    change = ProposedChange(
        request_id=request_id,
        op=op,
        text=text,
        evidence=evidence,
        target=target,
        supersedes=supersedes,
        kind=kind,
    )
    (submitted,) = _submit(_Reads(scope, project_id, text), [change])
    return submitted


def proposals_submit(
    *, scope: AgentScope, project_id: str, changes: Sequence[ProposedChange]
) -> list[Submitted]:
    """Submit many changes to one project at once, as `proposal_submit` submits each, in order.

    The same checks, taint and attestation, change by change; one locked insert for all, so seq
    order is the order of `changes`. All or nothing: the first refused change raises its error
    and nothing is stored. A request id may appear once per call.
    """
    _propose_check(scope)
    request_ids = [change["request_id"] for change in changes]
    repeated = next((r for r, n in Counter(request_ids).items() if n > 1), None)
    if repeated is not None:
        raise InvalidRequest(f"request_id {repeated[:128]!r} appears more than once in this submission.")
    reads = _Reads(scope, project_id)
    reads.expect(
        request_ids=[r for r in request_ids if REQUEST_ID_RE.match(r)],
        refs=(ref for change in changes for ref in _named_refs(change)),
    )
    return _submit(reads, changes)


def _named_refs(change: ProposedChange) -> list[str]:
    """The refs a change may name, read from its raw form (only to read them all at once)."""
    base = (change.get("supersedes") or change.get("target") or "").strip()
    evidence = [item for item in change["evidence"] if isinstance(item, Mapping)]
    return cited_refs(text=change["text"], evidence=evidence, base=base)
