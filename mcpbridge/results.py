"""Tool results: structured content plus the same JSON as text, errors as `isError` results."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mcp.types import CallToolResult, TextContent

from workspaces.exceptions import UnforgetterError


def ok(payload: Mapping[str, Any]) -> CallToolResult:
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=dict(payload))


def error(exc: UnforgetterError) -> CallToolResult:
    body = {"error": exc.as_dict()}
    text = json.dumps(body, ensure_ascii=False)
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=body, is_error=True
    )


class InternalError(UnforgetterError):
    code = "internal_error"
    action = "Retry in a moment; if it keeps failing, tell the workspace owner."
    http_status = 500
