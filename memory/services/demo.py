"""The demo workspace of `manage.py bootstrap_demo`: idempotent, so `make run` can call it every time."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.db import transaction

from memory.demo import DEMO_ITEMS, DEMO_PROJECTS
from memory.models import Fact
from memory.services.facts import fact_create
from memory.services.tenancy import workspace_open
from workspaces.models import Connection, DataClass, Project, Workspace
from workspaces.selectors import connection_for_token
from workspaces.services import membership_add, owner_account_ensure, project_create, token_issue

DEMO_WORKSPACE = "demo"
DEMO_USER = "owner"


@dataclass(frozen=True)
class DemoAccess:
    workspace: Workspace
    username: str
    password: str
    token: str


@transaction.atomic
def demo_bootstrap(*, password: str | None = None, token: str | None = None) -> DemoAccess:
    """The demo owner, workspace, projects, memory and a contributor token, created once.

    `password` and `token` are what an earlier run handed out: kept if still valid, so the
    console login and the agent's token survive restarts.
    """
    password = password or secrets.token_urlsafe(12)
    owner = owner_account_ensure(username=DEMO_USER, email="owner@example.com", password=password)
    workspace = Workspace.objects.filter(slug=DEMO_WORKSPACE).first()
    if workspace is None:
        workspace = workspace_open(slug=DEMO_WORKSPACE, name="Acme platform team", owner=owner)
    membership_add(workspace=workspace, user=owner)
    projects = {p.slug: p for p in Project.objects.filter(workspace=workspace)}
    for slug, name, data_class, description in DEMO_PROJECTS:
        if slug not in projects:
            projects[slug] = project_create(
                workspace=workspace, slug=slug, name=name, data_class=data_class, description=description
            )
    if not Fact.objects.filter(workspace=workspace).exists():
        for project_slug, kind, text, source, actor, item_class in DEMO_ITEMS:
            fact_create(
                project=projects[project_slug],
                kind=kind,
                text=text,
                source=source,
                actor=actor,
                data_class=item_class,
            )
    existing = connection_for_token(token) if token else None
    if token is None or existing is None or existing.workspace_id != workspace.pk:
        token = token_issue(
            workspace=workspace,
            actor="demo-agent",
            zone="claude",
            role=Connection.Role.CONTRIBUTOR,
            data_classes=[DataClass.PUBLIC, DataClass.INTERNAL],
            label="bootstrap_demo",
        ).token
    return DemoAccess(workspace=workspace, username=DEMO_USER, password=password, token=token)
