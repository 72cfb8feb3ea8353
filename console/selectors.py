"""Reads for the owner console. Every function takes the workspace the member resolved through
`workspaces.selectors.workspace_for_user`, and every query is filtered by it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.utils.dateparse import parse_datetime

from memory import search
from memory.models import ContextRequest, Fact, Kind, Proposal, Publication, State
from memory.refs import is_ref
from memory.rules import TARGETED_OPS
from workspaces.exceptions import NotFound
from workspaces.models import AuditEvent, Connection, DataClass, Project, Workspace

# Held proposals: quarantined ones are tainted and not validated by the consolidator yet (they
# can be rejected, not approved); awaiting_review ones passed validation and wait for a decision.
REVIEW_STATUSES = (Proposal.Status.QUARANTINED, Proposal.Status.AWAITING_REVIEW)


@dataclass
class ProjectSummary:
    project: Project
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def by_kind(self) -> list[int]:
        """Counts in `Kind` order, zeros included, for a table row."""
        return [self.counts.get(kind, 0) for kind in Kind.values]

    @property
    def nonzero(self) -> list[tuple[str, int]]:
        return [(kind, n) for kind in Kind.values if (n := self.counts.get(kind, 0))]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass
class Overview:
    projects: list[ProjectSummary]
    kinds: list[str]
    pending_review: int
    backlog: int
    publication: Publication | None
    last_change: Publication | None
    usable_connections: int


def overview(workspace: Workspace) -> Overview:
    """Projects with counts of current items by kind, the review and consolidation backlog, freshness.

    A fixed number of aggregate queries, whatever the size of the workspace.
    """
    projects = list(Project.objects.filter(workspace=workspace).order_by("slug"))
    summaries = {p.pk: ProjectSummary(project=p) for p in projects}
    rows = (
        Fact.objects.filter(workspace=workspace, state__in=State.current())
        .values_list("project_id", "kind")
        .annotate(n=Count("id"))
        .order_by()
    )
    for project_id, kind, n in rows:
        summaries[project_id].counts[kind] = n
    # Only the held and pending statuses are read: the (workspace, status, seq) index serves it.
    pending = Proposal.objects.filter(
        workspace=workspace, status__in=[*REVIEW_STATUSES, Proposal.Status.QUEUED]
    ).aggregate(
        review=Count("id", filter=Q(status__in=REVIEW_STATUSES)),
        backlog=Count("id", filter=Q(status__in=Proposal.Status.pending())),
    )
    publications = list(Publication.objects.filter(workspace=workspace).order_by("-version")[:1])
    last_change = Publication.objects.filter(workspace=workspace, changed=True).order_by("-version").first()
    usable = Connection.objects.filter(workspace=workspace).usable().count()
    return Overview(
        projects=list(summaries.values()),
        kinds=list(Kind.values),
        pending_review=pending["review"],
        backlog=pending["backlog"],
        publication=publications[0] if publications else None,
        last_change=last_change,
        usable_connections=usable,
    )


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


MAX_RANKED = 500


def memory_items(workspace: Workspace, filters: dict[str, Any]) -> QuerySet[Fact]:
    """Items of the workspace by project, kind and state, with a search.

    A search that is exactly a ref finds that item. Inside one project, words are matched with
    the full-text index (the best `MAX_RANKED` matches, all of them containing every word), so a
    project of a million items stays fast; across projects the text is matched as a substring.
    """
    queryset = Fact.objects.filter(workspace=workspace).select_related("project")
    project = None
    if filters.get("project"):
        project = Project.objects.filter(workspace=workspace, slug=filters["project"]).first()
        queryset = queryset.filter(project=project)
    if filters.get("kind"):
        queryset = queryset.filter(kind=filters["kind"])
    state = filters.get("state") or "current"
    states: list[str] = list(State.values)
    if state == "current":
        states = list(State.current())
        queryset = queryset.filter(state__in=states)
    elif state != "all":
        states = [state]
        queryset = queryset.filter(state=state)
    query = (filters.get("q") or "").strip()
    if query and is_ref(query):
        queryset = queryset.filter(ref=query)
    elif query and project is not None and search.terms(query):
        hits = search.rank(
            project_id=project.pk,
            data_classes=list(DataClass.values),
            states=states,
            kinds=[filters["kind"]] if filters.get("kind") else None,
            query=query,
            match="all",
            limit=MAX_RANKED,
        )
        queryset = queryset.filter(id__in=[hit.fact_id for hit in hits])
    elif query:
        queryset = queryset.filter(text__icontains=query)
    return queryset.order_by("-created_at", "-id")


def fact_for_member(workspace: Workspace, ref: str) -> Fact:
    # A ref comes from the URL: anything that cannot be a stored ref (NUL bytes, which
    # PostgreSQL refuses outright, or over-long input) is simply not found.
    if "\x00" in ref or len(ref) > Fact._meta.get_field("ref").max_length:  # type: ignore[operator]
        raise NotFound("No such item.")
    fact = (
        Fact.objects.filter(workspace=workspace, ref=ref)
        .select_related("project", "edited_by", "proposal", "supersedes")
        .first()
    )
    if fact is None:
        raise NotFound("No such item.")
    return fact


MAX_HISTORY = 100


def fact_history(fact: Fact) -> list[Fact]:
    """Every version in the item's supersession chain, newest first (bounded)."""
    newer: list[Fact] = []
    current = fact
    while len(newer) < MAX_HISTORY:
        successor = (
            Fact.objects.filter(supersedes=current)
            .select_related("edited_by", "proposal")
            .order_by("id")
            .first()
        )
        if successor is None:
            break
        newer.append(successor)
        current = successor
    older: list[Fact] = []
    current = fact
    while current.supersedes_id is not None and len(older) < MAX_HISTORY:
        predecessor = Fact.objects.select_related("edited_by", "proposal").get(pk=current.supersedes_id)
        older.append(predecessor)
        current = predecessor
    return [*reversed(newer), fact, *older]


def fact_proposals(fact: Fact, limit: int = 20) -> list[Proposal]:
    """The proposal that produced this version and every proposal that targeted it."""
    condition = Q(target=fact.ref) | Q(supersedes=fact.ref)
    if fact.proposal_id is not None:
        condition |= Q(pk=fact.proposal_id)
    return list(
        Proposal.objects.filter(condition, workspace_id=fact.workspace_id)
        .select_related("reviewer")
        .order_by("-seq")[:limit]
    )


def connections(workspace: Workspace) -> QuerySet[Connection]:
    return (
        Connection.objects.filter(workspace=workspace)
        .select_related("zone", "created_by", "oauth_application")
        .prefetch_related("projects")
        .order_by("revoked_at", "-created_at")
    )


def connection_for_member(workspace: Workspace, pk: int) -> Connection:
    connection = (
        Connection.objects.filter(workspace=workspace, pk=pk)
        .select_related("zone", "created_by", "oauth_application")
        .prefetch_related("projects")
        .first()
    )
    if connection is None:
        raise NotFound("No such connection.")
    return connection


# --- The audit timeline ----------------------------------------------------------------------------
# Context requests, proposals and reviews are read from their own tables (the source of truth,
# whichever write path made them); everything else from AuditEvent. The AuditEvent actions for the
# first three are left out here so nothing is listed twice.
DERIVED_ACTIONS = (AuditEvent.Action.CONTEXT, AuditEvent.Action.PROPOSAL, AuditEvent.Action.REVIEW)
TIMELINE_ACTIONS = [
    (AuditEvent.Action.CONTEXT.value, "Context requested"),
    (AuditEvent.Action.PROPOSAL.value, "Proposal submitted"),
    (AuditEvent.Action.REVIEW.value, "Proposal reviewed"),
    *[(a.value, a.label) for a in AuditEvent.Action if a not in DERIVED_ACTIONS],
]


@dataclass(frozen=True)
class Entry:
    at: datetime
    action: str
    label: str
    actor: str
    target: str
    detail: str
    link_seq: int | None = None
    link_ref: str | None = None
    link_connection: int | None = None


def _describe(detail: dict[str, Any]) -> str:
    """An audit event's detail as one readable line: `zone grok-bot · role contributor`."""
    parts = []
    for key, value in sorted(detail.items()):
        if isinstance(value, list):
            shown = ", ".join(str(v) for v in value)
        else:
            moment = parse_datetime(value) if isinstance(value, str) else None
            shown = f"{moment:%Y-%m-%d %H:%M} UTC" if moment else str(value)
        parts.append(f"{key.replace('_', ' ')} {shown}")
    return " · ".join(parts)


def _events(
    workspace: Workspace, action: str, actor: str, before: datetime | None, limit: int
) -> list[Entry]:
    labels = dict(TIMELINE_ACTIONS)
    entries: list[Entry] = []
    if action in ("", AuditEvent.Action.CONTEXT):
        rows = ContextRequest.objects.filter(workspace=workspace).select_related("project")
        if actor:
            rows = rows.filter(actor__icontains=actor)
        if before:
            rows = rows.filter(created_at__lt=before)
        entries += [
            Entry(r.created_at, "context", labels["context"], r.actor, r.project.slug, r.task, None)
            for r in rows.order_by("-created_at")[:limit]
        ]
    if action in ("", AuditEvent.Action.PROPOSAL):
        rows_p = Proposal.objects.filter(workspace=workspace).select_related("project")
        if actor:
            rows_p = rows_p.filter(actor__icontains=actor)
        if before:
            rows_p = rows_p.filter(created_at__lt=before)
        entries += [
            Entry(
                p.created_at,
                "proposal",
                labels["proposal"],
                p.actor,
                f"{p.project.slug} #{p.seq}",
                f"{p.get_op_display()} · zone {p.zone} · {p.taint_label}",
                link_seq=p.seq,
            )
            for p in rows_p.order_by("-created_at")[:limit]
        ]
    if action in ("", AuditEvent.Action.REVIEW):
        rows_r = Proposal.objects.filter(workspace=workspace, reviewed_at__isnull=False).select_related(
            "project", "reviewer"
        )
        if actor:
            rows_r = rows_r.filter(reviewer__username__icontains=actor)
        if before:
            rows_r = rows_r.filter(reviewed_at__lt=before)
        entries += [
            Entry(
                p.reviewed_at,
                "review",
                labels["review"],
                p.reviewer.username if p.reviewer else "(deleted user)",
                f"{p.project.slug} #{p.seq}",
                f"{p.get_status_display()}" + (f": {p.review_note}" if p.review_note else ""),
                link_seq=p.seq,
            )
            for p in rows_r.order_by("-reviewed_at")[:limit]
            if p.reviewed_at is not None
        ]
    if action not in DERIVED_ACTIONS:
        rows_e = AuditEvent.objects.filter(workspace=workspace).exclude(action__in=DERIVED_ACTIONS)
        if action:
            rows_e = rows_e.filter(action=action)
        if actor:
            rows_e = rows_e.filter(actor__icontains=actor)
        if before:
            rows_e = rows_e.filter(at__lt=before)
        entries += [
            Entry(
                e.at,
                e.action,
                labels.get(e.action, e.action),
                e.actor,
                e.target,
                _describe(e.detail),
                link_ref=e.target if e.action == AuditEvent.Action.OWNER_EDIT else None,
                link_connection=e.connection_id
                if e.action in (AuditEvent.Action.TOKEN_ISSUED, AuditEvent.Action.TOKEN_REVOKED)
                else None,
            )
            for e in rows_e.order_by("-at", "-id")[:limit]
        ]
    return entries


def audit_timeline(
    workspace: Workspace,
    *,
    action: str = "",
    actor: str = "",
    before: datetime | None = None,
    limit: int = 50,
) -> list[Entry]:
    """The newest `limit` entries of every kind before `before`, newest first (one query a source)."""
    entries = _events(workspace, action, actor.strip(), before, limit)
    return sorted(entries, key=lambda e: e.at, reverse=True)[:limit]
