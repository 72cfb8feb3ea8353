"""The workspace's own lists the console's pages and forms are built from: projects and trust zones."""

from __future__ import annotations

from django.db.models import QuerySet

from console.selectors.review import REVIEW_STATUSES
from memory.models import Proposal
from workspaces.exceptions import NotFound
from workspaces.models import Project, TrustZone, Workspace


def project_slugs(workspace: Workspace) -> list[str]:
    return list(Project.objects.filter(workspace=workspace).order_by("slug").values_list("slug", flat=True))


def project_for_member(workspace: Workspace, slug: str) -> Project:
    project = Project.objects.filter(workspace=workspace, slug=slug).first()
    if project is None:
        raise NotFound("No such project.")
    return project


def zones(workspace: Workspace) -> QuerySet[TrustZone]:
    return TrustZone.objects.filter(workspace=workspace).order_by("name")


def zone_for_member(workspace: Workspace, pk: int) -> TrustZone:
    zone = TrustZone.objects.filter(workspace=workspace, pk=pk).first()
    if zone is None:
        raise NotFound("No such trust zone.")
    return zone


def pending_review_count(workspace: Workspace) -> int:
    """Held proposals: the badge on the Review link of every page."""
    return Proposal.objects.filter(workspace=workspace, status__in=REVIEW_STATUSES).count()
