"""Bad input of every kind gets `invalid_request` (or the specific code): never a 500 or a traceback."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import LiveServer, Tenant
from tests.readpath import (  # noqa: F401
    RecordingMCPClient,
    _fresh_bundle_cache,
    add_item,
    all_items,
    raw_call,
    raw_post,
    rpc_body,
    sdk_factory,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sdk(live: LiveServer) -> Callable[..., RecordingMCPClient]:
    return sdk_factory(live)


MEGABYTE = "a" * 1_000_000

BAD_ARGUMENTS: list[tuple[str, dict[str, Any], str]] = [
    # (tool, arguments, the field the message must name)
    ("list_projects", {"project_id": "platform"}, "project_id"),
    ("get_context", {}, "project_id"),
    ("get_context", {"project_id": "platform"}, "task"),
    ("get_context", {"project_id": 42, "task": "deploy"}, "project_id"),
    ("get_context", {"project_id": "platform", "task": ["deploy"]}, "task"),
    ("get_context", {"project_id": "platform", "task": None}, "task"),
    ("get_context", {"project_id": "platform", "task": ""}, "task"),
    ("get_context", {"project_id": "", "task": "deploy"}, "project_id"),
    ("get_context", {"project_id": "platform", "task": MEGABYTE}, "task"),
    ("get_context", {"project_id": MEGABYTE, "task": "deploy"}, "project_id"),
    ("get_context", {"project_id": "platform", "task": "dep\x00loy"}, "task"),
    ("get_context", {"project_id": "plat\x00form", "task": "deploy"}, "project_id"),
    ("get_context", {"project_id": "../platform", "task": "deploy"}, "project_id"),
    ("get_context", {"project_id": "platform", "task": "deploy", "workspace": "globex"}, "workspace"),
    ("search_memory", {"project_id": "platform"}, "query"),
    ("search_memory", {"project_id": "platform", "query": {"$ne": 1}}, "query"),
    ("search_memory", {"project_id": "platform", "query": ""}, "query"),
    ("search_memory", {"project_id": "platform", "query": MEGABYTE}, "query"),
    ("search_memory", {"project_id": "platform", "query": "bill\x00ing"}, "query"),
    ("search_memory", {"project_id": "platform", "query": "billing", "cursor": 10}, "cursor"),
    ("search_memory", {"project_id": "platform", "query": "billing", "cursor": "c" * 100_000}, "cursor"),
    ("search_memory", {"project_id": "platform", "query": "billing", "cursor": "a\x00b"}, "cursor"),
    ("search_memory", {"project_id": "platform", "query": "billing", "page": 2}, "page"),
]


@pytest.mark.parametrize(("tool", "arguments", "field"), BAD_ARGUMENTS, ids=lambda v: str(v)[:40])
def test_bad_arguments_are_invalid_request_naming_the_field(
    tenant: Tenant, sdk, mode: str, tool: str, arguments: dict[str, Any], field: str
) -> None:
    token, _ = tenant.issue()
    error = sdk(token, mode).error(tool, arguments)
    assert error["code"] == "invalid_request"
    assert field in error["message"]
    assert len(error["message"]) < 600, "the message must not echo the input"
    assert "Traceback" not in error["message"]


@pytest.mark.parametrize("query", ["   ", "!!! ??? ...", "---", '""', "_"])
def test_a_query_without_words_is_invalid_request(tenant: Tenant, sdk, mode: str, query: str) -> None:
    token, _ = tenant.issue()
    error = sdk(token, mode).error("search_memory", {"project_id": "platform", "query": query})
    assert error["code"] == "invalid_request"


# What each query must give against a project whose one item is about billing: the item, no
# results, or invalid_request (no words at all). Operators are words or the exclusions and
# phrases search_memory's description promises, never syntax errors.
SYNTAX_QUERIES = [
    ("billing & | ! ( ) : * <->", "found"),
    ("'billing'", "found"),
    ("billing:*", "found"),
    ("-billing", "nothing"),
    ("webhooks -billing", "nothing"),
    ("invoice-worker billing", "found"),
    ('"unclosed', "nothing"),
    ("OR AND NOT", "nothing"),
    ("\\", "invalid_request"),
    ("%_%", "invalid_request"),
]


@pytest.mark.parametrize(("query", "expected"), SYNTAX_QUERIES)
def test_tsquery_and_fts5_syntax_in_a_query_is_searched_as_words(
    tenant: Tenant, sdk, mode: str, query: str, expected: str
) -> None:
    item = add_item(tenant.projects["platform"], "The billing service retries webhooks three times.")
    token, _ = tenant.issue()
    result = sdk(token, mode).call("search_memory", {"project_id": "platform", "query": query})
    content = result.structured_content
    assert content is not None
    if expected == "invalid_request":
        assert result.is_error
        assert content["error"]["code"] == "invalid_request"
        return
    assert not result.is_error, content
    refs = [r["ref"] for r in content["results"]]
    assert refs == ([item.ref] if expected == "found" else [])


@pytest.mark.parametrize(
    "task", ["!!!", "   ", "a" * 2_000, "日本語のタスク", "emoji 🚀 deploy", "x" + "\u202e" * 10]
)
def test_get_context_copes_with_odd_but_valid_tasks(tenant: Tenant, sdk, mode: str, task: str) -> None:
    item = add_item(tenant.projects["platform"], "Deploys go through the release train.")
    token, _ = tenant.issue()
    result = sdk(token, mode).call("get_context", {"project_id": "platform", "task": task})
    content = result.structured_content
    assert content is not None
    assert not result.is_error, content
    assert content["context_id"].startswith("ctx_")
    # The project's one item is served whatever the task's words (or lack of them).
    assert [i["ref"] for i in all_items(content)] == [item.ref]


# Input no SDK client would send: raw bytes on the wire, in the stateless era.

CALL = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": '
LONE_SURROGATE = b'{"project_id": "platform", "query": "bill\\ud800ing"}'


def test_a_lone_surrogate_is_invalid_request(tenant: Tenant, live) -> None:
    token, _ = tenant.issue()
    body = json.dumps(rpc_body("tools/call", {"name": "search_memory", "arguments": {}}))
    body = body.replace('"arguments": {}', '"arguments": ' + LONE_SURROGATE.decode())
    response = raw_post(live.mcp_url, token, body.encode(), name="search_memory")
    assert response.status_code == 200
    error = response.json()["result"]["structuredContent"]["error"]
    assert error["code"] == "invalid_request"
    assert "query" in error["message"]


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"\xff\xfe\x00garbage",
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search_memory", '
        b'"arguments": {"project_id": "platform", "query": "caf\xe9"}}}',
        b"[]",
        b"{}",
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": "nope"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 7}}',
        CALL + b'{"name": "search_memory", "arguments": "x"}}',
        CALL + b'{"name": "no_such_tool", "arguments": {}}}',
        b"[" + b"[" * 10_000 + b"]" * 10_000 + b"]",
        CALL
        + b'{"name": "search_memory", "arguments": {"project_id": "platform", "query": "'
        + b"x" * 1_000_000
        + b'"}}}',
    ],
    ids=lambda b: repr(b[:30]),
)
def test_malformed_requests_never_get_a_500_or_a_traceback(tenant: Tenant, live, body: bytes) -> None:
    token, _ = tenant.issue()
    response = raw_post(live.mcp_url, token, body)
    assert response.status_code < 500, response.text[:500]
    assert "Traceback" not in response.text
    assert 'File "' not in response.text


def test_arguments_of_the_wrong_json_type_are_refused_without_a_500(tenant: Tenant, live) -> None:
    token, _ = tenant.issue()
    for arguments in [[], "platform", 7]:
        response = raw_call(live.mcp_url, token, "get_context", arguments)
        assert response.status_code < 500
        assert "Traceback" not in response.text
        # Not an object: the SDK refuses the call itself, as invalid params (JSON-RPC -32602).
        assert response.json()["error"]["code"] == -32602, arguments
    # No arguments at all: the tool's own refusal, naming what is missing.
    response = raw_call(live.mcp_url, token, "get_context", None)
    assert response.status_code < 500
    assert "Traceback" not in response.text
    error = response.json()["result"]["structuredContent"]["error"]
    assert error["code"] == "invalid_request"
    assert "project_id" in error["message"]
