"""The direct tools/call path (mcpbridge.direct) answers exactly what the SDK answers, or defers.

Each request is sent twice over real HTTP, once with the direct path on and once with it off
(everything through the SDK), and the two responses are compared byte for byte. A counter on the
direct path's unit of work shows which path served each request.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import httpx
import pytest
from django.conf import settings
from django.test import override_settings

from mcpbridge import direct
from mcpbridge.direct import MAX_BODY
from mcpbridge.server import TOOLS
from memory import embeddings, retrieval
from memory.embeddings import embedder, query_vectors
from memory.services.embeddings import embeddings_refresh
from tests.conftest import LiveServer, Tenant
from tests.readpath import (  # noqa: F401
    PROTOCOL,
    _fresh_bundle_cache,
    add_item,
    raw_call,
    raw_post,
    rpc_body,
    rpc_headers,
)
from unforgetter.asgi import Router
from workspaces import limits
from workspaces.after_answer import run_collected
from workspaces.models import Connection
from workspaces.scope import AgentScope
from workspaces.services import connection_revoke

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tool of every call the direct path ran (in its one unit of work)."""
    calls: list[str] = []
    real = direct._verified_call

    def counted(token: str, kept: AgentScope, name: str, arguments: Any, validated: Any = None) -> Any:
        calls.append(name)
        return real(token, kept, name, arguments, validated)

    monkeypatch.setattr(direct, "_verified_call", counted)
    return calls


@pytest.fixture
def sdk_only() -> Callable[[], Any]:
    """sdk_only(): a context in which every request goes through the SDK."""

    def switch() -> Any:
        return override_settings(UNFORGETTER={**settings.UNFORGETTER, "MCP_DIRECT_CALLS": False})

    return switch


# Each protocol version a stateless client may speak; None: no MCP-Protocol-Version header.
ERAS = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", None]


@pytest.fixture(params=ERAS, ids=[str(era) for era in ERAS])
def era(request: pytest.FixtureRequest) -> str | None:
    era: str | None = request.param
    return era


def _call(live: LiveServer, token: str, tool: str, arguments: Any, era: str | None) -> httpx.Response:
    if era == PROTOCOL:
        return raw_call(live.mcp_url, token, tool, arguments)
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    headers["Authorization"] = f"Bearer {token}"
    if era is not None:
        headers["MCP-Protocol-Version"] = era
    return httpx.post(live.mcp_url, content=json.dumps(body), headers=headers, timeout=30)


def _both(
    live: LiveServer, token: str, tool: str, arguments: Any, sdk_only: Any, era: str | None = PROTOCOL
) -> tuple[Any, Any]:
    with sdk_only():
        through_sdk = _call(live, token, tool, arguments, era)
    direct_answer = _call(live, token, tool, arguments, era)
    return through_sdk, direct_answer


# The replica's freshness moves on between two calls (the consolidator records it as it runs).
_REPLICA_AT = re.compile(rb'(replica_at\\?":\\?")[^"\\]*')


def _same(a: httpx.Response, b: httpx.Response) -> None:
    assert (a.status_code, a.headers["content-type"]) == (b.status_code, b.headers["content-type"])
    assert _REPLICA_AT.sub(rb"\1", a.content) == _REPLICA_AT.sub(rb"\1", b.content)


def _warm(live: LiveServer, token: str) -> None:
    """A first call, through the SDK: the process then knows the credential's connection."""
    assert raw_call(live.mcp_url, token, "list_projects", {}).status_code == 200


def test_a_known_credentials_calls_are_served_directly_with_the_sdks_bytes(
    live: LiveServer, tenant: Tenant, served: list[str], sdk_only: Any, era: str | None
) -> None:
    platform = tenant.projects["platform"]
    add_item(platform, "invoice-worker retries failed payments three times with exponential backoff")
    add_item(platform, "Déploiement: ship to production with `make deploy` — reviewed by the on-call")
    token, _ = tenant.issue()
    _warm(live, token)
    assert served == []
    cases: list[tuple[str, Any]] = [
        ("list_projects", {}),
        ("get_context", {"project_id": "platform", "task": "Change the retry policy of invoice-worker"}),
        ("search_memory", {"project_id": "platform", "query": "How often does invoice-worker retry?"}),
        ("search_memory", {"project_id": "platform", "query": "déploiement production"}),
        ("search_memory", {"project_id": "platform", "query": "retry", "cursor": "not-a-cursor"}),
        ("search_memory", {"project_id": "payroll", "query": "salary"}),
        ("search_memory", {"project_id": "nope", "query": "x"}),
        ("get_context", {"project_id": "platform"}),
        ("get_context", {"project_id": "platform", "task": "x", "extra": 1}),
        ("propose_memory", {"project_id": "platform", "request_id": "short"}),
    ]
    for tool, arguments in cases:
        through_sdk, direct_answer = _both(live, token, tool, arguments, sdk_only, era)
        _same(through_sdk, direct_answer)
    assert served == [tool for tool, _ in cases]
    # Results and tool errors both came back, as tool results.
    errors = [
        json.loads(r.content)["result"]["isError"] for r in (_call(live, token, t, a, era) for t, a in cases)
    ]
    assert errors == [False, False, False, False, True, True, True, True, True, True]


def test_proposals_are_answered_alike(
    live: LiveServer, tenant: Tenant, served: list[str], sdk_only: Any
) -> None:
    token, _ = tenant.issue()
    reader, _ = tenant.issue(role=Connection.Role.READER)
    _warm(live, token)
    _warm(live, reader)
    change = {"op": "add_fact", "kind": "fact", "text": "The staging database is rebuilt every Sunday night."}
    evidence = [{"ref": "notes/staging.md", "trust": "trusted"}]
    for request_id in ("direct-test-0001", "direct-test-0002"):
        arguments = {
            "project_id": "platform",
            "request_id": request_id,
            "change": change,
            "evidence": evidence,
        }
        with sdk_only():
            first = raw_call(live.mcp_url, token, "propose_memory", arguments)
        # The replay of the same request_id: duplicate_request, the original proposal.
        replay_sdk, replay_direct = _both(live, token, "propose_memory", arguments, sdk_only)
        _same(replay_sdk, replay_direct)
        assert json.loads(first.content)["result"]["isError"] is False
    refused_sdk, refused_direct = _both(
        live,
        reader,
        "propose_memory",
        {"project_id": "platform", "request_id": "direct-test-0003", "change": change, "evidence": evidence},
        sdk_only,
    )
    _same(refused_sdk, refused_direct)
    assert (
        json.loads(refused_direct.content)["result"]["structuredContent"]["error"]["code"]
        == "forbidden_scope"
    )
    assert served == ["propose_memory", "propose_memory", "propose_memory"]


def test_a_revoked_credential_is_refused_on_the_next_call_with_the_sdks_401(
    live: LiveServer, tenant: Tenant, served: list[str], sdk_only: Any
) -> None:
    token, connection = tenant.issue()
    _warm(live, token)
    assert raw_call(live.mcp_url, token, "list_projects", {}).status_code == 200
    assert served == ["list_projects"]
    connection_revoke(connection=connection)
    refused = raw_call(live.mcp_url, token, "list_projects", {})
    with sdk_only():
        refused_sdk = raw_call(live.mcp_url, token, "list_projects", {})
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == refused_sdk.headers["www-authenticate"]
    _same(refused, refused_sdk)
    # The unit of work verified the credential and ran no tool: the SDK gave the answer.
    assert served == ["list_projects", "list_projects"]


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda body, headers: (body, {**headers, "MCP-Protocol-Version": "2099-01-01"}), "unknown version"),
        (
            lambda body, headers: (body, {**headers, "MCP-Protocol-Version": "2025-11-25"}),
            "envelope, old era",
        ),
        (lambda body, headers: (body, {**headers, "Content-Type": "application/jsonx"}), "content type"),
        (lambda body, headers: (body, {**headers, "Mcp-Name": "get_context"}), "header mismatch"),
        (lambda body, headers: (body, {**headers, "Accept": "text/html"}), "not acceptable"),
        (lambda body, headers: (body, {**headers, "Host": "evil.example"}), "dns rebinding"),
        (lambda body, headers: (body, {**headers, "Mcp-Param-Project": "x"}), "param header"),
        (lambda body, headers: ({**body, "id": None}, headers), "null id"),
        (
            lambda body, headers: ({**body, "params": {**body["params"], "name": "nope"}}, headers),
            "unknown tool",
        ),
        (lambda body, headers: ({**body, "params": {"name": "list_projects"}}, headers), "no envelope"),
        (lambda body, headers: ([body], headers), "batch"),
        (lambda body, headers: ({**body, "pad": "x" * MAX_BODY}, headers), "over the body limit"),
    ],
)
def test_anything_but_the_plain_call_is_left_to_the_sdk(
    live: LiveServer, tenant: Tenant, served: list[str], sdk_only: Any, change: Any, why: str
) -> None:
    token, _ = tenant.issue()
    _warm(live, token)
    body, headers = change(
        rpc_body("tools/call", {"name": "list_projects", "arguments": {}}),
        rpc_headers(token, name="list_projects"),
    )
    answer = httpx.post(live.mcp_url, content=json.dumps(body), headers=headers, timeout=30)
    with sdk_only():
        answer_sdk = httpx.post(live.mcp_url, content=json.dumps(body), headers=headers, timeout=30)
    assert served == [], why
    assert answer.status_code == answer_sdk.status_code, why
    if why == "over the body limit":
        assert answer.status_code == 413
    assert answer.content == answer_sdk.content, why


def test_an_unknown_credential_never_reaches_the_unit_of_work(
    live: LiveServer, tenant: Tenant, served: list[str]
) -> None:
    answer = raw_post(
        live.mcp_url,
        "unf_not_a_real_token",
        json.dumps(rpc_body("tools/call", {"name": "list_projects", "arguments": {}})),
        name="list_projects",
    )
    assert answer.status_code == 401
    assert served == []


def test_a_revoked_credential_held_over_its_rate_is_told_401_not_rate_limited(
    live: LiveServer, tenant: Tenant
) -> None:
    token, connection = tenant.issue()
    with override_settings(UNFORGETTER={**settings.UNFORGETTER, "CREDENTIAL_CALLS_PER_SECOND": 1}):
        _warm(live, token)
        over = raw_call(live.mcp_url, token, "list_projects", {})
        connection_revoke(connection=connection)
        refused = raw_call(live.mcp_url, token, "list_projects", {})
    # Either the second call was refused for its rate (then the third was held by its slot) or
    # the second fell into a new second; a revoked credential is told so either way.
    assert over.status_code == 200
    assert refused.status_code == 401


def test_a_streamed_body_over_the_limit_is_refused_by_the_sdk_without_being_kept(
    live: LiveServer, tenant: Tenant, served: list[str]
) -> None:
    token, _ = tenant.issue()
    _warm(live, token)
    body = json.dumps(rpc_body("tools/call", {"name": "list_projects", "arguments": {}}))
    padded = body[:-1] + ', "pad": "' + "x" * MAX_BODY + '"}'

    def chunks() -> Iterator[bytes]:  # no Content-Length: the size is known only as it arrives
        data = padded.encode()
        for start in range(0, len(data), 256 * 1024):
            yield data[start : start + 256 * 1024]

    headers = rpc_headers(token, name="list_projects")
    answer = httpx.post(live.mcp_url, content=chunks(), headers=headers, timeout=30)
    assert (answer.status_code, answer.text) == (413, "Request body too large")
    assert served == []


@pytest.mark.skipif(embedder() is None, reason="the local model's package is not installed")
def test_a_ranked_calls_query_starts_embedding_before_its_credential_is_checked(
    live: LiveServer, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    platform = tenant.projects["platform"]
    fact = add_item(platform, "invoice-worker retries failed payments three times with exponential backoff")
    embeddings_refresh()
    events: list[str] = []
    verifying = direct._verified_call
    prefetching = retrieval.prefetch_query_text

    def verified(token: str, kept: AgentScope, name: str, arguments: Any, validated: Any = None) -> Any:
        events.append("verify")
        return verifying(token, kept, name, arguments, validated)

    def prefetch(text: str) -> None:
        events.append(f"embed {text}")
        prefetching(text)

    monkeypatch.setattr(direct, "_verified_call", verified)
    monkeypatch.setattr(retrieval, "prefetch_query_text", prefetch)
    token, connection = tenant.issue()
    _warm(live, token)
    task = {"project_id": "platform", "task": "Change the retry policy of invoice-worker"}
    question = {"project_id": "platform", "query": "How often does invoice-worker retry?"}
    # The first ranked call in the project: its query is embedded once the project is read.
    assert raw_call(live.mcp_url, token, "get_context", task).status_code == 200
    assert events[0] == "verify"
    events.clear()
    # From then on, before the thread hop and the credential's statement.
    for tool, arguments, text in (
        ("get_context", {**task, "task": "Raise the retry limit"}, "Raise the retry limit"),
        ("search_memory", question, "How often does invoice-worker retry?"),
    ):
        answered = json.loads(raw_call(live.mcp_url, token, tool, arguments).content)["result"]
        assert answered["isError"] is False
        assert events[:2] == [f"embed {text}", "verify"]
        events.clear()
    # Nothing else is embedded ahead: a proposal, a ref, an argument the call refuses, nor a
    # project this credential's scope never read.
    events.clear()
    proposal = {"project_id": "platform", "request_id": "ahead-0001", "change": {"op": "add_fact"}}
    raw_call(live.mcp_url, token, "propose_memory", proposal)
    raw_call(live.mcp_url, token, "search_memory", {"project_id": "platform", "query": fact.ref})
    raw_call(live.mcp_url, token, "get_context", {**task, "extra": 1})
    raw_call(live.mcp_url, token, "get_context", {**task, "task": "retry\x00limit"})
    narrow, _ = tenant.issue(projects=["handbook"])
    _warm(live, narrow)
    refused = json.loads(raw_call(live.mcp_url, narrow, "get_context", task).content)["result"]
    assert refused["structuredContent"]["error"]["code"] == "forbidden_scope"
    assert not [event for event in events if event.startswith("embed")]
    # Nor the call of a credential this process holds until its rate window ends (it is
    # refused then): a flood of such calls makes the embedder do nothing.
    limits._over_rate_until[connection.pk] = time.time() + 0.5
    held = json.loads(raw_call(live.mcp_url, token, "get_context", task).content)["result"]
    assert held["structuredContent"]["error"]["code"] == "rate_limited"
    assert not [event for event in events if event.startswith("embed")]


@pytest.fixture
def ran_in(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(tool, the thread it ran in: "loop" or "request thread") of every call the direct path ran."""
    calls: list[tuple[str, str]] = []
    real = direct._verified_call

    def thread() -> str:
        name = threading.current_thread().name
        return "request thread" if name.startswith("mcp-request") else name

    def recorded(token: str, kept: AgentScope, name: str, arguments: Any, validated: Any = None) -> Any:
        calls.append((name, thread()))
        return real(token, kept, name, arguments, validated)

    def owed(work: list[Any]) -> None:
        calls.append(("owed after the answer", thread()))
        run_collected(work)

    monkeypatch.setattr(direct, "_verified_call", recorded)
    monkeypatch.setattr(direct, "run_collected", owed)
    return calls


def _idle(live: LiveServer) -> None:
    """Wait until the server serves no MCP request (their work owed after the answer done)."""
    router = live.server.config.app
    assert isinstance(router, Router)
    calls = router.mcp_app
    assert isinstance(calls, direct.DirectToolCalls)
    deadline = time.monotonic() + 10
    while calls.serving:
        assert time.monotonic() < deadline, "the server still serves a request"
        time.sleep(0.005)


def _calls_of_each_tool(live: LiveServer, tenant: Tenant, token: str) -> None:
    add_item(tenant.projects["platform"], "invoice-worker retries failed payments three times")
    proposal = {
        "project_id": "platform",
        "request_id": "on-loop-0001",
        "change": {"op": "add_fact", "kind": "fact", "text": "The staging database is rebuilt on Sundays."},
        "evidence": [{"ref": "notes/staging.md", "trust": "trusted"}],
    }
    for tool, arguments in (
        ("list_projects", {}),
        ("get_context", {"project_id": "platform", "task": "Change the retry policy of invoice-worker"}),
        ("search_memory", {"project_id": "platform", "query": "How often does invoice-worker retry?"}),
        ("propose_memory", proposal),
    ):
        _idle(live)
        answered = json.loads(raw_call(live.mcp_url, token, tool, arguments).content)["result"]
        assert answered["isError"] is False, answered


_RUN = re.compile(r'^unforgetter_mcp_calls_run_total\{ran_on="(\w+)",tool="(\w+)"\} ([0-9.]+)$', re.M)


def _runs(live: LiveServer) -> dict[tuple[str, str], float]:
    """/metrics' count of directly answered calls, by (tool, where their work ran)."""
    text = httpx.get(f"{live.url}/metrics", timeout=30).text
    return {(tool, ran_on): float(count) for ran_on, tool, count in _RUN.findall(text)}


def test_the_only_call_a_worker_serves_runs_on_its_event_loop_if_it_only_reads(
    live: LiveServer, tenant: Tenant, ran_in: list[tuple[str, str]]
) -> None:
    token, _ = tenant.issue()
    _warm(live, token)
    before = _runs(live)
    _calls_of_each_tool(live, tenant, token)
    after = _runs(live)
    # /metrics counts where they ran, for the operator.
    for tool, ran_on in (
        ("list_projects", "event_loop"),
        ("get_context", "event_loop"),
        ("search_memory", "event_loop"),
        ("propose_memory", "request_thread"),
    ):
        assert after[tool, ran_on] - before.get((tool, ran_on), 0.0) == 1.0
    assert ran_in == [
        ("list_projects", "live-asgi"),  # the live server's event loop (tests.conftest)
        ("get_context", "live-asgi"),
        ("owed after the answer", "live-asgi"),  # the bundle kept in the cache, once it is sent
        ("search_memory", "live-asgi"),
        ("propose_memory", "request thread"),
    ]


@pytest.mark.parametrize(
    "setting",
    [{"MCP_CALLS_ON_LOOP": False}, {"LAST_USED_RESOLUTION": timedelta(0)}],
    ids=["switched off", "the credential's use written on every call"],
)
def test_calls_run_in_request_threads_when_switched_off_or_when_verifying_writes(
    live: LiveServer, tenant: Tenant, ran_in: list[tuple[str, str]], setting: dict[str, Any]
) -> None:
    token, connection = tenant.issue()
    _warm(live, token)
    with override_settings(UNFORGETTER={**settings.UNFORGETTER, **setting}):
        _calls_of_each_tool(live, tenant, token)
    assert [thread for name, thread in ran_in if name in TOOLS] == ["request thread"] * 4
    # The bundle's cache entry, owed after the answer, writes no use: switched off, it too
    # takes a thread.
    owed = "request thread" if "MCP_CALLS_ON_LOOP" in setting else "live-asgi"
    assert ("owed after the answer", owed) in ran_in
    if "LAST_USED_RESOLUTION" in setting:  # and each call still wrote it
        connection.refresh_from_db()
        assert connection.last_used_at is not None


def test_a_call_arriving_while_another_is_served_runs_in_a_request_thread(
    live: LiveServer, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop stays free for other requests while one is under way: a lone read holds it only
    when nothing else is in progress."""
    token, _ = tenant.issue()
    other, _ = tenant.issue(actor="other@tests")  # a credential's own calls queue for its slot
    _warm(live, token)
    _warm(live, other)
    real = direct._verified_call
    proposing, release = threading.Event(), threading.Event()
    threads: dict[str, str] = {}

    def held(token: str, kept: AgentScope, name: str, arguments: Any, validated: Any = None) -> Any:
        threads[name] = threading.current_thread().name
        if name == "propose_memory":
            proposing.set()
            assert release.wait(10)
        return real(token, kept, name, arguments, validated)

    monkeypatch.setattr(direct, "_verified_call", held)
    proposal = {"project_id": "platform", "request_id": "on-loop-0002", "change": {"op": "add_fact"}}
    _idle(live)
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(raw_call, live.mcp_url, token, "propose_memory", proposal)
        assert proposing.wait(10)
        try:
            listed = raw_call(live.mcp_url, other, "list_projects", {})
        finally:
            release.set()
        assert pending.result(10).status_code == 200
    assert listed.status_code == 200
    assert threads["list_projects"].startswith("mcp-request")
    assert threads["propose_memory"].startswith("mcp-request")


def test_requests_that_queued_while_the_loop_was_busy_run_in_request_threads(
    live: LiveServer, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Requests sent while a call holds the event loop are read together once it is done; none
    of them then holds the loop while the others wait to be read. Each agent keeps its
    connection alive, as MCP clients do."""
    tokens = [tenant.issue(actor=f"agent-{i}@tests")[0] for i in range(3)]
    agents = [httpx.Client(timeout=30) for _ in tokens]

    def call(agent: httpx.Client, token: str) -> httpx.Response:
        body = json.dumps(rpc_body("tools/call", {"name": "list_projects", "arguments": {}}))
        return agent.post(live.mcp_url, content=body, headers=rpc_headers(token, name="list_projects"))

    for agent, token in zip(agents, tokens, strict=True):
        assert call(agent, token).status_code == 200  # known here, its connection open
    real = direct._verified_call
    holding, release = threading.Event(), threading.Event()
    threads: dict[str, str] = {}

    def held(token: str, kept: AgentScope, name: str, arguments: Any, validated: Any = None) -> Any:
        threads[token] = threading.current_thread().name
        if token == tokens[0]:
            holding.set()
            assert release.wait(10)
        return real(token, kept, name, arguments, validated)

    monkeypatch.setattr(direct, "_verified_call", held)
    _idle(live)
    with ThreadPoolExecutor(3) as pool:
        answers = [pool.submit(call, agents[0], tokens[0])]
        assert holding.wait(10)
        try:
            answers += [pool.submit(call, agents[i], tokens[i]) for i in (1, 2)]
            time.sleep(0.3)  # both sent, waiting to be read
        finally:
            release.set()
        assert [answer.result(10).status_code for answer in answers] == [200] * 3
    for agent in agents:
        agent.close()
    assert threads[tokens[0]] == "live-asgi"
    assert threads[tokens[1]].startswith("mcp-request")
    assert threads[tokens[2]].startswith("mcp-request")


class _Refusing:
    """An embedder whose endpoint refuses every text."""

    def __init__(self, name: str) -> None:
        self.name = name

    def embed(self, texts: list[str]) -> Any:
        raise ConnectionError("connection refused")


def test_while_the_embedder_fails_calls_take_request_threads(
    live: LiveServer, tenant: Tenant, ran_in: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An embedder that hangs holds a call for its timeout: after a failure, not the loop's."""
    add_item(tenant.projects["platform"], "invoice-worker retries failed payments three times")
    embeddings_refresh()  # the project has vectors: its calls embed their texts
    working, build = embedder(), embeddings._build
    assert working is not None
    token, _ = tenant.issue()
    _warm(live, token)
    monkeypatch.setattr(embeddings, "RESTING_SECONDS", 0.0)  # asked again on the next call
    query_vectors.clear()

    def ranked(task: str) -> None:
        _idle(live)
        arguments = {"project_id": "platform", "task": task}
        assert (
            json.loads(raw_call(live.mcp_url, token, "get_context", arguments).content)["result"]["isError"]
            is False
        )

    monkeypatch.setattr(embeddings, "_build", lambda *_: _Refusing(working.name))
    monkeypatch.setattr(embeddings, "_configured", {})
    ranked("Change the retry policy of invoice-worker")  # on the loop: it has not failed yet
    ranked("Raise the retry limit of invoice-worker")  # it failed: a request thread
    monkeypatch.setattr(embeddings, "_build", build)
    monkeypatch.setattr(embeddings, "_configured", {})
    ranked("Lower the retry limit of invoice-worker")  # a request thread, and it answers
    ranked("Remove the retry limit of invoice-worker")  # the loop's again
    assert [thread for name, thread in ran_in if name == "get_context"] == [
        "live-asgi",
        "request thread",
        "request thread",
        "live-asgi",
    ]
    query_vectors.clear()


class _Sleepy:
    """An embedder that answers as `like` does, `seconds` late."""

    def __init__(self, like: Any, seconds: float) -> None:
        self.name = like.name
        self._like = like
        self._seconds = seconds

    def embed(self, texts: list[str]) -> Any:
        time.sleep(self._seconds)
        return self._like.embed(texts)


def test_a_call_on_the_loop_waits_for_its_vector_a_bounded_time(
    live: LiveServer, tenant: Tenant, ran_in: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """It ranks by words after LOOP_HELD_SECONDS; calls take threads until the embedder answers."""
    add_item(tenant.projects["platform"], "invoice-worker retries failed payments three times")
    embeddings_refresh()
    working, configured = embedder(), dict(embeddings._configured)
    token, _ = tenant.issue()
    _warm(live, token)
    monkeypatch.setattr(retrieval, "LOOP_HELD_SECONDS", 0.05)
    query_vectors.clear()

    def why(query: str) -> str:
        _idle(live)
        answered = raw_call(live.mcp_url, token, "search_memory", {"project_id": "platform", "query": query})
        results = json.loads(answered.content)["result"]["structuredContent"]["results"]
        return str(results[0]["why"])

    monkeypatch.setattr(embeddings, "_build", lambda *_: _Sleepy(working, 1.0))
    monkeypatch.setattr(embeddings, "_configured", {})
    # On the loop: its vector is a second away, so it is answered by its words.
    assert why("How often does invoice-worker retry?") == "matches words of the query"
    # In a request thread, which waits for its vector; then the embedder has answered.
    assert "meaning" in why("How many times does invoice-worker retry?")
    monkeypatch.setattr(embeddings, "_configured", configured)  # the model as it was, loaded
    assert "meaning" in why("What does invoice-worker do when a payment fails?")  # the loop's again
    assert [thread for name, thread in ran_in if name == "search_memory"] == [
        "live-asgi",
        "request thread",
        "live-asgi",
    ]
    query_vectors.clear()
