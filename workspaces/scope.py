"""What an agent credential may see and do: one value, resolved once per request, passed down.

`AgentScope` is the credential's authority as data: its workspace, actor and trust zone, its role
and OAuth grants, the data classes it may see (never `restricted`) and its projects (or every
project of those classes). Every agent-facing read and write decides visibility through its
predicates, so a change to scoping is made here and nowhere else; `workspaces.selectors` resolves
it from a Connection (`agent_scope`) and turns it into querysets.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q

from workspaces.models import DataClass, TrustZone
from workspaces.scopes import SCOPE_PROPOSE, SCOPE_READ


@dataclass(frozen=True, slots=True)
class AgentScope:
    workspace_id: int
    connection_id: int
    actor: str
    zone: str
    trust: str
    role: str
    # Rank order, only grantable classes: `restricted` can never be in it.
    data_classes: tuple[str, ...]
    # None: every project whose data class is allowed, including future ones.
    project_ids: frozenset[int] | None
    # The OAuth scopes the request's credential carries (a personal token: its role's).
    grants: frozenset[str]
    expires_at: datetime
    revoked: bool = False

    # --- the credential ------------------------------------------------------------------------

    def usable(self, now: datetime) -> bool:
        return not self.revoked and self.expires_at > now

    @property
    def is_low_trust(self) -> bool:
        return self.trust == TrustZone.Trust.LOW

    @property
    def can_read(self) -> bool:
        return SCOPE_READ in self.grants

    @property
    def can_propose(self) -> bool:
        """Contributor role and the memory:propose grant (an OAuth consent may withhold it)."""
        return SCOPE_PROPOSE in self.grants

    # --- what it may see -----------------------------------------------------------------------
    # Each rule is written once, as a predicate and, beside it, as the SQL filter that applies it
    # to a queryset; raw SQL takes `visible_classes` as its parameter.

    @property
    def visible_classes(self) -> tuple[str, ...]:
        """The data classes this credential sees, in rank order; never `restricted`."""
        return tuple(c for c in self.data_classes if c != DataClass.RESTRICTED)

    def sees_data_class(self, data_class: str) -> bool:
        return data_class in self.visible_classes

    def lists_project(self, project_id: int) -> bool:
        """Whether the project is on the credential's list (or the list is every project)."""
        return self.project_ids is None or project_id in self.project_ids

    def sees_project(self, *, workspace_id: int, project_id: int, data_class: str) -> bool:
        """A project is visible in the credential's workspace, on its list, of an allowed class."""
        return (
            workspace_id == self.workspace_id
            and self.sees_data_class(data_class)
            and self.lists_project(project_id)
        )

    def project_filter(self) -> Q:
        """`sees_project` as a filter on Project rows."""
        return project_condition(self.workspace_id, self.visible_classes, self.project_ids)

    def sees_item(self, *, workspace_id: int, project_id: int, data_class: str) -> bool:
        """An item is visible in a visible project when its own data class is allowed too.

        The project's class is checked when the project is resolved (`project_for_agent`); an
        item may carry a class of its own, stricter than its project's.
        """
        return (
            workspace_id == self.workspace_id
            and self.lists_project(project_id)
            and self.sees_data_class(data_class)
        )

    def item_filter(self) -> Q:
        """`sees_item` as a filter on memory item rows."""
        return item_condition(self.workspace_id, self.visible_classes, self.project_ids)

    def fingerprint(self) -> str:
        """Everything that decides what this credential may see, for cache keys bound to it."""
        projects = "*" if self.project_ids is None else ",".join(map(str, sorted(self.project_ids)))
        return f"{self.workspace_id}:{self.connection_id}:{','.join(self.data_classes)}:{projects}"


def item_condition(workspace_id: int, visible_classes: Iterable[str], project_ids: Iterable[int] | None) -> Q:
    """`AgentScope.item_filter` from its parts, for queries compiled once (workspaces.prepared)."""
    condition = Q(workspace_id=workspace_id, data_class__in=visible_classes)
    if project_ids is not None:
        condition &= Q(project_id__in=project_ids)
    return condition


def project_condition(
    workspace_id: int, visible_classes: Iterable[str], project_ids: Iterable[int] | None
) -> Q:
    """`AgentScope.project_filter` from its parts, for queries compiled once (workspaces.prepared)."""
    condition = Q(workspace_id=workspace_id, data_class__in=visible_classes)
    if project_ids is not None:
        condition &= Q(pk__in=project_ids)
    return condition
