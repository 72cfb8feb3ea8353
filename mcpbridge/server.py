"""The MCP server: four tools over the official SDK's MCPServer.

Each tool validates its arguments against its published model (so bad input is a structured
`invalid_request`, never the SDK's plain-text validation error), resolves the credential's
AgentScope, calls one selector or service in a request thread (mcpbridge.threads) and renders the result.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Literal, NamedTuple, TypeVar

import mcp.server.mcpserver.server as sdk_server
from django.conf import settings
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, ValidationError

from mcpbridge import results
from mcpbridge.auth import SCOPE_PROPOSE, SCOPE_READ, ConnectionTokenVerifier, current_scope, require_scope
from mcpbridge.outputs import OUTPUT_SCHEMAS
from mcpbridge.schemas import (
    MAX_EVIDENCE_ITEMS,
    MAX_EVIDENCE_REF,
    MAX_EVIDENCE_TEXT,
    MAX_PROPOSAL_TEXT,
    PROTECTED_TARGET_ERROR,
    GetContextArgs,
    ListProjectsArgs,
    ProposeMemoryArgs,
    SearchMemoryArgs,
    describe_validation_error,
)
from mcpbridge.threads import in_request_thread
from memory import retrieval
from memory.context import context_named
from memory.contract import Bundle, ProjectList, ProposalReceipt, SearchPage
from memory.exceptions import ProtectedTarget
from memory.metrics import CALL_SECONDS
from memory.selectors import named_project_read, projects_for_agent, search_named, search_ranks
from memory.services import proposal_first_read, proposal_submit
from workspaces.exceptions import InvalidRequest, UnforgetterError
from workspaces.limits import credential_rate_check, credential_slot_async
from workspaces.outages import OUTAGE_ERRORS, unavailable
from workspaces.prepared import Read
from workspaces.scope import AgentScope

logger = logging.getLogger(__name__)

ArgsT = TypeVar("ArgsT", bound=BaseModel)

INSTRUCTIONS = """\
Unforgetter is your team's governed, shared memory. Use its four tools in this order:
1. list_projects: the projects your credential may use; pass an id from it as project_id.
2. get_context (project_id, task): call it first for every task. It returns the policies you must \
follow, the facts, decisions and conventions relevant to the task (each with provenance: cite it when \
a decision depends on it), open threads, methods (step-by-step instructions) and pointers.
3. search_memory (project_id, query): dig deeper, or fetch an item by the ref a pointer gives; page \
with the cursor it returns.
4. propose_memory: you cannot write memory directly. Propose a change (add_fact, update_fact, \
open_thread, close_thread, reject) with evidence and your own request_id. The answer says how it \
was stored (queued or quarantined); it is then validated within seconds and published, held for the \
owner's review, or rejected.
Every error carries a code and an action: follow the action (forbidden_scope or unknown_project: \
call list_projects; protected_target: do not retry, tell the owner)."""


class _RawArguments(ArgModelBase):
    arguments: dict[str, Any]


class _ValidatedByTool(FuncMetadata):
    """Hands the tool its raw arguments: the tool validates them against its published model."""

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        return {"arguments": dict(arguments_to_validate)}


Handler = Callable[[AgentScope, Any], Mapping[str, Any]]


async def run_tool(name: str, arguments: dict[str, Any]) -> CallToolResult:
    """A tool call on the SDK's path: the credential was verified by the SDK's auth middleware."""
    model, handler = TOOLS[name]
    with CALL_SECONDS.labels(name).time():
        args = _validated(model, arguments)
        if isinstance(args, UnforgetterError):
            return results.error(args)
        try:
            scope = current_scope()
            # The slot is taken on the event loop, before the call takes a thread: a credential's
            # calls past its concurrency wait here, holding no thread and no database connection.
            async with credential_slot_async(scope.connection_id):
                payload = await in_request_thread(_rate_checked(handler), scope, args)
        except Exception as exc:
            return results.error(_refusal(name, exc))
        return results.ok(payload)


def answer_in_thread(name: str, args: BaseModel | UnforgetterError) -> dict[str, Any]:
    """A tool call's wire result, run in the request thread that verified the credential
    (mcpbridge.direct): the same checks, in the same order, as `run_tool`. `args` is what
    `arguments_validated` made of the call's arguments."""
    handler = TOOLS[name][1]
    if isinstance(args, UnforgetterError):
        return results.error_wire(args)
    try:
        payload = _rate_checked(handler)(current_scope(), args)
    except Exception as exc:
        return results.error_wire(_refusal(name, exc))
    return results.ok_wire(payload)


def validated_ahead(name: str, arguments: Mapping[str, Any]) -> BaseModel | UnforgetterError | None:
    """A get_context or search_memory call's arguments, validated on the event loop so that its
    query can start embedding there (`embed_ahead`); `answer_in_thread` then uses them as they
    are. None for the other tools, whose arguments the request thread validates."""
    if name not in ("get_context", "search_memory"):
        return None
    return arguments_validated(name, arguments)


def arguments_validated(name: str, arguments: Mapping[str, Any]) -> BaseModel | UnforgetterError:
    """A call's arguments checked against its tool's model: the model, or the error it answers."""
    return _validated(TOOLS[name][0], arguments)


class _NamedCall(NamedTuple):
    """What a get_context or search_memory call names: its project, the text it ranks by (a
    task or a query) and whether it ranks (a query that is an item ref does not)."""

    project_id: str
    text: str
    ranked: bool


def _named_call(args: BaseModel | UnforgetterError | None) -> _NamedCall | None:
    """The project and text of a call's arguments as `validated_ahead` left them, if it names one."""
    if isinstance(args, GetContextArgs):
        return _NamedCall(args.project_id, args.task, True)
    if isinstance(args, SearchMemoryArgs):
        return _NamedCall(args.project_id, args.query, search_ranks(args.query))
    return None


def embed_ahead(kept: AgentScope, args: BaseModel | UnforgetterError | None) -> None:
    """Start embedding the text a get_context or search_memory call ranks by, before its
    credential is verified (memory.retrieval.embed_ahead): `kept` is the scope the credential
    was last resolved to here, `args` the call's arguments as `validated_ahead` left them (the
    text as the tool will embed it). A head start only: whatever fails here, the call goes on as
    it would have.
    """
    try:
        named = _named_call(args)
        if named is not None and named.ranked:
            retrieval.embed_ahead(kept, named.project_id, named.text)
    except Exception:
        logger.exception("starting a query's embedding early failed; the call embeds it itself")


def first_read(kept: AgentScope, args: BaseModel | UnforgetterError | None) -> Read | None:
    """The first statement a get_context, search_memory or propose_memory call runs (its
    project's), made for `kept`, the scope its credential was last resolved to, from its
    arguments as `validated_ahead` left them: for the credential's statement to run it too
    (workspaces.bearers.ReadAhead)."""
    if isinstance(args, ProposeMemoryArgs):
        return proposal_first_read(kept, args.project_id, args.request_id, args.change.text)
    named = _named_call(args)
    if named is None:
        return None
    return named_project_read(kept, named.project_id, named.text, ranked=named.ranked)


def _validated(model: type[ArgsT], arguments: Mapping[str, Any]) -> ArgsT | UnforgetterError:
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        if any(error["type"] == PROTECTED_TARGET_ERROR for error in exc.errors()):
            return ProtectedTarget()
        return InvalidRequest(describe_validation_error(exc))


def _refusal(name: str, exc: Exception) -> UnforgetterError:
    """What a tool answers for an exception: ours as they are, outages as `unavailable`, the
    rest as an internal error that says nothing of what failed."""
    if isinstance(exc, UnforgetterError):
        return exc
    if isinstance(exc, OUTAGE_ERRORS):
        return unavailable(name, exc)
    logger.error("MCP tool %s failed", name, exc_info=exc)
    return results.InternalError("The server could not complete this call.")


def _rate_checked(handler: Handler) -> Handler:
    def checked(scope: AgentScope, args: Any) -> Mapping[str, Any]:
        credential_rate_check(scope.connection_id)
        return handler(scope, args)

    return checked


def _list_projects(scope: AgentScope, args: ListProjectsArgs) -> ProjectList:
    return projects_for_agent(scope)


def _get_context(scope: AgentScope, args: GetContextArgs) -> Bundle:
    return context_named(scope=scope, project_id=args.project_id, task=args.task)


def _search_memory(scope: AgentScope, args: SearchMemoryArgs) -> SearchPage:
    return search_named(scope=scope, project_id=args.project_id, query=args.query, cursor=args.cursor)


def _propose_memory(scope: AgentScope, args: ProposeMemoryArgs) -> ProposalReceipt:
    require_scope(SCOPE_PROPOSE)
    change = args.change
    return proposal_submit(
        scope=scope,
        project_id=args.project_id,
        request_id=args.request_id,
        op=change.op,
        text=change.text,
        target=change.target,
        supersedes=change.supersedes,
        kind=change.kind,
        evidence=[e.model_dump() for e in args.evidence],
    ).payload()


# Each tool's argument model and handler, by name (both paths, run_tool and answer_in_thread).
TOOLS: dict[str, tuple[type[BaseModel], Handler]] = {
    "list_projects": (ListProjectsArgs, _list_projects),
    "get_context": (GetContextArgs, _get_context),
    "search_memory": (SearchMemoryArgs, _search_memory),
    "propose_memory": (ProposeMemoryArgs, _propose_memory),
}


async def list_projects(arguments: dict[str, Any]) -> CallToolResult:
    return await run_tool("list_projects", arguments)


async def get_context(arguments: dict[str, Any]) -> CallToolResult:
    return await run_tool("get_context", arguments)


async def search_memory(arguments: dict[str, Any]) -> CallToolResult:
    return await run_tool("search_memory", arguments)


async def propose_memory(arguments: dict[str, Any]) -> CallToolResult:
    return await run_tool("propose_memory", arguments)


READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

# Not read-only (it stores a proposal), not destructive (memory changes only through review and
# validation, never by overwriting), idempotent (a replayed request_id returns the original).
PROPOSE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

PROPOSE_DESCRIPTION = (
    "Propose a change to the project's memory; you cannot write memory directly. Returns "
    "{ proposal_id, status: queued | quarantined, taint: clean | untrusted }: how it was stored, not "
    "yet whether it is published. Queued (clean provenance): within seconds the consolidator validates "
    "it and publishes it (then get_context and search_memory serve it), or holds it for the owner's "
    "review when it carries a risk signal (links, images, code, text addressed to agents, authority "
    "claims, credential-like strings) or the workspace reviews everything, or rejects it. Quarantined "
    "(any untrusted evidence, a low-trust zone, or citing or copying a tainted item): validated, then "
    "it always waits for the owner's review; the taint stays with anything published from it. "
    "Ops: add_fact (kind fact|decision|convention), update_fact (target: the ref you "
    "read; history is kept), open_thread, close_thread (target: a thread), reject (target: an item you "
    "show is wrong; it is retracted, kept for history). request_id: your own id, 8-128 characters of "
    "A-Z a-z 0-9 . _ : - (a UUID is ideal), remembered for at least 30 days (in practice for as long as "
    "the proposal is kept): a replay returns the original result with duplicate_request, never a "
    f"second proposal. Limits: change.text up to {MAX_PROPOSAL_TEXT} characters; 1-{MAX_EVIDENCE_ITEMS} "
    f"evidence items, each a ref (up to {MAX_EVIDENCE_REF} characters; never fetched) and/or a text (up "
    f"to {MAX_EVIDENCE_TEXT}) with trust trusted|untrusted. Proposals carrying concrete attacks "
    "(instruction overrides, role markup, tool-call syntax, exfiltration, hidden Unicode) or secrets "
    "are rejected. Errors: "
    "protected_target (goals, policies, permissions, identities: do not retry; tell the owner), "
    "forbidden_scope / unknown_project (call list_projects; also a read-only credential), "
    "invalid_request (fix the arguments)."
)

# The published tools: the SDK's function, name, title, annotations and description (each one's
# argument model is its TOOLS entry's).
TOOL_SPECS: list[tuple[Callable[..., Any], str, str, ToolAnnotations, str]] = [
    (
        list_projects,
        "list_projects",
        "List projects",
        READ_ONLY,
        "List the projects this credential may use: { projects: [ { id, name, data_class, updated_at } ] }. "
        "Only allowed projects are returned; use an id from here as project_id in the other tools.",
    ),
    (
        get_context,
        "get_context",
        "Get context for a task",
        READ_ONLY,
        "Call this first for any task in a project. Returns a bounded bundle compiled for the task: "
        "policies (always follow them), facts (facts, decisions, conventions; each with provenance "
        "{source, date, actor} to cite), open_threads, methods (step-by-step instructions relevant to the "
        "task), pointers ({ref, why}: fetch one with search_memory using the ref as the query), freshness "
        "{compiled_at, replica_at, stale} and your identity. If warnings holds stale_replica, proceed with "
        "caution and cite freshness. Errors: forbidden_scope or unknown_project mean call list_projects.",
    ),
    (
        search_memory,
        "search_memory",
        "Search memory",
        READ_ONLY,
        "Search the current items of one project by words and meaning, best match first, 10 per page: "
        "{ results: [ { ref, kind, state, excerpt, provenance, data_class, why } ], cursor? }. Ask in "
        "plain words or a question; '-word' excludes. Matching words are marked **like this** in "
        "excerpts; why says whether an item matched words, meaning or both. Pass the returned cursor "
        "with the same project_id and query for the next page; a cursor is valid for 15 minutes and "
        "only for that search (invalid_cursor: restart without it). A query that is exactly a ref "
        "returns that item.",
    ),
    (
        propose_memory,
        "propose_memory",
        "Propose a memory change",
        PROPOSE,
        PROPOSE_DESCRIPTION,
    ),
]


def _logging_left_to_django(level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]) -> None:
    """Stands in for the SDK's `configure_logging`, which MCPServer calls on construction.

    Django's LOGGING setting configures logging here, so the SDK's `logging.basicConfig` finds
    the root logger's handlers in place and does nothing; but first it imports `rich` for a
    handler wherever that is installed (import-linter, a development tool, brings it): 2.5 MB
    of every web worker, for nothing.
    """


def build_server() -> MCPServer:
    """The MCP server, authenticating every request as an AgentScope (see mcpbridge.auth)."""
    sdk_server.configure_logging = _logging_left_to_django  # type: ignore[attr-defined,assignment]
    tools = [
        Tool(
            fn=fn,
            name=name,
            title=title,
            description=description,
            parameters=TOOLS[name][0].model_json_schema(),
            fn_metadata=_ValidatedByTool(arg_model=_RawArguments, output_schema=OUTPUT_SCHEMAS[name]),
            is_async=True,
            context_kwarg=None,
            annotations=annotations,
        )
        for fn, name, title, annotations, description in TOOL_SPECS
    ]
    server = MCPServer(
        name="unforgetter",
        title="Unforgetter",
        instructions=INSTRUCTIONS,
        version="0.1.0",
        tools=tools,
        auth=AuthSettings.model_validate(
            {
                "issuer_url": settings.PUBLIC_URL,
                "resource_server_url": settings.MCP_RESOURCE_URL,
                "required_scopes": [SCOPE_READ],
                "validate_token_resource": True,
            }
        ),
        token_verifier=ConnectionTokenVerifier(),
    )
    if not settings.UNFORGETTER["MCP_TRACE_SPANS"]:
        # The SDK opens a span per message even with no exporter installed (then a no-op span):
        # about a tenth of a call's fixed cost. Its own comment says to drop it to opt out.
        server.middleware[:] = [m for m in server.middleware if not isinstance(m, OpenTelemetryMiddleware)]
    return server
