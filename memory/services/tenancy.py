"""A workspace's whole life, across the apps: opened with its first publication, erased with its memory.

`workspaces` owns the tenancy rows and knows nothing of memory; opening and erasing a workspace
touch both, so they live here, one layer up.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from memory.models import Fact
from memory.services.publishing import publication_bootstrap
from workspaces.models import Workspace, WorkspaceDeletion
from workspaces.services import workspace_create, workspace_delete


@transaction.atomic
def workspace_open(*, slug: str, name: str = "", owner: User | None = None) -> Workspace:
    """Create a workspace (default zones, optional owner) with its first, empty publication."""
    workspace = workspace_create(slug=slug, name=name, owner=owner)
    publication_bootstrap(workspace=workspace)
    return workspace


@transaction.atomic
def workspace_erase(
    *, workspace: Workspace, confirm: str, deleted_by: User | None = None
) -> WorkspaceDeletion:
    """Delete a workspace and everything in it: memory, proposals, credentials, audit.

    Served paths stop at once: credentials and items are gone from the database, and compiled
    bundles are keyed by credentials that no longer authenticate. `confirm` must repeat the slug.
    Returns the deletion receipt (what was removed; when the server's exports of it are purged).
    """
    # Supersession links are PROTECT (history must not vanish one row at a time); a whole
    # workspace goes at once, so they are unlinked first.
    if confirm == workspace.slug:
        Fact.objects.filter(workspace=workspace).update(supersedes=None)
    return workspace_delete(workspace=workspace, confirm=confirm, deleted_by=deleted_by)
