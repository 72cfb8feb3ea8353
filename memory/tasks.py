"""Celery tasks of the write path. Each takes ids, calls one service and is safe to run twice."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from memory.dispatch import CONSOLIDATE_TASK
from memory.services import consolidation_run, publication_heartbeat, workspaces_pending


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
