"""The three read tools over real HTTP through the SDK client, in both protocol eras."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from memory.models import ContextRequest
from tests.conftest import LiveServer, Tenant
from tests.readpath import (  # noqa: F401
    RecordingMCPClient,
    _fresh_bundle_cache,
    add_item,
    all_items,
    sdk_factory,
    served_record,
)
from workspaces.models import DataClass

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sdk(live: LiveServer) -> Callable[..., RecordingMCPClient]:
    return sdk_factory(live)


ERROR_ACTIONS = {
    "forbidden_scope": "Call list_projects and select an allowed project. Do not retry with the same id.",
    "unknown_project": "Call list_projects. The catalogue is authoritative.",
    "invalid_cursor": "Restart the search without a cursor.",
}


def test_every_read_tool_is_listed_with_a_strict_schema(tenant: Tenant, sdk, mode: str) -> None:
    token, _ = tenant.issue()
    tools = {tool.name: tool for tool in sdk(token, mode).tools()}
    assert {"list_projects", "get_context", "search_memory"} <= set(tools)
    for name in ("list_projects", "get_context", "search_memory"):
        schema = tools[name].input_schema
        assert schema["additionalProperties"] is False
        assert tools[name].annotations.read_only_hint is True
        for prop in schema.get("properties", {}).values():
            assert prop.get("description"), name
    assert set(tools["get_context"].input_schema["required"]) == {"project_id", "task"}
    assert set(tools["search_memory"].input_schema["required"]) == {"project_id", "query"}


def test_list_projects_returns_only_the_catalogue_with_its_fields(tenant: Tenant, sdk, mode: str) -> None:
    token, _ = tenant.issue(data_classes=["public", "internal", "confidential"])
    projects = sdk(token, mode).ok("list_projects")["projects"]
    assert [p["id"] for p in projects] == ["handbook", "incidents", "platform"]
    for project in projects:
        assert set(project) == {"id", "name", "data_class", "updated_at"}
        assert project["data_class"] != DataClass.RESTRICTED
    assert projects[0]["name"] == "Handbook"
    assert re.match(r"^\d{4}-\d\d-\d\dT", projects[0]["updated_at"])


def test_list_projects_honours_a_project_list(tenant: Tenant, sdk, mode: str) -> None:
    token, _ = tenant.issue(projects=["platform"])
    assert [p["id"] for p in sdk(token, mode).ok("list_projects")["projects"]] == ["platform"]


def test_get_context_returns_the_bundle_of_the_reference(tenant: Tenant, sdk, mode: str) -> None:
    platform = tenant.projects["platform"]
    add_item(platform, "Never deploy on Fridays without the on-call lead.", kind="policy")
    decision = add_item(platform, "We chose PostgreSQL for the billing service database.", kind="decision")
    add_item(platform, "Should billing move to its own database cluster?", kind="thread")
    add_item(
        platform, "How to restore billing: stop writers, restore the snapshot, replay WAL.", kind="method"
    )
    token, connection = tenant.issue(actor="claude@ana")

    bundle = sdk(token, mode).ok(
        "get_context", {"project_id": "platform", "task": "migrate the billing database"}
    )

    assert re.match(r"^ctx_[0-9a-f]{28}$", bundle["context_id"])
    assert set(bundle["freshness"]) >= {"compiled_at", "replica_at"}
    assert bundle["identity"] == {"actor": "claude@ana", "trust_zone": "claude", "role": "contributor"}
    assert [p["text"] for p in bundle["policies"]] == ["Never deploy on Fridays without the on-call lead."]
    assert decision.ref in [f["ref"] for f in bundle["facts"]]
    assert [t["kind"] for t in bundle["open_threads"]] == ["thread"]
    assert [m["kind"] for m in bundle["methods"]] == ["method"]
    assert isinstance(bundle["pointers"], list)
    for item in all_items(bundle):
        assert set(item["provenance"]) == {"source", "date", "actor"}
    assert served_record(bundle["context_id"]).connection == connection
    assert ContextRequest.objects.filter(context_id=bundle["context_id"]).count() == 1


def test_search_memory_finds_highlighted_items_with_provenance(tenant: Tenant, sdk, mode: str) -> None:
    item = add_item(tenant.projects["platform"], "The billing service retries webhooks three times.")
    add_item(tenant.projects["platform"], "Unrelated note about lunch.")
    token, _ = tenant.issue()

    page = sdk(token, mode).ok("search_memory", {"project_id": "platform", "query": "billing webhooks"})

    assert [r["ref"] for r in page["results"]] == [item.ref]
    result = page["results"][0]
    assert "**" in result["excerpt"]
    assert result["data_class"] == "internal"
    assert result["provenance"] == {
        "source": "tests/notes.md",
        "date": item.created_at.date().isoformat(),
        "actor": "owner",
    }
    assert "cursor" not in page


def test_search_memory_fetches_an_item_by_its_ref(tenant: Tenant, sdk, mode: str) -> None:
    item = add_item(tenant.projects["platform"], "Feature flags live in the flags service.")
    token, _ = tenant.issue()
    page = sdk(token, mode).ok("search_memory", {"project_id": "platform", "query": item.ref})
    assert [(r["ref"], r["excerpt"]) for r in page["results"]] == [(item.ref, item.text)]


@pytest.mark.parametrize("tool", ["get_context", "search_memory"])
def test_a_project_outside_the_catalogue_is_forbidden_scope(
    tenant: Tenant, sdk, mode: str, tool: str
) -> None:
    token, _ = tenant.issue(projects=["handbook"])
    args = {"project_id": "platform", "task": "x", "query": "x"}
    args.pop("query" if tool == "get_context" else "task")
    error = sdk(token, mode).error(tool, args)
    assert error["code"] == "forbidden_scope"
    assert error["action"] == ERROR_ACTIONS["forbidden_scope"]


@pytest.mark.parametrize("tool", ["get_context", "search_memory"])
@pytest.mark.parametrize("project", ["incidents", "payroll"])
def test_a_project_of_a_class_not_granted_is_forbidden_scope(
    tenant: Tenant, sdk, mode: str, tool: str, project: str
) -> None:
    add_item(tenant.projects[project], "Salaries are reviewed in March.")
    token, _ = tenant.issue()
    args = {
        "project_id": project,
        **({"task": "salaries"} if tool == "get_context" else {"query": "salaries"}),
    }
    error = sdk(token, mode).error(tool, args)
    assert error["code"] == "forbidden_scope"
    assert "restricted" not in error["message"]
    assert "confidential" not in error["message"]
    assert "March" not in error["message"]


def test_a_restricted_project_is_refused_even_to_the_widest_credential(
    tenant: Tenant, sdk, mode: str
) -> None:
    token, _ = tenant.issue(data_classes=["public", "internal", "confidential"])
    client = sdk(token, mode)
    assert "payroll" not in [p["id"] for p in client.ok("list_projects")["projects"]]
    assert client.error("get_context", {"project_id": "payroll", "task": "pay"})["code"] == "forbidden_scope"


@pytest.mark.parametrize("tool", ["get_context", "search_memory"])
def test_an_unknown_project_is_unknown_project(tenant: Tenant, sdk, mode: str, tool: str) -> None:
    token, _ = tenant.issue()
    args = {"project_id": "no-such-project", **({"task": "x"} if tool == "get_context" else {"query": "x"})}
    error = sdk(token, mode).error(tool, args)
    assert error["code"] == "unknown_project"
    assert error["action"] == ERROR_ACTIONS["unknown_project"]


def test_a_bad_cursor_is_invalid_cursor(tenant: Tenant, sdk, mode: str) -> None:
    token, _ = tenant.issue()
    error = sdk(token, mode).error(
        "search_memory", {"project_id": "platform", "query": "billing", "cursor": "not-a-cursor"}
    )
    assert error == {
        "code": "invalid_cursor",
        "message": "This cursor is not valid.",
        "action": ERROR_ACTIONS["invalid_cursor"],
    }


def test_the_same_calls_work_over_one_kept_alive_connection(tenant: Tenant, sdk, mode: str) -> None:
    add_item(tenant.projects["platform"], "Deploys go through the release train.")
    token, _ = tenant.issue()
    results = sdk(token, mode).calls(
        [
            ("list_projects", {}),
            ("get_context", {"project_id": "platform", "task": "deploy"}),
            ("search_memory", {"project_id": "platform", "query": "deploys"}),
        ]
    )
    assert [r.is_error for r in results] == [False, False, False]
