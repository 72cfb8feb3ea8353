"""Shared plumbing of the operator's management commands: lookups that fail with a clear message."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.core.management.base import CommandError

from workspaces.exceptions import UnforgetterError
from workspaces.models import Project, Workspace

T = TypeVar("T")


def workspace_or_fail(slug: str) -> Workspace:
    workspace = Workspace.objects.filter(slug=slug).first()
    if workspace is None:
        raise CommandError(f"No workspace {slug!r}. Create it with: manage.py create_workspace {slug}")
    return workspace


def project_or_fail(workspace: Workspace, slug: str) -> Project:
    project = Project.objects.filter(workspace=workspace, slug=slug).first()
    if project is None:
        raise CommandError(
            f"No project {slug!r} in {workspace.slug}. "
            f"Create it with: manage.py create_project {workspace.slug} {slug}"
        )
    return project


def service_call(fn: Callable[..., T], **kwargs: object) -> T:
    """Run a service, turning its domain errors into CommandError (a message, no traceback)."""
    try:
        return fn(**kwargs)
    except UnforgetterError as exc:
        raise CommandError(exc.message) from None
