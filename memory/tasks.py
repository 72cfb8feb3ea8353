"""Celery tasks of the write path. Each takes ids, calls one service and is safe to run twice."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from memory.dispatch import CONSOLIDATE_TASK
from memory.services import consolidation_run, publication_heartbeat, workspaces_pending
from memory.services.embeddings import embeddings_refresh

# Items embedded per beat tick at most: about a second of the local model's CPU time each.
EMBED_PER_TICK = 64


@shared_task(name=CONSOLIDATE_TASK, acks_late=True, ignore_result=True)
def consolidate_workspace(workspace_id: int) -> dict[str, Any]:
    """Consolidate a workspace's pending proposals; a no-op if another worker holds it."""
    return consolidation_run(workspace_id=workspace_id).as_dict()


@shared_task(name="memory.publish_heartbeat", ignore_result=True)
def publish_heartbeat() -> int:
    """Beat's tick: publish the heartbeats due, and sweep up any workspace whose nudge was lost."""
    for workspace_id in workspaces_pending():
        consolidate_workspace.delay(workspace_id)
    return publication_heartbeat()


@shared_task(name="memory.embed_pending", ignore_result=True)
def embed_pending() -> int:
    """Beat's tick for vectors: embed a bounded batch of items without one (broker deployments;
    the embedded worker does the same each cycle)."""
    return embeddings_refresh(limit=EMBED_PER_TICK).embedded
