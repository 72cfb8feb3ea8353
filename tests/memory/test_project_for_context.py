"""get_context reads its project and the workspace's newest publication in one statement."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.models import Publication
from memory.selectors import latest_publication, project_for_context
from memory.services import publication_record
from tests.conftest import Tenant
from workspaces.exceptions import UnknownProject
from workspaces.selectors import agent_scope

pytestmark = pytest.mark.django_db


def test_the_project_comes_with_its_workspaces_newest_publication(
    tenant: Tenant, other_tenant: Tenant
) -> None:
    scope = agent_scope(tenant.issue()[1])
    tenant.workspace.publish_cadence = timedelta(minutes=7)
    tenant.workspace.save(update_fields=["publish_cadence"])
    Publication.objects.filter(workspace=tenant.workspace).delete()
    assert project_for_context(scope, "platform") == (tenant.projects["platform"], None)

    publication_record(workspace=tenant.workspace, changed=True)
    publication_record(workspace=tenant.workspace, changed=False)  # a heartbeat
    publication_record(workspace=other_tenant.workspace, changed=True)
    with CaptureQueriesContext(connection) as queries:
        project, publication = project_for_context(scope, "platform")

    assert len(queries) == 1
    assert project == tenant.projects["platform"]
    assert project.name == tenant.projects["platform"].name
    assert publication == latest_publication(tenant.workspace.pk)
    assert publication is not None
    assert publication.publish_cadence == timedelta(minutes=7)
    assert publication.content_version == publication.version - 1  # the heartbeat kept the content's


def test_a_project_of_another_workspace_is_unknown_here(tenant: Tenant, other_tenant: Tenant) -> None:
    publication_record(workspace=other_tenant.workspace, changed=True)
    scope = agent_scope(tenant.issue()[1])
    other = other_tenant.projects["platform"]
    other.slug = "theirs"
    other.save(update_fields=["slug"])
    with pytest.raises(UnknownProject):
        project_for_context(scope, "theirs")
