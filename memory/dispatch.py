"""Asking for consolidation: the one place the write path reaches the worker, by name only.

Services call `consolidation_enqueue` when a proposal commits. With a broker it sends the Celery
task by its registered name (so nothing here imports the task module); without one it nudges the
embedded consolidator of this process, which registers itself with `embedded_nudge_set`. A lost
nudge costs latency, never correctness: the heartbeat sweep and the embedded loop's idle cycle
find pending work by themselves.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings

CONSOLIDATE_TASK = "memory.consolidate_workspace"

_nudge: Callable[[], None] | None = None


def embedded_nudge_set(nudge: Callable[[], None] | None) -> None:
    """Register (or, with None, forget) the embedded consolidator's wake-up call."""
    global _nudge
    _nudge = nudge


def consolidation_enqueue(workspace_id: int) -> None:
    """Ask for a workspace to be consolidated soon: a Celery task, or a nudge to the embedded loop."""
    if settings.CELERY_BROKER_URL:
        # The Celery app configured with Django (unforgetter/celery.py) is the current app. Celery
        # is loaded only where a broker is configured (unforgetter.settings), so imported here.
        from celery import current_app  # noqa: PLC0415

        current_app.send_task(CONSOLIDATE_TASK, args=(workspace_id,), retry=False)
        return
    nudge = _nudge
    if nudge is not None:
        nudge()
