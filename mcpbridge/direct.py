"""Stateless `tools/call` answered directly: one thread hop, none of the SDK's per-request machinery.

Every MCP request on the SDK's path pays for machinery a stateless tool call does not use: the
Starlette request and middleware stack, the verifier's own thread hop (then the tool's: two
units of work, two connection checkouts), the kernel's per-request runner, request context,
middleware chain, and the per-version result sieve. That is most of a `list_projects` call.

This ASGI wrapper answers the hot case itself: a well-formed stateless `tools/call` POST for one
of our tools (the 2026-07-28 entry, or the handshake era's stateless transport, whose clients
send no session), with a bearer credential this process has verified before. The credential is
re-verified (database re-read, as on every call) and the tool run in one unit of work in a
request thread (mcpbridge.threads). Everything else, and anything about such a request that is
not plainly the happy path (a header or envelope the SDK would refuse, an unknown or refused
credential, an outage while verifying it, a concurrency refusal before the credential is
checked), is handed to the SDK untouched, body replayed: the SDK alone decides every HTTP-level
error, so they stay exactly as they were. Tool-level outcomes (results and tool errors) are the
same bytes the SDK sends; tests/mcpbridge/test_direct.py compares both paths call by call.
Each era's response is written as that era's SDK transport writes it (field order, encoder).
UNFORGETTER["MCP_DIRECT_CALLS"] = false serves everything through the SDK.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pydantic_core
from django.conf import settings
from django.utils import timezone
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http import check_accept_headers
from mcp.server.transport_security import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    TransportSecurityMiddleware,
    TransportSecuritySettings,
)
from mcp.shared.inbound import (
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
)
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
    JSONRPCRequest,
    jsonrpc_message_adapter,
)
from mcp_types import methods as protocol_methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcpbridge import results
from mcpbridge.auth import authenticated_here
from mcpbridge.server import (
    TOOLS,
    answer_in_thread,
    arguments_validated,
    embed_ahead,
    first_read,
    validated_ahead,
)
from mcpbridge.threads import in_request_thread, on_event_loop
from memory.embeddings import embedder_failing
from memory.metrics import CALL_SECONDS, CALLS_RUN
from workspaces.after_answer import Work, collected, run_collected
from workspaces.bearers import ReadAhead, kept_scope, use_recorded_recently
from workspaces.exceptions import RateLimited, UnforgetterError
from workspaces.limits import credential_slot_async, over_rate
from workspaces.scope import AgentScope

_PROTOCOL_VERSION = b"mcp-protocol-version"
_AUTHORIZATION = b"authorization"
_PARAM_HEADER_PREFIX = b"mcp-param-"
_JSON_HEADERS = [(b"content-type", b"application/json")]
# The SDK's limit on a request body (mcpbridge.asgi builds its app with the default): a larger
# one is the SDK's to refuse, before any of it is kept.
MAX_BODY = DEFAULT_MAX_REQUEST_BODY_SIZE
_SERVED_VERSIONS = frozenset((*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS))


@dataclass(frozen=True)
class _Call:
    request_id: Any
    name: str
    arguments: Mapping[str, Any]
    version: str


class DirectToolCalls:
    """Answers a verified credential's stateless tools/call; hands anything else to `app`."""

    def __init__(self, app: ASGIApp, server: MCPServer, security: TransportSecuritySettings) -> None:
        self.app = app
        self.security = TransportSecurityMiddleware(security)
        self.server_info = server._lowlevel_server.server_info_stamp
        # MCP POSTs this worker is serving, from their arrival until the work owed after their
        # answer is done: a call runs on the event loop only when it is the only one.
        self.serving = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or not settings.UNFORGETTER["MCP_DIRECT_CALLS"]
        ):
            await self.app(scope, receive, send)
            return
        self.serving += 1
        try:
            await self._post(scope, receive, send)
        finally:
            self.serving -= 1

    def _alone(self) -> bool:
        """Whether this worker serves no other MCP request now (answered or still owing work)."""
        return self.serving == 1

    async def _post(self, scope: Scope, receive: Receive, send: Send) -> None:
        token, version = _bearer_and_version(scope["headers"])
        kept = kept_scope(token) if token is not None else None
        if token is None or version is None or kept is None:
            await self.app(scope, receive, send)
            return
        body, replay = await _buffered(receive, scope)
        if body is None:
            await self.app(scope, replay, send)
            return
        modern = version in MODERN_PROTOCOL_VERSIONS
        decoded = _decoded(body) if modern else _UNDECODABLE
        early = _embedding_started(kept, decoded)
        request = Request(scope, replay)
        call = await self._acceptable(request) and (
            _modern_call(request, decoded) if modern else _handshake_call(body, version)
        )
        if not call:
            await self.app(scope, replay, send)
            return
        with CALL_SECONDS.labels(call.name).time():
            answered = await _direct_result(token, kept, call.name, call.arguments, early, self._alone)
        if answered is None:
            await self.app(scope, replay, send)
            return
        result, owed = answered
        encoded = self._response(call, result)
        headers = [(b"content-length", str(len(encoded)).encode()), *_JSON_HEADERS]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": encoded})
        if not owed:  # what the answer did not wait for (workspaces.after_answer)
            return
        if self._alone() and settings.UNFORGETTER["MCP_CALLS_ON_LOOP"]:
            on_event_loop(run_collected, owed)  # the answer is sent: the loop only waits
        else:
            await in_request_thread(run_collected, owed)

    async def _acceptable(self, request: Request) -> bool:
        """Whether the transport would take the request: host, origin, content type, Accept."""
        if await self.security.validate_request(request, is_post=True) is not None:
            return False
        content_type = request.headers.get("content-type", "")
        if not any(part.strip() == "application/json" for part in content_type.split(";")[0].split(",")):
            return False
        return check_accept_headers(request)[0]

    def _response(self, call: _Call, result: dict[str, Any]) -> bytes:
        """The JSON-RPC response the SDK's transport writes for `result` in the call's era."""
        if call.version in MODERN_PROTOCOL_VERSIONS:
            # The modern entry: dumped with the stdlib, the server's identity stamped last.
            return results.modern_response(call.request_id, result, {SERVER_INFO_META_KEY: self.server_info})
        # The handshake era's result surface has no resultType; the transport dumps with pydantic.
        del result["resultType"]
        return pydantic_core.to_json({"jsonrpc": "2.0", "id": call.request_id, "result": result})


def _bearer_and_version(headers: list[tuple[bytes, bytes]]) -> tuple[str | None, str | None]:
    """The bearer credential and the protocol version of a request without Mcp-Param headers.

    The version is the header's (the handshake era's default when there is none), or None when
    it is one the SDK would route elsewhere or refuse.
    """
    token = None
    version: str | None = DEFAULT_NEGOTIATED_VERSION
    for name, value in headers:
        if name == _AUTHORIZATION:
            if token is not None or value[:7].lower() != b"bearer ":
                return None, None
            token = value[7:].decode("latin-1")
        elif name == _PROTOCOL_VERSION:
            given = value.decode("latin-1")
            version = given if given in _SERVED_VERSIONS else None
        elif name.startswith(_PARAM_HEADER_PREFIX):
            # The SDK checks them against the tool's schema (ours declare none): its answer.
            return None, None
    return token, version


# A body that is not JSON (`_decoded`).
_UNDECODABLE = object()


def _decoded(body: bytes) -> Any:
    """The JSON of a request body, or _UNDECODABLE."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return _UNDECODABLE


@dataclass(frozen=True)
class _Early:
    """A call's arguments as `validated_ahead` made them as soon as its body was read."""

    name: str
    arguments: Mapping[str, Any]
    validated: BaseModel | UnforgetterError | None


def _embedding_started(kept: AgentScope, decoded: Any) -> _Early | None:
    """Start a get_context or search_memory call's query embedding as soon as its body is read.

    The embedding is the longest wait of a ranked call: it starts here, before the request's
    transport checks and its envelope's classification, which decide only whether this path or
    the SDK's answers it (and then the call's thread hop and credential). A head start only: the
    SDK's path would embed the same text; nothing is answered from it. A credential this process
    holds over its rate starts nothing.
    """
    if not _plain_request(decoded) or over_rate(kept.connection_id):
        return None
    params = decoded["params"]
    name, arguments = params.get("name"), params.get("arguments")
    if name not in TOOLS or arguments is None:
        return None
    validated = validated_ahead(name, arguments)
    embed_ahead(kept, validated)
    return _Early(name, arguments, validated)


def _modern_call(request: Request, decoded: Any) -> _Call | None:
    """A 2026-07-28 POST (its body `_decoded`) that the SDK's modern entry would hand to one of
    our tools."""
    if find_duplicated_routing_header(request.headers.items()) is not None:
        return None
    if not _plain_request(decoded):
        return None
    verdict = classify_inbound_request(decoded, headers=dict(request.headers))
    if isinstance(verdict, InboundLadderRejection):
        return None
    return _tool_call(decoded["id"], decoded["params"], verdict.protocol_version)


def _handshake_call(body: bytes, version: str) -> _Call | None:
    """A handshake-era POST that the SDK's stateless transport would hand to one of our tools."""
    try:
        decoded = pydantic_core.from_json(body)
        message = jsonrpc_message_adapter.validate_python(decoded, by_name=False)
    except ValueError:  # pydantic's ValidationError is one
        return None
    if not (isinstance(message, JSONRPCRequest) and _plain_request(decoded)):
        return None
    meta = decoded["params"].get("_meta")
    if isinstance(meta, Mapping) and PROTOCOL_VERSION_META_KEY in meta:
        return None  # the modern envelope on a handshake-era request: the SDK refuses it
    return _tool_call(message.id, decoded["params"], version)


def _tool_call(request_id: Any, params: dict[str, Any], version: str) -> _Call | None:
    name = params.get("name")
    if name not in TOOLS:
        return None
    try:
        protocol_methods.validate_client_request("tools/call", version, params)
    except (KeyError, ValidationError):
        return None
    arguments = params.get("arguments")
    return _Call(request_id, name, {} if arguments is None else arguments, version)


def _plain_request(decoded: Any) -> bool:
    """A single JSON-RPC 2.0 tools/call request object with an int or string id."""
    if (
        not isinstance(decoded, dict)
        or decoded.get("jsonrpc") != "2.0"
        or decoded.get("method") != "tools/call"
    ):
        return False
    request_id = decoded.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return False
    params = decoded.get("params")
    arguments = params.get("arguments") if isinstance(params, dict) else None
    return isinstance(params, dict) and (arguments is None or isinstance(arguments, dict))


async def _buffered(receive: Receive, scope: Scope) -> tuple[bytes | None, Receive]:
    """The request body, and a receive that replays the messages read before passing on to the
    client's. None for a body that is not whole within the SDK's limit (its 413, then) or that
    the client abandoned: the SDK takes those as they came."""
    read: list[Message] = []

    async def replay() -> Message:
        return read.pop(0) if read else await receive()

    declared = next((value for name, value in scope["headers"] if name == b"content-length"), b"0")
    if not declared.isdigit() or int(declared) > MAX_BODY:
        return None, replay
    size = 0
    while True:
        message = await receive()
        read.append(message)
        if message["type"] != "http.request":
            return None, replay
        size += len(message.get("body", b""))
        if size > MAX_BODY:
            return None, replay
        if not message.get("more_body", False):
            return b"".join(m.get("body", b"") for m in read), replay


async def _direct_result(
    token: str,
    kept: AgentScope,
    name: str,
    arguments: Mapping[str, Any],
    early: _Early | None,
    alone: Callable[[], bool],
) -> tuple[dict[str, Any], list[Work]] | None:
    """The tool's wire result in one unit of work, with the work it owes after its answer; or
    None for the SDK to answer instead. `kept` is the scope the credential was last resolved to
    in this process: a hint for the concurrency slot and the query's early embedding, while the
    credential is verified (and its scope read again) in the request thread. `early` is what
    `_embedding_started` made of these very arguments, if it ran. `alone` tells whether the
    worker serves no other request: then a read runs on the event loop (`_on_loop`)."""
    hint = kept.connection_id
    try:
        async with credential_slot_async(hint):
            # The query starts embedding before the thread hop and the credential's statement,
            # the longest wait of a ranked call; it is answered only once the credential is good.
            if early is not None and early.name == name and early.arguments is arguments:
                validated = early.validated
            else:
                validated = validated_ahead(name, arguments)
                embed_ahead(kept, validated)
            if alone() and _on_loop(token, name):
                CALLS_RUN.labels(name, "event_loop").inc()
                return on_event_loop(_verified_call, token, kept, name, arguments, validated)
            CALLS_RUN.labels(name, "request_thread").inc()
            return await in_request_thread(_verified_call, token, kept, name, arguments, validated)
    except RateLimited as refusal:
        # Refused by the slot, before the credential was checked (the SDK checks it first): the
        # refusal is the answer only for a credential still good, else the SDK's 401 is. Not
        # retried through the SDK: a call held over its rate would then run in the next second.
        if await in_request_thread(authenticated_here, token, hint):
            return results.error_wire(refusal), []
        return None


# Tools whose calls only read (what they owe after the answer is a bundle's cache entry): one
# may hold the event loop for its few milliseconds.
_READS = frozenset(("list_projects", "get_context", "search_memory"))
# Verifying a credential whose use is due to be recorded (a write, once a minute) is left to a
# request thread: on SQLite it may wait behind a writer, holding the loop if run there.
_USE_RECORDED_WITHIN = timedelta(seconds=1)


def _on_loop(token: str, name: str) -> bool:
    """Whether a call of the only request this worker serves runs on its event loop's thread.

    A request thread would cost two wake-ups (the call handed to it, its answer back to the
    loop); the loop would meanwhile only wait. Never for a write (propose_memory), nor for a
    credential whose verification writes its use, nor while the embedder fails (a call on the
    loop waits for its vector at most `LOOP_HELD_SECONDS`, memory.embeddings, and one that gave
    up counts as a failure until the embedder answers). A request that arrives meanwhile is
    read once the call is done (in a request thread it would have waited for the interpreter's
    lock); requests read together take threads, as they count each other
    (tests/mcpbridge/test_direct.py).
    """
    return (
        settings.UNFORGETTER["MCP_CALLS_ON_LOOP"]
        and name in _READS
        and use_recorded_recently(token, timezone.now() + _USE_RECORDED_WITHIN)
        and not embedder_failing()
    )


def _verified_call(
    token: str,
    kept: AgentScope,
    name: str,
    arguments: Mapping[str, Any],
    validated: BaseModel | UnforgetterError | None = None,
) -> tuple[dict[str, Any], list[Work]] | None:
    if validated is None:
        validated = arguments_validated(name, arguments)
    # The tool's first statement (the project's) goes in the credential's, made for the scope
    # the credential was last resolved to; used only if it still carries that very scope.
    read = first_read(kept, validated)
    if not authenticated_here(token, kept.connection_id, ReadAhead(kept, read) if read else None):
        return None
    with collected() as owed:
        return answer_in_thread(name, validated), owed
