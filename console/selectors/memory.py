"""The memory browser: items, one item's history and the proposals behind it."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet

from memory import search
from memory.models import Fact, Proposal, State
from memory.refs import is_ref
from memory.word_filter import holding_every_word
from workspaces.exceptions import NotFound
from workspaces.models import Project, Workspace

MAX_RANKED = 500


def memory_items(workspace: Workspace, filters: dict[str, Any]) -> QuerySet[Fact]:
    """Items of the workspace by project, kind and state, with a search.

    A search that is exactly a ref finds that item. Inside one project, words are matched with
    the word index (the newest `MAX_RANKED` items holding every word: memory.word_filter), so a
    project of a million items stays fast; across projects the text is matched as a substring.
    """
    queryset = Fact.objects.filter(workspace=workspace).select_related("project")
    project = None
    if filters.get("project"):
        project = Project.objects.filter(workspace=workspace, slug=filters["project"]).first()
        queryset = queryset.filter(project=project)
    if filters.get("kind"):
        queryset = queryset.filter(kind=filters["kind"])
    state = filters.get("state") or "current"
    states: list[str] = list(State.values)
    if state == "current":
        states = list(State.current())
        queryset = queryset.filter(state__in=states)
    elif state != "all":
        states = [state]
        queryset = queryset.filter(state=state)
    query = (filters.get("q") or "").strip()
    if query and is_ref(query):
        queryset = queryset.filter(ref=query)
    elif query and project is not None and search.terms(query):
        found = holding_every_word(
            items=queryset,
            project_id=project.pk,
            states=states,
            kinds=[filters["kind"]] if filters.get("kind") else None,
            query=query,
            limit=MAX_RANKED,
        )
        queryset = queryset.filter(id__in=found)
    elif query:
        queryset = queryset.filter(text__icontains=query)
    return queryset.order_by("-created_at", "-id")


def fact_for_member(workspace: Workspace, ref: str) -> Fact:
    # A ref comes from the URL: anything that cannot be a stored ref (NUL bytes, which
    # PostgreSQL refuses outright, or over-long input) is simply not found.
    if "\x00" in ref or len(ref) > Fact._meta.get_field("ref").max_length:  # type: ignore[operator]
        raise NotFound("No such item.")
    fact = (
        Fact.objects.filter(workspace=workspace, ref=ref)
        .select_related("project", "edited_by", "proposal", "supersedes")
        .first()
    )
    if fact is None:
        raise NotFound("No such item.")
    return fact


MAX_HISTORY = 100


def fact_history(fact: Fact) -> list[Fact]:
    """Every version in the item's supersession chain, newest first (bounded)."""
    newer: list[Fact] = []
    current = fact
    while len(newer) < MAX_HISTORY:
        successor = (
            Fact.objects.filter(supersedes=current)
            .select_related("edited_by", "proposal")
            .order_by("id")
            .first()
        )
        if successor is None:
            break
        newer.append(successor)
        current = successor
    older: list[Fact] = []
    current = fact
    while current.supersedes_id is not None and len(older) < MAX_HISTORY:
        predecessor = Fact.objects.select_related("edited_by", "proposal").get(pk=current.supersedes_id)
        older.append(predecessor)
        current = predecessor
    return [*reversed(newer), fact, *older]


def fact_proposals(fact: Fact, limit: int = 20) -> list[Proposal]:
    """The proposal that produced this version and every proposal that targeted it."""
    condition = Q(target=fact.ref) | Q(supersedes=fact.ref)
    if fact.proposal_id is not None:
        condition |= Q(pk=fact.proposal_id)
    return list(
        Proposal.objects.filter(condition, workspace_id=fact.workspace_id)
        .select_related("reviewer")
        .order_by("-seq")[:limit]
    )
