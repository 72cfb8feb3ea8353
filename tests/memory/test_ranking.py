"""Ranking rules of the context compiler and search that keep them fast at scale."""

from __future__ import annotations

import pytest

from memory.context import context_for_agent
from memory.selectors import search_for_agent
from tests.conftest import Tenant
from tests.readpath import _fresh_bundle_cache, add_item  # noqa: F401
from workspaces.selectors import agent_scope, project_for_agent

pytestmark = pytest.mark.django_db


def _platform_notes(tenant: Tenant, count: int) -> None:
    for i in range(count):
        add_item(tenant.projects["platform"], f"Routine platform note number {i}.")


def test_words_in_most_items_do_not_decide_the_ranking(tenant: Tenant) -> None:
    # No ANALYZE and no statistics: a freshly imported database ranks by the words' rarity.
    _platform_notes(tenant, 60)
    kafka = add_item(tenant.projects["platform"], "Kafka partitions are rebalanced nightly.")
    _, conn = tenant.issue()
    project = project_for_agent(agent_scope(conn), "platform")
    bundle = context_for_agent(scope=agent_scope(conn), project=project, task="platform kafka rebalancing")
    assert bundle["facts"][0]["ref"] == kafka.ref
    assert [
        p
        for p in bundle["pointers"]
        if p["why"].endswith("matches the task; left out to keep the bundle bounded")
    ] == []


def test_search_still_finds_a_common_word(tenant: Tenant) -> None:
    _platform_notes(tenant, 30)
    _, conn = tenant.issue()
    project = project_for_agent(agent_scope(conn), "platform")
    page = search_for_agent(scope=agent_scope(conn), project=project, query="platform")
    assert len(page["results"]) == 10
    assert "cursor" in page


def test_a_rare_word_outweighs_a_common_one(tenant: Tenant) -> None:
    _platform_notes(tenant, 40)
    rare = add_item(tenant.projects["platform"], "The flamegraph shows lock contention.")
    _, conn = tenant.issue()
    project = project_for_agent(agent_scope(conn), "platform")
    page = search_for_agent(scope=agent_scope(conn), project=project, query="platform flamegraph")
    assert page["results"][0]["ref"] == rare.ref


def test_items_with_every_word_come_first_when_each_word_alone_is_common(tenant: Tenant) -> None:
    # Each word alone matches many items; the one item holding both outranks them all.
    for i in range(12):
        add_item(tenant.projects["platform"], f"Routine platform note {i}.")
        add_item(tenant.projects["platform"], f"Billing runs nightly, batch {i}.")
    both = add_item(tenant.projects["platform"], "Platform billing moved to the ledger.")
    _, conn = tenant.issue()
    project = project_for_agent(agent_scope(conn), "platform")
    page = search_for_agent(scope=agent_scope(conn), project=project, query="platform billing")
    assert page["results"][0]["ref"] == both.ref
    assert len(page["results"]) == 10


def test_a_task_of_only_stop_words_still_gets_recent_facts(tenant: Tenant) -> None:
    item = add_item(tenant.projects["platform"], "Deploys go through the release train.")
    _, conn = tenant.issue()
    project = project_for_agent(agent_scope(conn), "platform")
    bundle = context_for_agent(scope=agent_scope(conn), project=project, task="the and of to")
    assert [f["ref"] for f in bundle["facts"]] == [item.ref]
