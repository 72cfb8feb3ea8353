from __future__ import annotations

from tests.conftest import Tenant


def test_list_projects_over_http_in_both_eras(tenant: Tenant, mcp_client, mode: str) -> None:
    token, _ = tenant.issue()
    projects = mcp_client(token, mode).ok("list_projects")["projects"]
    assert [p["id"] for p in projects] == ["handbook", "platform"]
