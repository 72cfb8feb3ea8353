"""Reads of tenancy and credentials. Every agent-facing read is scoped here.

A presented credential becomes an `AgentScope` (`agent_scope`), once per request.
`project_catalogue` and `project_for_agent` are the only ways an agent reaches a Project: both
start from the scope's workspace, so no argument can name another tenant's objects.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, NamedTuple, cast

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import Model, QuerySet

from workspaces import tokens
from workspaces.exceptions import ForbiddenScope, NotFound, UnknownProject
from workspaces.models import Connection, DataClass, Membership, Project, Workspace
from workspaces.oauth import oauth_grant_for_token
from workspaces.prepared import Prepared, PreparedObjects
from workspaces.scope import AgentScope, project_condition
from workspaces.scopes import scopes_for_role


def connection_for_token(raw: str, *, now: datetime | None = None) -> Connection | None:
    """The usable Connection a presented personal token belongs to, or None.

    One indexed lookup by digest; revocation and expiry are read from the row on every call, so
    a revoked credential is refused as soon as the revocation commits.
    """
    if not tokens.looks_like_personal_token(raw):
        return None
    found = _token_connection.objects(tokens.digest(raw))
    connection = found[0] if found else None
    if not isinstance(connection, Connection) or not connection.is_usable(now):
        return None
    return connection


# Every MCP call authenticates and names its project: both reads are compiled once per process
# (workspaces.prepared); compiling them cost the ORM ten times what SQLite took to answer.
_token_connection = PreparedObjects(
    lambda digest: Connection.objects.select_related("workspace", "zone").filter(
        token_digest=digest, kind=Connection.Kind.TOKEN
    )[:1]
)
_project_by_slug = PreparedObjects(
    lambda workspace_id, slug: Project.objects.filter(workspace_id=workspace_id, slug=slug)[:1]
)


class BearerMatch(NamedTuple):
    """A presented credential's Connection, the resource it was issued for, its scopes, and the
    moment it stops being valid (its connection's expiry, or an OAuth token's own if sooner)."""

    connection: Connection
    resource: str
    scopes: frozenset[str]
    valid_until: datetime

    def scope(self) -> AgentScope:
        """The authority this credential carries (resolved from the database, here and now)."""
        return agent_scope(self.connection, grants=self.scopes)


def connection_for_bearer(raw: str) -> BearerMatch | None:
    """The usable Connection behind any bearer credential, with its resource and scopes.

    Personal tokens are ours, always for the MCP resource, with the scopes of their role; anything
    else may be an OAuth access token, whose bound resource the caller must check and whose scopes
    are the token's narrowed to the role.
    """
    if len(raw) > 4096:
        return None
    if tokens.looks_like_personal_token(raw):
        connection = connection_for_token(raw)
        if connection is None:
            return None
        return BearerMatch(
            connection, settings.MCP_RESOURCE_URL, scopes_for_role(connection.role), connection.expires_at
        )
    grant = oauth_grant_for_token(raw)
    if grant is None:
        return None
    valid_until = min(grant.connection.expires_at, grant.expires)
    return BearerMatch(grant.connection, grant.resource, grant.scopes, valid_until)


def allowed_data_classes(connection: Connection) -> tuple[str, ...]:
    """The credential's data classes, never `restricted`, in rank order."""
    granted = set(connection.data_classes)
    return tuple(c for c in DataClass.grantable() if c in granted)


def agent_scope(connection: Connection, *, grants: frozenset[str] | None = None) -> AgentScope:
    """The authority a Connection carries, as one value (see workspaces.scope).

    `grants` are the OAuth scopes of the presented credential; by default its role's. A
    credential limited to a list of projects costs one query for the list (none when
    `projects` was prefetched); one for every project costs none.
    """
    project_ids: frozenset[int] | None = None
    if not connection.all_projects:
        if "projects" in getattr(connection, "_prefetched_objects_cache", {}):
            project_ids = frozenset(p.pk for p in connection.projects.all())
        else:
            project_ids = frozenset(connection.projects.values_list("pk", flat=True))
    return _scope(connection, project_ids, grants)


def _scope(
    connection: Connection, project_ids: frozenset[int] | None, grants: frozenset[str] | None
) -> AgentScope:
    return AgentScope(
        workspace_id=connection.workspace_id,
        connection_id=connection.pk,
        actor=connection.actor,
        zone=connection.zone.name,
        trust=connection.zone.trust,
        role=connection.role,
        data_classes=allowed_data_classes(connection),
        project_ids=project_ids,
        grants=scopes_for_role(connection.role)
        if grants is None
        else grants & scopes_for_role(connection.role),
        expires_at=connection.expires_at,
        revoked=connection.revoked_at is not None,
    )


def agent_scopes(connection_ids: Iterable[int]) -> dict[int, AgentScope]:
    """The scopes of several connections (the consolidator's batch): one query, and one more for
    the project lists of those limited to some, both compiled once per process."""
    connections = cast(list[Connection], _connections_by_pk.objects(sorted(set(connection_ids))))
    limited: dict[int, set[int]] = {c.pk: set() for c in connections if not c.all_projects}
    for connection_id, project_id in _connection_projects.rows(sorted(limited)):
        limited[connection_id].add(project_id)
    return {c.pk: _scope(c, frozenset(limited[c.pk]) if c.pk in limited else None, None) for c in connections}


_connections_by_pk = PreparedObjects(
    lambda connection_ids: Connection.objects.filter(pk__in=connection_ids).select_related("zone")
)
_connection_projects = Prepared(
    lambda connection_ids: Connection.projects.through.objects.filter(
        connection_id__in=connection_ids
    ).values_list("connection_id", "project_id")
)


def project_catalogue(scope: AgentScope) -> QuerySet[Project]:
    """Projects this credential may select: its workspace, its list, its data classes."""
    return Project.objects.filter(scope.project_filter()).order_by("slug")


class CatalogueEntry(NamedTuple):
    slug: str
    name: str
    data_class: str
    updated_at: datetime


def _catalogue_query(
    workspace_id: int, classes: list[str], project_ids: list[int] | None = None
) -> QuerySet[Project, tuple[Any, ...]]:
    return (
        Project.objects.filter(project_condition(workspace_id, classes, project_ids))
        .order_by("slug")
        .values_list(*CatalogueEntry._fields)
    )


# list_projects on every agent's first call: `project_catalogue`, compiled once per process and
# shape (with and without a project list).
_CATALOGUE = Prepared(_catalogue_query)


def project_catalogue_entries(scope: AgentScope) -> list[CatalogueEntry]:
    """`project_catalogue` as (slug, name, data_class, updated_at), the same rows in the same order."""
    classes = list(scope.visible_classes)
    if scope.project_ids is None:
        rows = _CATALOGUE.rows(scope.workspace_id, classes)
    else:
        rows = _CATALOGUE.rows(scope.workspace_id, classes, sorted(scope.project_ids))
    return [CatalogueEntry(*row) for row in rows]


def project_for_agent(scope: AgentScope, project_id: str) -> Project:
    """Resolve an agent-supplied project id inside the credential's workspace.

    `UnknownProject` when the workspace has no such project; `ForbiddenScope` when it exists but
    is outside the credential's catalogue or data classes (restricted projects included).
    """
    found = _project_by_slug.objects(scope.workspace_id, project_id)
    return project_in_scope(scope, project_id, found[0] if found else None)


def project_in_scope(scope: AgentScope, project_id: str, found: Model | None) -> Project:
    """The project the credential's workspace holds under the agent-supplied id (`found`, read by
    the caller in that workspace), if the credential may see it: `project_for_agent`'s answer."""
    if not isinstance(found, Project):
        raise UnknownProject(f"No project {project_id!r} exists in this workspace.")
    if not scope.sees_project(
        workspace_id=found.workspace_id, project_id=found.pk, data_class=found.data_class
    ):
        raise ForbiddenScope(f"Project {project_id!r} is not in this credential's catalogue.")
    return found


def last_used_is_stale(connection: Connection, now: datetime) -> bool:
    resolution = settings.UNFORGETTER["LAST_USED_RESOLUTION"]
    return connection.last_used_at is None or now - connection.last_used_at >= resolution


def workspaces_for_user(user: User) -> QuerySet[Workspace]:
    return Workspace.objects.filter(memberships__user=user).distinct()


def workspace_for_user(user: User, slug: str) -> Workspace:
    """A workspace the user is a member of; anything else is NotFound, never 'forbidden'."""
    workspace = workspaces_for_user(user).filter(slug=slug).first()
    if workspace is None:
        raise NotFound("No such workspace.")
    return workspace


def membership_for(user: User, workspace: Workspace) -> Membership | None:
    return Membership.objects.filter(user=user, workspace=workspace).first()


def credential_refused(connection: Connection) -> bool:
    """Whether the MCP verifier now refuses this credential, read from the database as it reads it.

    The verifier (`connection_for_bearer`) looks the row up on every request and accepts it only
    if it is usable (not revoked, not expired). The console never holds the raw token, so this
    re-reads the same row by its digest (or, for an OAuth grant, by its id) under the same rule.
    """
    rows = Connection.objects.filter(pk=connection.pk)
    if connection.kind == Connection.Kind.TOKEN:
        rows = Connection.objects.filter(token_digest=connection.token_digest, kind=Connection.Kind.TOKEN)
    return not rows.usable().exists()
