"""The direct path's response bytes: exactly what dumping the whole response would give."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcpbridge import results
from workspaces.exceptions import InvalidRequest

META = {"io.modelcontextprotocol/serverInfo": {"name": "unforgetter", "version": "1.0"}}
PAYLOADS: list[dict[str, Any]] = [
    {"projects": []},
    {"task": 'Retry "invoice-worker" 5 times\n\tthen back off \\ 2x', "score": 0.1 + 0.2, "n": 10**20},
    {"facts": [{"text": "Déployer à 17 h — ≥ 3 replicas 🚀", "taint": None, "ok": True}]},
    {"text": "control \x00\x1f and \u2028 line separators", "nested": {"a": [1, 2.5e-07, False]}},
]


def _dumped(request_id: str | int, result: dict[str, Any]) -> bytes:
    response = {"jsonrpc": "2.0", "id": request_id, "result": {**result, "_meta": META}}
    return json.dumps(response, separators=(",", ":")).encode()


@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize("request_id", [7, 'req-\u00e9"1'])
def test_an_ok_result_is_written_as_the_whole_response_would_be_dumped(
    payload: dict[str, Any], request_id: str | int
) -> None:
    assert results.modern_response(request_id, results.ok_wire(payload), META) == _dumped(
        request_id, results.ok_wire(payload)
    )


def test_a_float_in_an_ascii_result_is_written_as_the_sdk_s_serialiser_writes_it() -> None:
    """The same value as dumping the whole response, the structured content in the bytes
    pydantic_core (the SDK's serialiser) gives it: 2.5e-7, where json.dumps writes 2.5e-07."""
    payload = {"score": 2.5e-07, "n": [1, 0.5]}
    written = results.modern_response(7, results.ok_wire(payload), META)
    assert json.loads(written) == json.loads(_dumped(7, results.ok_wire(payload)))
    assert b'"structuredContent":{"score":2.5e-7,"n":[1,0.5]},' in written
    assert json.loads(written)["result"]["content"][0]["text"] == '{"score":2.5e-7,"n":[1,0.5]}'


def test_an_error_result_is_dumped_whole() -> None:
    wire = results.error_wire(InvalidRequest("query must contain words to search for."))
    assert results.modern_response(3, wire, META) == _dumped(3, wire)


def test_a_result_changed_after_it_was_made_is_dumped_whole() -> None:
    wire = results.ok_wire({"projects": []})
    del wire["resultType"]
    assert results.modern_response(3, wire, META) == _dumped(3, wire)


def test_a_payload_the_sdk_s_serialiser_refuses_is_still_written() -> None:
    """A lone surrogate (which validated arguments and the databases refuse) is written by
    json.dumps rather than failing the call."""
    wire = results.ok_wire({"text": "half \ud800 a pair"})
    assert wire["content"][0]["text"] == '{"text":"half \ud800 a pair"}'
    assert results.modern_response(3, wire, META) == _dumped(3, wire)
