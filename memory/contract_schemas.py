"""JSON schemas of the agent contract (memory.contract), for the interfaces that publish them.

The MCP tools' outputSchema and the REST API's OpenAPI responses are both derived here from the
same TypedDicts, so neither can drift from what memory builds. References are inlined, so a
schema stands alone wherever it is embedded (an MCP tool, an OpenAPI operation).
"""

from __future__ import annotations

from typing import Any, cast

from pydantic import TypeAdapter


def _inline(node: Any, definitions: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _inline(definitions[ref.removeprefix("#/$defs/")], definitions)
        return {key: _inline(value, definitions) for key, value in node.items() if key != "$defs"}
    if isinstance(node, list):
        return [_inline(item, definitions) for item in node]
    return node


def contract_schema(payload: Any) -> dict[str, Any]:
    """The JSON schema (2020-12) of a contract type or union of types, every reference inlined."""
    schema = TypeAdapter[Any](cast(Any, payload)).json_schema()
    return cast(dict[str, Any], _inline(schema, schema.get("$defs", {})))
