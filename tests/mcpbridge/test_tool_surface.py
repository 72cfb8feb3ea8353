"""What a client learns before calling: instructions, annotations and output schemas that hold.

Every structured result, success or error, is validated against the tool's published
outputSchema, over real HTTP with the SDK client in both protocol eras.
"""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from memory.services import fact_create
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS = {"list_projects", "get_context", "search_memory", "propose_memory"}


def test_every_tool_is_annotated_and_publishes_an_object_output_schema(
    tenant: Tenant, mcp_client: Any, mode: str
) -> None:
    token, _ = tenant.issue()
    tools = {tool.name: tool for tool in mcp_client(token, mode).tools()}
    assert set(tools) == TOOLS
    for name, tool in tools.items():
        assert tool.annotations is not None, name
        assert tool.annotations.read_only_hint is (name != "propose_memory")
        assert tool.annotations.open_world_hint is False
        schema = tool.output_schema
        assert schema is not None, name
        assert schema["type"] == "object"
        Draft202012Validator.check_schema(schema)


def test_the_instructions_teach_the_four_tools(tenant: Tenant, mcp_client: Any, mode: str) -> None:
    token, _ = tenant.issue()
    instructions = mcp_client(token, mode).instructions()
    assert instructions is not None
    for tool in TOOLS:
        assert tool in instructions


def test_results_and_errors_match_the_published_schemas(tenant: Tenant, mcp_client: Any, mode: str) -> None:
    fact_create(
        project=tenant.projects["platform"], kind="decision", text="Webhooks retry thrice.", actor="ana"
    )
    token, _ = tenant.issue()
    client = mcp_client(token, mode)
    schemas = {tool.name: tool.output_schema for tool in client.tools()}
    calls: list[tuple[str, dict[str, Any], bool]] = [
        ("list_projects", {}, False),
        ("get_context", {"project_id": "platform", "task": "webhook retries"}, False),
        ("get_context", {"project_id": "payroll", "task": "x"}, True),
        ("search_memory", {"project_id": "platform", "query": "webhooks"}, False),
        ("search_memory", {"project_id": "platform", "query": "x", "cursor": "forged"}, True),
        (
            "propose_memory",
            {
                "project_id": "platform",
                "request_id": "surface-test-0001",
                "change": {"op": "add_fact", "kind": "fact", "text": "Retries back off exponentially."},
                "evidence": [{"text": "Seen in the handler.", "trust": "trusted"}],
            },
            False,
        ),
        ("propose_memory", {"project_id": "platform"}, True),
    ]
    for (tool, _arguments, failing), result in zip(
        calls, client.calls([(tool, arguments) for tool, arguments, _ in calls]), strict=True
    ):
        assert result.is_error is failing, (tool, result.structured_content)
        errors = list(Draft202012Validator(schemas[tool]).iter_errors(result.structured_content))
        assert errors == [], (tool, [e.message for e in errors])
    # A result that is neither the payload nor an error does not validate: the schema says something.
    assert list(Draft202012Validator(schemas["search_memory"]).iter_errors({"results": "none"}))
