"""Liveness, readiness, Prometheus metrics and JSON logs with a request id."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from datetime import timedelta

import httpx
import pytest
from django.conf import settings
from django.test import Client, override_settings
from django.utils import timezone

from memory.models import Proposal
from memory.services import proposal_submit
from tests.conftest import LiveServer, Tenant
from tests.mcp_client import MCPClient
from workspaces.logs import JsonFormatter, RequestIdFilter, request_id
from workspaces.selectors import agent_scope

pytestmark = pytest.mark.django_db


def _propose(tenant: Tenant) -> Proposal:
    _, connection = tenant.issue()
    return proposal_submit(
        scope=agent_scope(connection),
        project_id="platform",
        request_id=f"ops-{uuid.uuid4()}",
        op="add_fact",
        text="Deploys go out on Tuesdays.",
        evidence=[{"ref": "docs/deploy.md", "trust": "trusted"}],
    ).proposal


def test_liveness_and_readiness_answer_when_all_is_well(tenant: Tenant) -> None:
    assert Client().get("/healthz").json() == {"status": "ok"}
    ready = Client().get("/readyz")
    assert ready.status_code == 200
    body = ready.json()
    assert body["status"] == "ready"
    assert body["database"] == "ok"
    assert body["broker"].startswith("none")


def test_readiness_fails_when_the_consolidator_lags_or_the_broker_is_down(tenant: Tenant) -> None:
    proposal = _propose(tenant)
    Proposal.objects.filter(pk=proposal.pk).update(created_at=timezone.now() - timedelta(minutes=10))
    lagging = Client().get("/readyz")
    assert lagging.status_code == 503
    assert lagging.json()["consolidator"].startswith("lagging: the oldest pending proposal waited")
    Proposal.objects.filter(pk=proposal.pk).update(status=Proposal.Status.PUBLISHED)
    with override_settings(CELERY_BROKER_URL="redis://127.0.0.1:1/0"):
        down = Client().get("/readyz")
    assert down.status_code == 503
    assert down.json()["broker"] == "unreachable"
    assert down.json()["consolidator"].startswith("lag ")


@pytest.mark.django_db(transaction=True)
def test_metrics_report_latency_by_tool_proposals_lag_and_refusals(
    live: LiveServer, tenant: Tenant, mcp_client: Callable[..., MCPClient]
) -> None:
    token, _ = tenant.issue()
    mcp_client(token).ok("get_context", {"project_id": "platform", "task": "deploy"})
    _propose(tenant)
    text = httpx.get(f"{live.url}/metrics", timeout=30).text
    assert 'unforgetter_tool_call_seconds_count{tool="get_context"}' in text
    assert 'unforgetter_proposals{status="queued"} 1.0' in text
    assert "unforgetter_consolidation_lag_seconds " in text
    assert 'unforgetter_rate_limited_total{limit="rate"}' in text


def test_metrics_are_for_operators_only(tenant: Tenant) -> None:
    assert Client().get("/metrics").status_code == 200  # loopback, no token configured
    assert Client().get("/metrics", REMOTE_ADDR="203.0.113.9").status_code == 404
    with override_settings(METRICS_TOKEN="scrape-" + "x" * 40):
        assert Client().get("/metrics").status_code == 404, "a token, once set, is required everywhere"
        wrong = Client(headers={"Authorization": "Bearer nope"})
        assert wrong.get("/metrics").status_code == 404
        scraper = Client(headers={"Authorization": f"Bearer {settings.METRICS_TOKEN}"})
        assert scraper.get("/metrics", REMOTE_ADDR="203.0.113.9").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_every_response_carries_a_request_id(live: LiveServer) -> None:
    given = httpx.get(f"{live.url}/healthz", headers={"X-Request-ID": "lb-0123456789"}, timeout=30)
    assert given.headers["x-request-id"] == "lb-0123456789"
    fresh = httpx.get(f"{live.url}/healthz", headers={"X-Request-ID": "<script>"}, timeout=30)
    assert len(fresh.headers["x-request-id"]) == 32
    assert fresh.headers["x-request-id"] != "<script>"
    assert httpx.post(f"{live.url}/mcp", timeout=30).headers["x-request-id"]


def test_a_log_line_is_one_json_object_with_the_request_id() -> None:
    record = logging.LogRecord("memory.worker", logging.WARNING, __file__, 1, "claimed %d", (3,), None)
    token = request_id.set("req-abcdef12")
    try:
        RequestIdFilter().filter(record)
    finally:
        request_id.reset(token)
    line = json.loads(JsonFormatter().format(record))
    assert line["request_id"] == "req-abcdef12"
    assert line["message"] == "claimed 3"
    assert line["level"] == "WARNING"
    assert line["logger"] == "memory.worker"
    assert settings.LOG_FORMAT in ("json", "plain")
