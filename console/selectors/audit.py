"""The audit timeline: recorded events and those derived from proposals and bundles."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils.dateparse import parse_datetime

from memory.models import ContextRequest, Proposal
from workspaces.models import AuditEvent, Workspace

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
