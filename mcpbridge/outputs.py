"""The tools' output schemas, derived from the contract's types so they cannot drift from it.

Each schema is an object that is either the tool's payload or `{"error": {code, message,
action}}` (an `isError` result), so a client can validate every structured result it gets.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from memory.contract import Bundle, ErrorBody, ProjectList, ProposalReceipt, SearchPage
from memory.contract_schemas import contract_schema


class ToolError(TypedDict):
    """`structuredContent` of a failed call: its stable code, a safe message, what to do next."""

    error: ErrorBody


def output_schema(payload: type[Any]) -> dict[str, Any]:
    """A JSON schema for `payload | ToolError`, rooted in an object as MCP requires."""
    return {"type": "object", **contract_schema(payload | ToolError)}


OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "list_projects": output_schema(ProjectList),
    "get_context": output_schema(Bundle),
    "search_memory": output_schema(SearchPage),
    "propose_memory": output_schema(ProposalReceipt),
}
