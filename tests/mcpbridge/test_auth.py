"""Who may call the read tools: the credential matrix, over real HTTP in both protocol eras."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import httpx
import pytest
from django.utils import timezone

from tests.conftest import LiveServer, Tenant
from tests.readpath import (  # noqa: F401
    RecordingMCPClient,
    _fresh_bundle_cache,
    add_item,
    raw_call,
    rpc_body,
    rpc_headers,
    sdk_factory,
)
from workspaces.models import Connection
from workspaces.services import connection_revoke, project_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sdk(live: LiveServer) -> Callable[..., RecordingMCPClient]:
    return sdk_factory(live)


CALLS = [
    ("list_projects", {}),
    ("get_context", {"project_id": "platform", "task": "deploy"}),
    ("search_memory", {"project_id": "platform", "query": "deploy"}),
]
GARBAGE = [
    "garbage",
    "unf_short",
    "unf_" + "A" * 43,  # well formed, never issued
    "x" * 5000,
]


def _expire(connection: Connection) -> None:
    Connection.objects.filter(pk=connection.pk).update(expires_at=timezone.now() - timedelta(seconds=1))


@pytest.mark.parametrize(("tool", "args"), CALLS)
def test_no_token_is_refused_with_401(tenant: Tenant, sdk, mode: str, tool: str, args: dict) -> None:
    sdk(None, mode).refused(tool, args)


@pytest.mark.parametrize("bad", GARBAGE)
def test_garbage_and_unknown_tokens_are_refused_with_401(tenant: Tenant, sdk, mode: str, bad: str) -> None:
    sdk(bad, mode).refused("list_projects")


@pytest.mark.parametrize(("tool", "args"), CALLS)
def test_an_expired_token_is_refused_on_every_tool(
    tenant: Tenant, sdk, mode: str, tool: str, args: dict
) -> None:
    token, connection = tenant.issue(ttl=timedelta(hours=1))
    sdk(token, mode).ok("list_projects")
    _expire(connection)
    sdk(token, mode).refused(tool, args)


@pytest.mark.parametrize(("tool", "args"), CALLS)
def test_a_revoked_token_is_refused_on_every_tool(
    tenant: Tenant, sdk, mode: str, tool: str, args: dict
) -> None:
    token, connection = tenant.issue()
    connection_revoke(connection=connection)
    sdk(token, mode).refused(tool, args)


def test_revocation_is_effective_on_the_very_next_call(tenant: Tenant, sdk, mode: str) -> None:
    add_item(tenant.projects["platform"], "Deploys go through the release train.")
    token, connection = tenant.issue()
    client = sdk(token, mode)
    assert client.ok("get_context", {"project_id": "platform", "task": "deploy"})["facts"]
    connection_revoke(connection=connection)
    client.refused("get_context", {"project_id": "platform", "task": "deploy"})


def test_every_refusal_carries_the_resource_metadata_challenge(tenant: Tenant, live) -> None:
    token, connection = tenant.issue()
    connection_revoke(connection=connection)
    expected = f'resource_metadata="{live.url}/.well-known/oauth-protected-resource/mcp"'
    for credential in [None, "garbage", "unf_" + "A" * 43, token]:
        response = raw_call(live.mcp_url, credential, "list_projects", {})
        assert response.status_code == 401
        challenge = response.headers["www-authenticate"]
        assert challenge.startswith("Bearer ")
        assert expected in challenge
        assert "Traceback" not in response.text


def test_a_token_with_non_ascii_bytes_is_refused_with_401(tenant: Tenant, live) -> None:
    for raw in ["unf_" + "é" * 43, "unf_\udcff" + "A" * 43]:
        headers = [(k.encode(), v.encode()) for k, v in rpc_headers(None, name="list_projects").items()]
        headers.append((b"Authorization", b"Bearer " + raw.encode("utf-8", "surrogateescape")))
        response = httpx.post(
            live.mcp_url,
            json=rpc_body("tools/call", {"name": "list_projects", "arguments": {}}),
            headers=headers,
        )
        assert response.status_code == 401
        assert "Traceback" not in response.text


def test_a_token_of_another_workspace_cannot_see_this_workspaces_projects(
    tenant: Tenant, other_tenant: Tenant, sdk, mode: str
) -> None:
    project_create(workspace=tenant.workspace, slug="acme-roadmap", name="Roadmap")
    add_item(tenant.projects["platform"], "Acme deploys with the release train.")
    foreign_token, _ = other_tenant.issue(data_classes=["public", "internal", "confidential"])
    client = sdk(foreign_token, mode)

    assert "acme-roadmap" not in [p["id"] for p in client.ok("list_projects")["projects"]]
    exists_elsewhere = client.error("get_context", {"project_id": "acme-roadmap", "task": "plan"})
    does_not_exist = client.error("get_context", {"project_id": "nowhere-at-all", "task": "plan"})
    assert exists_elsewhere["code"] == does_not_exist["code"] == "unknown_project"
    assert exists_elsewhere["message"].replace("acme-roadmap", "X") == does_not_exist["message"].replace(
        "nowhere-at-all", "X"
    )
    assert exists_elsewhere["action"] == does_not_exist["action"]
    search_elsewhere = client.error("search_memory", {"project_id": "acme-roadmap", "query": "plan"})
    assert search_elsewhere["code"] == "unknown_project"
    # Its own project of the same slug shows its own memory only.
    page = client.ok("search_memory", {"project_id": "platform", "query": "acme deploys"})
    assert page["results"] == []


def test_last_used_at_is_written_at_most_once_a_minute(tenant: Tenant, sdk, mode: str) -> None:
    token, connection = tenant.issue()
    assert connection.last_used_at is None
    client = sdk(token, mode)
    client.ok("list_projects")
    first = Connection.objects.get(pk=connection.pk).last_used_at
    assert first is not None
    client.ok("list_projects")
    client.ok("search_memory", {"project_id": "platform", "query": "anything"})
    assert Connection.objects.get(pk=connection.pk).last_used_at == first

    an_hour_ago = timezone.now() - timedelta(minutes=61)
    Connection.objects.filter(pk=connection.pk).update(last_used_at=an_hour_ago)
    client.ok("list_projects")
    touched = Connection.objects.get(pk=connection.pk).last_used_at
    assert touched is not None
    assert touched > an_hour_ago


def test_get_and_delete_on_mcp_are_405(live) -> None:
    for method in ("GET", "DELETE"):
        response = httpx.request(method, live.mcp_url, headers={"Accept": "text/event-stream"})
        assert response.status_code == 405
        assert response.headers["allow"] == "POST"


@pytest.mark.parametrize(
    "path", ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]
)
def test_protected_resource_metadata_answers_at_both_paths(live, path: str) -> None:
    response = httpx.get(live.url + path)
    assert response.status_code == 200
    body = response.json()
    assert body["resource"] == live.mcp_url
    assert body["authorization_servers"] == [live.url]
    assert "memory:read" in body["scopes_supported"]


def test_healthz_and_readyz_answer_ok(live) -> None:
    # /healthz is liveness (the process serves); the database is /readyz's to check.
    response = httpx.get(f"{live.url}/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    ready = httpx.get(f"{live.url}/readyz")
    assert ready.status_code == 200
    assert ready.json()["database"] == "ok"


def test_a_valid_token_in_the_raw_modern_era_gets_a_json_result(tenant: Tenant, live) -> None:
    token, _ = tenant.issue()
    response = httpx.post(
        live.mcp_url,
        json=rpc_body("tools/call", {"name": "list_projects", "arguments": {}}),
        headers=rpc_headers(token, name="list_projects"),
    )
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["isError"] is False
    assert [p["id"] for p in result["structuredContent"]["projects"]] == ["handbook", "platform"]
