"""Publication cycles and the record of compiled context bundles."""

from __future__ import annotations

from django.db import transaction

from memory.models import ContextRequest, Publication
from workspaces.models import Connection, Project, Workspace


def publication_bootstrap(*, workspace: Workspace) -> Publication:
    """The first publication of a new workspace: version 1, nothing published yet."""
    publication, _ = Publication.objects.get_or_create(workspace=workspace, version=1)
    return publication


@transaction.atomic
def publication_record(
    *, workspace: Workspace, published_count: int = 0, changed: bool = False
) -> Publication:
    """Record one publish cycle; a heartbeat when nothing changed.

    The version is bumped under the workspace row's lock so concurrent cycles never collide.
    """
    Workspace.objects.select_for_update().filter(pk=workspace.pk).values_list("pk", flat=True).get()
    latest = (
        Publication.objects.filter(workspace=workspace).order_by("-version").values_list("version", flat=True)
    )
    version = (latest.first() or 0) + 1
    return Publication.objects.create(
        workspace=workspace, version=version, published_count=published_count, changed=changed
    )


def context_request_record(
    *,
    context_id: str,
    connection: Connection,
    project: Project,
    task: str,
    publication_version: int,
    refs: list[str],
) -> None:
    """Record a compiled bundle once per context_id (a replay in another process is a no-op).

    One `INSERT ... ON CONFLICT DO NOTHING`: no savepoint, and a concurrent first compile of the
    same bundle elsewhere is simply kept.
    """
    ContextRequest.objects.bulk_create(
        [
            ContextRequest(
                context_id=context_id,
                workspace_id=connection.workspace_id,
                project=project,
                connection=connection,
                actor=connection.actor,
                task=task[:500],
                publication_version=publication_version,
                refs=refs,
            )
        ],
        ignore_conflicts=True,
    )
