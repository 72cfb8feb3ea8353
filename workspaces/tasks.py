"""Celery tasks of the workspaces app."""

from __future__ import annotations

from celery import shared_task

from workspaces.oauth import oauth_clients_prune


@shared_task(name="workspaces.prune_oauth_clients", ignore_result=True)
def prune_oauth_clients() -> int:
    """Daily: delete self-registered OAuth clients nobody ever consented to."""
    return oauth_clients_prune()
