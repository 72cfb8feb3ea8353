"""Per-credential limits on every tool and REST endpoint, and bounded work per query."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client, override_settings

from memory.query_limits import MAX_NEGATIONS, MAX_TERMS, QueryTooCostly, bounded_query, bounded_rows
from memory.services import fact_create
from tests.conftest import Tenant
from tests.mcp_client import MCPClient, new_second
from workspaces import limits as limits_module
from workspaces.exceptions import RateLimited
from workspaces.limits import credential_slot, server_time
from workspaces.throttle import window_hit

CONTEXT = ("get_context", {"project_id": "platform", "task": "deploy a service"})
SEARCH = ("search_memory", {"project_id": "platform", "query": "deploy"})
PROPOSE = (
    "propose_memory",
    {
        "project_id": "platform",
        "request_id": "limits-0001",
        "change": {"op": "add_fact", "kind": "fact", "text": "Deploys go out on Tuesdays."},
        "evidence": [{"ref": "docs/deploy.md", "trust": "trusted"}],
    },
)
TOOLS = [("list_projects", {}), CONTEXT, SEARCH, PROPOSE]


def limits(**values: int) -> Any:
    return override_settings(UNFORGETTER={**settings.UNFORGETTER, **values})


def refusal(result: Any) -> dict[str, Any]:
    assert result.is_error, result.structured_content
    error: dict[str, Any] = result.structured_content["error"]
    assert error["code"] == "rate_limited"
    assert isinstance(error["retry_after"], int)
    assert error["retry_after"] >= 1
    return error


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("tool", "arguments"), TOOLS, ids=[t for t, _ in TOOLS])
def test_every_tool_refuses_a_credential_over_its_rate_and_spares_another(
    tool: str, arguments: dict[str, Any], tenant: Tenant, mcp_client: Callable[..., MCPClient]
) -> None:
    noisy, _ = tenant.issue()
    quiet, _ = tenant.issue(actor="quiet@tests")
    with limits(CREDENTIAL_CALLS_PER_SECOND=2):
        # Seven calls within at most two one-second windows: at least three are over the limit.
        results = mcp_client(noisy).calls([(tool, arguments)] * 7, from_new_second=True)
        refused = [r for r in results if r.is_error]
        assert len(refused) >= 3
        assert "calls a second" in refusal(refused[0])["message"]
        assert not mcp_client(quiet).call(tool, arguments).is_error


@pytest.mark.django_db(transaction=True)
def test_calls_of_a_credential_already_over_its_rate_are_refused_without_counting_again(
    tenant: Tenant, mcp_client: Callable[..., MCPClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    token, connection_ = tenant.issue()
    counted: list[str] = []
    original = window_hit

    def counting(key: str, **kwargs: Any) -> int | None:
        counted.append(key)
        return original(key, **kwargs)

    monkeypatch.setattr(limits_module, "window_hit", counting)
    new_second()  # so that the calls below fall in one rate window
    with limits(CREDENTIAL_CALLS_PER_SECOND=1):
        limits_module.credential_rate_check(connection_.pk)
        with pytest.raises(RateLimited):
            limits_module.credential_rate_check(connection_.pk)
        assert len(counted) == 2
        # Over MCP the next call is refused on the event loop: it reaches no counter (and no thread).
        assert "calls a second" in refusal(mcp_client(token).call("list_projects", {}))["message"]
        assert len(counted) == 2
    other, _ = tenant.issue(actor="other@tests")
    assert not mcp_client(other).call("list_projects", {}).is_error


@pytest.mark.django_db(transaction=True)
def test_a_credential_over_its_concurrency_is_refused_until_a_call_finishes(
    tenant: Tenant, mcp_client: Callable[..., MCPClient]
) -> None:
    token, connection_ = tenant.issue()
    with limits(CREDENTIAL_IN_FLIGHT=2, CREDENTIAL_CONCURRENCY=2):
        # The live server runs in this process: two calls held in flight here fill the slots.
        with credential_slot(connection_.pk), credential_slot(connection_.pk):
            error = refusal(mcp_client(token).call(*CONTEXT))
            assert "2 calls in progress" in error["message"]
            other, _ = tenant.issue(actor="other@tests")
            assert not mcp_client(other).call(*CONTEXT).is_error
        assert not mcp_client(token).call(*CONTEXT).is_error


@pytest.mark.django_db(transaction=True)
def test_parallel_calls_of_one_credential_wait_their_turn_and_all_succeed(
    tenant: Tenant, mcp_client: Callable[..., MCPClient]
) -> None:
    fact_create(project=tenant.projects["platform"], kind="decision", text="We deploy blue-green.", actor="m")
    token, _ = tenant.issue()
    results: list[Any] = []

    def call(i: int) -> None:
        results.append(
            mcp_client(token).call("get_context", {"project_id": "platform", "task": f"deploy {i}"})
        )

    with limits(CREDENTIAL_CONCURRENCY=1):
        threads = [threading.Thread(target=call, args=(i,)) for i in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    assert len(results) == 6
    assert [r.is_error for r in results] == [False] * 6


@pytest.mark.django_db
def test_a_call_queued_past_its_wait_is_refused(tenant: Tenant) -> None:
    token, connection_ = tenant.issue()
    client = Client(headers={"Authorization": f"Bearer {token}"})
    with limits(CREDENTIAL_CONCURRENCY=1, CREDENTIAL_QUEUE_SECONDS=1):
        with credential_slot(connection_.pk):  # the one running call
            refused = client.get("/api/v1/projects/")
        assert refused.status_code == 429
        assert refused.json()["code"] == "rate_limited"
        assert "queued" in refused.json()["detail"]
        assert client.get("/api/v1/projects/").status_code == 200


@pytest.mark.django_db
def test_the_rest_api_answers_429_with_retry_after_over_the_rate(tenant: Tenant) -> None:
    fact_create(project=tenant.projects["platform"], kind="decision", text="We deploy blue-green.", actor="m")
    token, _ = tenant.issue()
    client = Client(headers={"Authorization": f"Bearer {token}"})
    with limits(CREDENTIAL_CALLS_PER_SECOND=2):
        new_second()  # seven calls within at most two one-second windows
        responses = [client.get("/api/v1/projects/platform/search/", {"q": "deploy"}) for _ in range(7)]
    refused = [r for r in responses if r.status_code == 429]
    assert len(refused) >= 3
    body = refused[0].json()
    assert body["code"] == "rate_limited"
    assert body["retry_after"] >= 1
    assert refused[0]["Retry-After"] == str(body["retry_after"])
    assert all(r.status_code in (200, 429) for r in responses)


@pytest.mark.django_db
def test_the_rest_api_frees_the_slot_of_a_refused_or_failed_call(tenant: Tenant) -> None:
    token, connection_ = tenant.issue()
    client = Client(headers={"Authorization": f"Bearer {token}"})
    with limits(CREDENTIAL_IN_FLIGHT=1):
        for _ in range(3):
            assert client.get("/api/v1/projects/nowhere/search/", {"q": "deploy"}).status_code == 404
        with credential_slot(connection_.pk):
            assert client.get("/api/v1/projects/").status_code == 429
        assert client.get("/api/v1/projects/").status_code == 200


def test_a_query_keeps_its_first_words_and_only_a_few_negations() -> None:
    negated = " ".join(f"-word{i}" for i in range(120))
    bounded = bounded_query(f"billing webhooks {negated}")
    assert bounded.split()[:2] == ["billing", "webhooks"]
    assert sum(1 for t in bounded.split() if t.startswith("-")) == MAX_NEGATIONS
    assert len(bounded_query(" ".join(f"w{i}" for i in range(500))).split()) == MAX_TERMS


@pytest.mark.django_db(transaction=True)
def test_a_search_of_many_negated_terms_is_answered_from_a_bounded_query(
    tenant: Tenant, mcp_client: Callable[..., MCPClient]
) -> None:
    fact_create(project=tenant.projects["platform"], kind="fact", text="Billing retries webhooks.", actor="m")
    token, _ = tenant.issue()
    query = "billing " + " ".join(f"-noise{i}" for i in range(120))
    page = mcp_client(token).ok("search_memory", {"project_id": "platform", "query": query[:500]})
    assert [r["excerpt"] for r in page["results"]] == ["**Billing** retries webhooks."]


@pytest.mark.django_db(transaction=True)
def test_a_statement_past_the_time_budget_is_stopped_with_a_clear_error() -> None:
    expensive = (
        "SELECT pg_sleep(0.5)"
        if connection.vendor == "postgresql"
        else "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000000) "
        "SELECT count(*) FROM n"
    )
    with limits(SEARCH_STATEMENT_TIMEOUT_MS=50), pytest.raises(QueryTooCostly) as refused:
        bounded_rows(expensive, [])
    assert refused.value.code == "invalid_request"
    with limits(SEARCH_STATEMENT_TIMEOUT_MS=5000):
        assert bounded_rows("SELECT %s", [7]) == [(7,)]
    with connection.cursor() as cursor:  # the connection is usable and keeps no timeout
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


@pytest.mark.django_db(transaction=True)
def test_every_call_is_charged_to_its_credentials_server_time(
    tenant: Tenant, mcp_client: Callable[..., MCPClient]
) -> None:
    token, connection_ = tenant.issue()
    # No burst and a millisecond a second: the first call runs, and its time is a debt of
    # seconds that the next call could not wait out within the queue's one second.
    with limits(CREDENTIAL_SERVER_MS_PER_SECOND=1, CREDENTIAL_SERVER_MS_BURST=0, CREDENTIAL_QUEUE_SECONDS=1):
        client = mcp_client(token)
        assert not client.call(*CONTEXT).is_error
        assert server_time.wait_seconds(connection_.pk) > 1
        error = refusal(client.call(*CONTEXT))
        assert "share of the server's time" in error["message"]
        other, _ = tenant.issue(actor="other@tests")
        assert not mcp_client(other).call(*CONTEXT).is_error


@pytest.mark.django_db(transaction=True)
def test_a_credential_briefly_in_debt_waits_and_is_served(
    tenant: Tenant, mcp_client: Callable[..., MCPClient]
) -> None:
    token, connection_ = tenant.issue()
    with limits(CREDENTIAL_SERVER_MS_PER_SECOND=1000, CREDENTIAL_SERVER_MS_BURST=1000):
        server_time.charge(connection_.pk, 1.5)  # half a second in debt
        started = time.monotonic()
        assert not mcp_client(token).call(*CONTEXT).is_error
        assert time.monotonic() - started >= 0.4


@pytest.mark.django_db
def test_the_rest_api_refuses_a_credential_deep_in_debt_with_retry_after(tenant: Tenant) -> None:
    token, connection_ = tenant.issue()
    client = Client(headers={"Authorization": f"Bearer {token}"})
    with limits(CREDENTIAL_SERVER_MS_PER_SECOND=100, CREDENTIAL_QUEUE_SECONDS=1):
        server_time.charge(connection_.pk, 1000)  # far more than the burst plus a second's refill
        refused = client.get("/api/v1/projects/")
        assert refused.status_code == 429
        assert refused.json()["code"] == "rate_limited"
        assert int(refused["Retry-After"]) > 1
        server_time.clear()
        assert client.get("/api/v1/projects/").status_code == 200
