"""agent_scopes: the consolidator's batch of credentials, each as agent_scope resolves it alone."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from tests.conftest import Tenant
from workspaces.models import Connection
from workspaces.selectors import agent_scope, agent_scopes

pytestmark = pytest.mark.django_db


def test_each_scope_of_a_batch_is_the_one_its_connection_has_alone(
    tenant: Tenant, django_assert_num_queries: Any
) -> None:
    _, everywhere = tenant.issue(actor="everywhere@tests")
    _, two = tenant.issue(actor="two@tests", projects=["platform", "handbook"])
    _, one = tenant.issue(actor="one@tests", projects=["incidents"])
    _, revoked = tenant.issue(actor="revoked@tests", projects=["platform"])
    Connection.objects.filter(pk=revoked.pk).update(revoked_at=timezone.now())
    connections = [everywhere, two, one, revoked]
    alone = {c.pk: agent_scope(Connection.objects.get(pk=c.pk)) for c in connections}
    with django_assert_num_queries(2):  # the connections, then the lists of those limited to some
        assert agent_scopes([c.pk for c in [*connections, everywhere]]) == alone
    assert alone[two.pk].project_ids == frozenset(
        {tenant.projects["platform"].pk, tenant.projects["handbook"].pk}
    )


def test_a_batch_of_credentials_for_every_project_reads_no_project_lists(
    tenant: Tenant, django_assert_num_queries: Any
) -> None:
    _, first = tenant.issue(actor="first@tests")
    _, second = tenant.issue(actor="second@tests")
    with django_assert_num_queries(1):
        scopes = agent_scopes([first.pk, second.pk])
    assert scopes == {c.pk: agent_scope(c) for c in (first, second)}
    assert agent_scopes([]) == {}
