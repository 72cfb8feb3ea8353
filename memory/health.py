"""What readiness and the metrics read: the database, the broker and the consolidator's lag.

Each check is cheap (one indexed query, one broker connection with a one-second timeout) and
says what is wrong in words an operator can act on; nothing here names a tenant.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import connection
from django.db.models import Count, Min
from django.utils import timezone

from memory.models import Proposal


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def database_check() -> Check:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception:
        return Check("database", False, "unreachable")
    return Check("database", True, "ok")


def broker_check() -> Check:
    """The broker answers (none configured: the embedded consolidator, nothing to check)."""
    if not settings.CELERY_BROKER_URL:
        return Check("broker", True, "none (embedded consolidator)")
    from celery import current_app  # noqa: PLC0415 - loaded only with a broker (unforgetter.settings)

    try:
        with current_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=1)
    except Exception:
        return Check("broker", False, "unreachable")
    return Check("broker", True, "ok")


def consolidation_lag_seconds(now: datetime | None = None) -> float:
    """Seconds the oldest pending (queued or quarantined, not yet decided) proposal has waited."""
    oldest = Proposal.objects.filter(status__in=Proposal.Status.pending()).aggregate(at=Min("created_at"))[
        "at"
    ]
    if oldest is None:
        return 0.0
    waited: float = ((now or timezone.now()) - oldest).total_seconds()
    return max(waited, 0.0)


def lag_check() -> Check:
    limit = settings.UNFORGETTER["READY_MAX_LAG_SECONDS"]
    try:
        lag = consolidation_lag_seconds()
    except Exception:
        return Check("consolidator", False, "lag unknown: the database is unreachable")
    if lag > limit:
        return Check(
            "consolidator", False, f"lagging: the oldest pending proposal waited {lag:.0f} s (> {limit} s)"
        )
    return Check("consolidator", True, f"lag {lag:.1f} s")


def readiness() -> list[Check]:
    return [database_check(), broker_check(), lag_check()]


def proposals_by_status() -> dict[str, int]:
    rows = Proposal.objects.values("status").annotate(n=Count("id")).order_by()
    counts = dict.fromkeys(Proposal.Status.values, 0)
    counts.update({row["status"]: row["n"] for row in rows})
    return counts
