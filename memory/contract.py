"""The agent contract as types: what the four tools (and the REST API) return.

`../shared/spec/mcp-reference.md` is the public contract; these are its payloads as memory
builds them and the interfaces render them. A key added to a payload is added here first.
"""

from __future__ import annotations

from typing import NotRequired

# typing_extensions: pydantic derives the tools' output schemas from these, and needs it before 3.12.
from typing_extensions import TypedDict

from workspaces.exceptions import ErrorBody

__all__ = [
    "Bundle",
    "CompiledBundle",
    "ErrorBody",
    "Freshness",
    "Identity",
    "ItemPayload",
    "Pointer",
    "ProjectBrief",
    "ProjectEntry",
    "ProjectList",
    "ProposalReceipt",
    "Provenance",
    "SearchPage",
    "SearchResult",
    "Sections",
]


class ProjectEntry(TypedDict):
    id: str
    name: str
    data_class: str
    updated_at: str


class ProjectList(TypedDict):
    projects: list[ProjectEntry]


class Provenance(TypedDict):
    source: str
    date: str
    actor: str
    # The item's id in the tool it was imported from, when it came with one.
    origin: NotRequired[str]


class ItemPayload(TypedDict):
    ref: str
    kind: str
    state: str
    text: str
    data_class: str
    taint: str
    provenance: Provenance


class Pointer(TypedDict):
    ref: str
    why: str


class ProjectBrief(TypedDict):
    id: str
    name: str
    data_class: str


class Sections(TypedDict):
    """A bundle's content, compiled once per (scope, project, task, content version)."""

    project: ProjectBrief
    task: str
    policies: list[ItemPayload]
    facts: list[ItemPayload]
    open_threads: list[ItemPayload]
    methods: list[ItemPayload]
    pointers: list[Pointer]


class CompiledBundle(TypedDict):
    """What the bundle cache holds: the sections and every ref served in them (for audit)."""

    sections: Sections
    served: list[str]


class Freshness(TypedDict):
    compiled_at: str | None
    replica_at: str
    publish_cadence_seconds: int
    stale: bool


class Identity(TypedDict):
    actor: str
    trust_zone: str
    role: str


class Bundle(Sections):
    """get_context's result."""

    context_id: str
    freshness: Freshness
    identity: Identity
    warnings: list[ErrorBody]


class SearchResult(TypedDict):
    ref: str
    kind: str
    state: str
    excerpt: str
    provenance: Provenance
    data_class: str
    taint: str
    why: str


class SearchPage(TypedDict):
    """search_memory's result: a page of results, and a cursor when there are more."""

    results: list[SearchResult]
    cursor: NotRequired[str]


class ProposalReceipt(TypedDict):
    """propose_memory's result; a replay adds what the proposal's status is now, and a warning."""

    proposal_id: str
    status: str
    taint: str
    duplicate_request: NotRequired[bool]
    current_status: NotRequired[str]
    warnings: NotRequired[list[ErrorBody]]
