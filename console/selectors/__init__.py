"""Reads for the owner console. Every function takes the workspace the member resolved through
`workspaces.selectors.workspace_for_user`, and every query is filtered by it."""

from console.selectors.audit import TIMELINE_ACTIONS, Entry, audit_timeline
from console.selectors.connections import connection_for_member, connections
from console.selectors.memory import fact_for_member, fact_history, fact_proposals, memory_items
from console.selectors.overview import Overview, ProjectSummary, overview
from console.selectors.review import (
    REVIEW_STATUSES,
    proposal_for_member,
    proposal_previous,
    proposal_target,
    proposals_for_member,
    proposals_related,
    review_queue,
    review_zones,
    target_is_current,
    target_successor,
)
from console.selectors.workspace import (
    pending_review_count,
    project_for_member,
    project_slugs,
    zone_for_member,
    zones,
)

__all__ = [
    "REVIEW_STATUSES",
    "TIMELINE_ACTIONS",
    "Entry",
    "Overview",
    "ProjectSummary",
    "audit_timeline",
    "connection_for_member",
    "connections",
    "fact_for_member",
    "fact_history",
    "fact_proposals",
    "memory_items",
    "overview",
    "pending_review_count",
    "project_for_member",
    "project_slugs",
    "proposal_for_member",
    "proposal_previous",
    "proposal_target",
    "proposals_for_member",
    "proposals_related",
    "review_queue",
    "review_zones",
    "target_is_current",
    "target_successor",
    "zone_for_member",
    "zones",
]
