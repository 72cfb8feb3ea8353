"""Tool results: structured content plus the same JSON as text, errors as `isError` results.

Each comes as the SDK's CallToolResult (the SDK's path) and as its 2026-07-28 wire form, the dict
the SDK would send for it (the direct path, mcpbridge.direct).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mcp.types import CallToolResult, TextContent

from workspaces.exceptions import UnforgetterError


def ok(payload: Mapping[str, Any]) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=_text(payload))], structured_content=dict(payload)
    )


def error(exc: UnforgetterError) -> CallToolResult:
    body = _error_body(exc)
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(body, ensure_ascii=False))],
        structured_content=body,
        is_error=True,
    )


def ok_wire(payload: Mapping[str, Any]) -> dict[str, Any]:
    return _wire(_text(payload), dict(payload), is_error=False)


def error_wire(exc: UnforgetterError) -> dict[str, Any]:
    body = _error_body(exc)
    return _wire(json.dumps(body, ensure_ascii=False), body, is_error=True)


def _text(payload: Mapping[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def _error_body(exc: UnforgetterError) -> dict[str, Any]:
    return {"error": exc.as_dict()}


def _wire(text: str, structured: dict[str, Any], *, is_error: bool) -> dict[str, Any]:
    """A 2026-07-28 result as the SDK dumps it (its result surface's field order), but `_meta`."""
    return {
        "content": [{"text": text, "type": "text"}],
        "isError": is_error,
        "resultType": "complete",
        "structuredContent": structured,
    }


class InternalError(UnforgetterError):
    code = "internal_error"
    action = "Retry in a moment; if it keeps failing, tell the workspace owner."
    http_status = 500
