"""Publication cycles and the record of compiled context bundles."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import connections, transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from memory.models import ContextRequest, Publication
from memory.services.proposals import ledger_head, workspace_lock
from workspaces.models import Project, Workspace
from workspaces.prepared import Prepared, PreparedInsert
from workspaces.scope import AgentScope
from workspaces.write_behind import WriteBehind

# Heartbeat publications (nothing changed) older than this are pruned; changed ones are kept.
HEARTBEAT_RETENTION = timedelta(days=1)


def publication_bootstrap(*, workspace: Workspace) -> Publication:
    """The first publication of a new workspace: version 1, nothing published yet."""
    publication, _ = Publication.objects.get_or_create(
        workspace=workspace, version=1, defaults={"content_version": 1}
    )
    return publication


# savepoint=False: every caller's transaction ends with this, and none catches its errors; a
# savepoint would cost two more round trips on every batch the consolidator publishes.
@transaction.atomic(savepoint=False)
def publication_record(
    *, workspace: Workspace, published_count: int = 0, changed: bool = False
) -> Publication:
    """Record one publish cycle; a heartbeat when nothing changed.

    The version is bumped under the workspace row's lock so concurrent cycles never collide.
    `content_version` is the version of the last publication that changed memory: compiled bundles
    are keyed by it, so a change invalidates them everywhere and a heartbeat does not. The ledger's
    head at this moment is recorded too, so `verify_ledger` can tell when newest proposals vanish.
    """
    if not workspace_lock.rows(workspace.pk):
        raise Workspace.DoesNotExist("The workspace was deleted.")
    latest = _latest_publication.rows(workspace.pk)
    version = (latest[0][0] if latest else 0) + 1
    content_version = version if changed or not latest else (latest[0][1] or latest[0][0])
    head = ledger_head.rows(workspace.pk)
    publication = Publication(
        workspace=workspace,
        version=version,
        published_count=published_count,
        changed=changed,
        content_version=content_version,
        ledger_seq=head[0][0] if head else 0,
        ledger_head=head[0][1] if head else "",
    )
    _publication_insert.insert([publication])
    return publication


# Every batch the consolidator publishes runs these: compiled once per process (workspaces.prepared).
_latest_publication = Prepared(
    lambda workspace_id: (
        Publication.objects.filter(workspace_id=workspace_id)
        .order_by("-version")
        .values_list("version", "content_version")[:1]
    )
)
_publication_insert = PreparedInsert(Publication)


def publication_heartbeat(*, now: datetime | None = None) -> int:
    """Publish a heartbeat in every workspace whose last publication is half its cadence old.

    Called more often than any cadence (see HEARTBEAT_TICK), so `compiled_at` never falls a full
    cadence behind while a consolidator runs, and bundles are stale only when none does.
    Returns how many workspaces were published.
    """
    now = now or timezone.now()
    published = 0
    # The newest publication per workspace, through the (workspace, version) unique index.
    last_compiled = (
        Publication.objects.filter(workspace=OuterRef("pk")).order_by("-version").values("compiled_at")
    )
    rows = Workspace.objects.annotate(last=Subquery(last_compiled[:1])).values_list(
        "pk", "publish_cadence", "last"
    )
    for pk, cadence, last in rows:
        if last is not None and now - last < cadence / 2:
            continue
        try:
            publication = publication_record(workspace=Workspace(pk=pk))
        except Workspace.DoesNotExist:
            continue  # deleted since the query above
        published += 1
        Publication.objects.filter(
            workspace_id=pk, changed=False, compiled_at__lt=now - HEARTBEAT_RETENTION
        ).exclude(pk=publication.pk).delete()
    return published


_context_request_insert = PreparedInsert(ContextRequest, ignore_conflicts=True)


def context_request_record(
    *,
    context_id: str,
    scope: AgentScope,
    project: Project,
    task: str,
    publication_version: int,
    refs: list[str],
) -> None:
    """Record a compiled bundle once per context_id (a replay in another process is a no-op).

    One `INSERT ... ON CONFLICT DO NOTHING`, its SQL built once per process: no savepoint, and a
    concurrent first compile of the same bundle elsewhere is simply kept.

    On PostgreSQL the record's own transaction commits without waiting for its WAL flush
    (`PreparedInsert.insert_unflushed`, one round trip): the flush took about 3 ms of every new
    bundle's time here, and the row records a read, not memory. Only a crash of the database
    server itself can lose the last fraction of a second of these rows (never a proposal, an
    item or a publication, whose commits still wait). Inside a caller's transaction the row is
    part of it, committed as durably as the rest of its work.

    Where the server answers first (`after_answer.deferring`: get_context on the direct path), the
    row is queued and written with the others of the next tenth of a second in one statement, on a
    thread of its own (workspaces.write_behind): a worker killed outright loses the rows of that
    last tenth of a second.
    """
    record = ContextRequest(
        context_id=context_id,
        workspace_id=scope.workspace_id,
        project=project,
        connection_id=scope.connection_id,
        actor=scope.actor,
        task=task[:500],
        publication_version=publication_version,
        refs=refs,
    )
    if connections[ContextRequest.objects.db].in_atomic_block:
        _context_request_insert.insert([record])
    else:
        _records_later.add(record)


# Where a server answers first (a call served on its direct path), the record is queued during
# the call and written with others a moment later (workspaces.write_behind), else at once.
_records_later: WriteBehind[ContextRequest] = WriteBehind(
    _context_request_insert.insert_unflushed, name="context-requests"
)
