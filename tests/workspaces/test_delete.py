"""Deleting a workspace removes it from every serving path at once, and nothing else."""

from __future__ import annotations

import httpx
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.models import Fact
from memory.services import fact_create
from tests.conftest import LiveServer, Tenant
from tests.mcp_client import MCPClient
from workspaces.models import Workspace


def test_deleted_workspace_refuses_its_tokens_and_keeps_other_tenants(
    live: LiveServer, tenant: Tenant, other_tenant: Tenant
) -> None:
    token, _ = tenant.issue()
    other_token, _ = other_tenant.issue()
    first = fact_create(project=tenant.projects["platform"], kind="fact", text="v1", actor="a")
    from memory.services.facts import fact_build

    second = fact_build(project=tenant.projects["platform"], kind="fact", text="v2", actor="a")
    second.supersedes = first
    second.save()
    fact_create(project=other_tenant.projects["platform"], kind="fact", text="theirs", actor="b")

    call_command("delete_workspace", "acme", "--confirm", "acme")

    assert not Workspace.objects.filter(slug="acme").exists()
    assert list(Fact.objects.values_list("text", flat=True)) == ["theirs"]
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28"}
    refused = httpx.post(live.mcp_url, json=body, headers={**headers, "Authorization": f"Bearer {token}"})
    assert refused.status_code == 401
    kept = MCPClient(live.mcp_url, other_token).ok("list_projects")
    assert [p["id"] for p in kept["projects"]] == ["handbook", "platform"]


def test_delete_needs_the_slug_repeated(tenant: Tenant) -> None:
    with pytest.raises(CommandError, match="confirm"):
        call_command("delete_workspace", "acme", "--confirm", "acm")
    assert Workspace.objects.filter(slug="acme").exists()
