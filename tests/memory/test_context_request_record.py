"""The record of a compiled bundle: written once per context id, and never at a caller's expense."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from memory.models import ContextRequest
from memory.services import context_request_record
from tests.conftest import Tenant
from workspaces.selectors import agent_scope, project_for_agent

pytestmark = pytest.mark.django_db(transaction=True)


def _record(tenant: Tenant, context_id: str) -> None:
    _, issued = tenant.issue(actor="claude@tests")
    scope = agent_scope(issued)
    context_request_record(
        context_id=context_id,
        scope=scope,
        project=project_for_agent(scope, "platform"),
        task="Change the retry policy of invoice-worker",
        publication_version=3,
        refs=["fact_a", "fact_b"],
    )


def _synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return str(cursor.fetchone()[0])


def test_a_bundle_is_recorded_once_with_what_it_served(tenant: Tenant) -> None:
    _record(tenant, "ctx_once")
    _record(tenant, "ctx_once")
    (row,) = ContextRequest.objects.filter(context_id="ctx_once")
    assert (row.actor, row.publication_version, row.refs) == ("claude@tests", 3, ["fact_a", "fact_b"])
    assert row.project.slug == "platform"


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's commit setting")
def test_the_record_alone_commits_without_waiting_for_its_flush_and_changes_nothing_else(
    tenant: Tenant,
) -> None:
    with CaptureQueriesContext(connection) as alone:
        _record(tenant, "ctx_alone")
    assert ContextRequest.objects.filter(context_id="ctx_alone").exists()
    # One statement, which turns the flush off for its own transaction only.
    (statement,) = [q["sql"] for q in alone.captured_queries if "memory_contextrequest" in q["sql"]]
    assert "set_config('synchronous_commit', 'off', true)" in statement
    assert _synchronous_commit() == "on"
    with transaction.atomic(), CaptureQueriesContext(connection) as enclosed:
        _record(tenant, "ctx_enclosed")
        # Inside a caller's transaction the record is part of it, as durable as the caller's work.
        assert _synchronous_commit() == "on"
    assert not any("set_config" in q["sql"] for q in enclosed.captured_queries)
    assert ContextRequest.objects.filter(context_id="ctx_enclosed").exists()
