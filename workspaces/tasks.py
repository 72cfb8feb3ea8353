"""Celery tasks of the workspaces app."""

from __future__ import annotations

from celery import shared_task

from workspaces.oauth import oauth_clients_prune
from workspaces.services import workspace_deletions_purge


@shared_task(name="workspaces.prune_oauth_clients", ignore_result=True)
def prune_oauth_clients() -> int:
    """Daily: delete self-registered OAuth clients nobody ever consented to."""
    return oauth_clients_prune()


@shared_task(name="workspaces.purge_deleted_workspaces", ignore_result=True)
def purge_deleted_workspaces() -> int:
    """Hourly: purge the exports deleted workspaces left, once their retention window has passed."""
    return workspace_deletions_purge()
