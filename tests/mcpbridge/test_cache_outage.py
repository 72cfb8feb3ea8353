"""With CACHE_URL at a Redis that is down, requests are answered: caching and limits go per process."""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.conf import settings
from django.test import Client, override_settings

from memory.services import fact_create
from tests.conftest import Tenant
from tests.mcp_client import MCPClient
from workspaces.caches import cache

CONTEXT = ("get_context", {"project_id": "platform", "task": "deploy a service"})


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def redis_down() -> Iterator[None]:
    location = f"redis://127.0.0.1:{_closed_port()}/12"
    down = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": location}}
    with override_settings(CACHES=down):
        cache.reset()
        yield
    cache.reset()


@pytest.mark.django_db(transaction=True)
def test_get_context_is_served_and_cached_in_process_with_a_warning(
    redis_down: None,
    tenant: Tenant,
    mcp_client: Callable[..., MCPClient],
    caplog: pytest.LogCaptureFixture,
) -> None:
    fact_create(project=tenant.projects["platform"], kind="decision", text="We deploy blue-green.", actor="m")
    token, _ = tenant.issue()
    client = mcp_client(token)
    with caplog.at_level(logging.WARNING, logger="workspaces.caches"):
        first = client.ok(*CONTEXT)
        again = client.ok(*CONTEXT)
    assert "We deploy blue-green." in {f["text"] for f in first["facts"]}
    assert again["context_id"] == first["context_id"]
    assert cache.local.get(f"unforgetter:context:{first['context_id']}") is not None, "cached in process"
    warnings = [r.getMessage() for r in caplog.records if "shared cache unreachable" in r.getMessage()]
    assert len(warnings) == 1, "one warning per outage, not one per call"


@pytest.mark.django_db(transaction=True)
def test_the_rate_limit_still_holds_per_process(
    redis_down: None, tenant: Tenant, mcp_client: Callable[..., MCPClient]
) -> None:
    token, _ = tenant.issue()
    with override_settings(UNFORGETTER={**settings.UNFORGETTER, "CREDENTIAL_CALLS_PER_SECOND": 2}):
        results = mcp_client(token).calls([("list_projects", {})] * 7, from_new_second=True)
    refused = [r.structured_content["error"] for r in results if r.is_error]
    assert len(refused) >= 3
    assert {e["code"] for e in refused} == {"rate_limited"}


@pytest.mark.django_db
def test_the_login_lockout_still_holds_per_process(redis_down: None, tenant: Tenant) -> None:
    def sign_in(password: str) -> Any:
        form = {"username": tenant.owner.username, "password": password}
        return Client().post("/console/login/", form, REMOTE_ADDR="203.0.113.9")

    assert all(sign_in("guess").status_code == 200 for _ in range(settings.LOGIN_FAILURES_PER_ACCOUNT))
    assert sign_in("correct-horse-battery").status_code == 429
