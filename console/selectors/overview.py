"""The overview page: projects with counts of current items by kind, the backlogs, freshness."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, Q

from console.selectors.review import REVIEW_STATUSES
from memory.models import Fact, Kind, Proposal, Publication, State
from workspaces.models import Connection, Project, Workspace


@dataclass
class ProjectSummary:
    project: Project
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def by_kind(self) -> list[int]:
        """Counts in `Kind` order, zeros included, for a table row."""
        return [self.counts.get(kind, 0) for kind in Kind.values]

    @property
    def nonzero(self) -> list[tuple[str, int]]:
        return [(kind, n) for kind in Kind.values if (n := self.counts.get(kind, 0))]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass
class Overview:
    projects: list[ProjectSummary]
    kinds: list[str]
    pending_review: int
    backlog: int
    publication: Publication | None
    last_change: Publication | None
    usable_connections: int


def overview(workspace: Workspace) -> Overview:
    """Projects with counts of current items by kind, the review and consolidation backlog, freshness.

    A fixed number of aggregate queries, whatever the size of the workspace.
    """
    projects = list(Project.objects.filter(workspace=workspace).order_by("slug"))
    summaries = {p.pk: ProjectSummary(project=p) for p in projects}
    rows = (
        Fact.objects.filter(workspace=workspace, state__in=State.current())
        .values_list("project_id", "kind")
        .annotate(n=Count("id"))
        .order_by()
    )
    for project_id, kind, n in rows:
        summaries[project_id].counts[kind] = n
    # Only the held and pending statuses are read: the (workspace, status, seq) index serves it.
    pending = Proposal.objects.filter(
        workspace=workspace, status__in=[*REVIEW_STATUSES, Proposal.Status.QUEUED]
    ).aggregate(
        review=Count("id", filter=Q(status__in=REVIEW_STATUSES)),
        backlog=Count("id", filter=Q(status__in=Proposal.Status.pending())),
    )
    publications = list(Publication.objects.filter(workspace=workspace).order_by("-version")[:1])
    last_change = Publication.objects.filter(workspace=workspace, changed=True).order_by("-version").first()
    usable = Connection.objects.filter(workspace=workspace).usable().count()
    return Overview(
        projects=list(summaries.values()),
        kinds=list(Kind.values),
        pending_review=pending["review"],
        backlog=pending["backlog"],
        publication=publications[0] if publications else None,
        last_change=last_change,
        usable_connections=usable,
    )
