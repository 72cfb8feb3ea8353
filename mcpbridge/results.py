"""Tool results: structured content plus the same JSON as text, errors as `isError` results.

Each comes as the SDK's CallToolResult (the SDK's path) and as its 2026-07-28 wire form, the dict
the SDK would send for it (the direct path, mcpbridge.direct).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mcp.types import CallToolResult, TextContent
from pydantic_core import PydanticSerializationError, to_json

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


class _OkWire(dict[str, Any]):
    """An `ok_wire` result: its text is its structured content's JSON (`_text`)."""


def ok_wire(payload: Mapping[str, Any]) -> dict[str, Any]:
    return _OkWire(_wire(_text(payload), dict(payload), is_error=False))


def error_wire(exc: UnforgetterError) -> dict[str, Any]:
    body = _error_body(exc)
    return _wire(json.dumps(body, ensure_ascii=False), body, is_error=True)


def _text(payload: Mapping[str, Any]) -> str:
    """The payload's compact JSON, as the SDK's serialiser writes it (pydantic_core: a bundle's 20
    KB in a quarter of `json.dumps`' time, and its floats as the structured content's). A lone
    surrogate, which it refuses, cannot come from validated arguments or a database; should one
    all the same, `json.dumps` writes it as before."""
    try:
        return to_json(payload).decode()
    except PydanticSerializationError:
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


def modern_response(request_id: str | int, result: dict[str, Any], meta: dict[str, Any]) -> bytes:
    """The JSON-RPC response of a 2026-07-28 wire result with its `_meta`, byte for byte what
    `json.dumps(response, separators=(",", ":"))` gives, but for floats (none in the tools'
    results today), written as the SDK writes them where the text is ASCII (below).

    A result of `ok_wire` carries its structured content twice, once as the text: where that
    text is ASCII it is already the structured content's compact JSON (`ensure_ascii` changes
    nothing else; `_text` writes a float as pydantic_core does, 2.5e-7 for json.dumps' 2.5e-07,
    which is what the SDK's own path sends), so it is written in as it is instead of being
    encoded again (a bundle is about 20 KB of JSON).
    """
    text = _ok_text(result)
    if text is None:
        response = {"jsonrpc": "2.0", "id": request_id, "result": {**result, "_meta": meta}}
        return json.dumps(response, separators=(",", ":")).encode()
    dumps = json.dumps
    return (
        f'{{"jsonrpc":"2.0","id":{dumps(request_id)},"result":{{"content":[{{"text":{dumps(text)},'
        f'"type":"text"}}],"isError":false,"resultType":"complete","structuredContent":{text},'
        f'"_meta":{dumps(meta, separators=(",", ":"))}}}}}'
    ).encode()


def _ok_text(result: dict[str, Any]) -> str | None:
    """The text of an `ok_wire` result where it is its structured content's JSON as the response
    writes it (ASCII: `ensure_ascii` changes nothing), else None."""
    if not isinstance(result, _OkWire) or list(result) != _OK_KEYS:
        return None
    text: str = result["content"][0]["text"]
    return text if text.isascii() else None


_OK_KEYS = ["content", "isError", "resultType", "structuredContent"]
