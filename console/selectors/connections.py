"""Connections of a workspace, as its members see them."""

from __future__ import annotations

from django.db.models import QuerySet

from workspaces.exceptions import NotFound
from workspaces.models import Connection, Workspace


def connections(workspace: Workspace) -> QuerySet[Connection]:
    return (
        Connection.objects.filter(workspace=workspace)
        .select_related("zone", "created_by", "oauth_application")
        .prefetch_related("projects")
        .order_by("revoked_at", "-created_at")
    )


def connection_for_member(workspace: Workspace, pk: int) -> Connection:
    connection = (
        Connection.objects.filter(workspace=workspace, pk=pk)
        .select_related("zone", "created_by", "oauth_application")
        .prefetch_related("projects")
        .first()
    )
    if connection is None:
        raise NotFound("No such connection.")
    return connection
