"""Ranking rules of the context compiler and search that keep them fast at scale."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection

from memory import search
from memory.context import context_for_agent
from memory.selectors import search_for_agent
from tests.conftest import Tenant
from tests.readpath import _fresh_bundle_cache, add_item  # noqa: F401
from workspaces.selectors import agent_scope, project_for_agent

pytestmark = pytest.mark.django_db

postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="word statistics come from PostgreSQL's ANALYZE"
)


@pytest.fixture
def fresh_statistics(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Word statistics of this test's rows (a test table is far below the production minimum)."""
    monkeypatch.setattr(search, "COMMON_TERMS_MIN_ITEMS", 0)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_fact")
    search.common_terms.clear()
    yield
    search.common_terms.clear()


def _platform_notes(tenant: Tenant, count: int) -> None:
    for i in range(count):
        add_item(tenant.projects["platform"], f"Routine platform note number {i}.")


@postgresql_only
def test_words_in_most_items_do_not_decide_the_ranking(tenant: Tenant, fresh_statistics) -> None:
    _platform_notes(tenant, 60)
    kafka = add_item(tenant.projects["platform"], "Kafka partitions are rebalanced nightly.")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_fact")
    search.common_terms.clear()
    assert "platform" in search.common_terms.get()

    _, conn = tenant.issue()
    project = project_for_agent(agent_scope(conn), "platform")
    bundle = context_for_agent(scope=agent_scope(conn), project=project, task="platform kafka rebalancing")
    assert bundle["facts"][0]["ref"] == kafka.ref
    assert [
        p
        for p in bundle["pointers"]
        if p["why"].endswith("matches the task; left out to keep the bundle bounded")
    ] == []


@postgresql_only
def test_search_still_finds_a_common_word(tenant: Tenant, fresh_statistics) -> None:
    _platform_notes(tenant, 30)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_fact")
    search.common_terms.clear()
    _, conn = tenant.issue()
    project = project_for_agent(agent_scope(conn), "platform")
    page = search_for_agent(scope=agent_scope(conn), project=project, query="platform")
    assert len(page["results"]) == 10
    assert "cursor" in page


def test_a_task_of_only_stop_words_still_gets_recent_facts(tenant: Tenant) -> None:
    item = add_item(tenant.projects["platform"], "Deploys go through the release train.")
    _, conn = tenant.issue()
    project = project_for_agent(agent_scope(conn), "platform")
    bundle = context_for_agent(scope=agent_scope(conn), project=project, task="the and of to")
    assert [f["ref"] for f in bundle["facts"]] == [item.ref]
