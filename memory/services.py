"""Writes of memory. The only code that creates Facts, Publications and ContextRequests.

The proposal write path (proposal_submit, consolidation) builds on these.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from memory.models import ContextRequest, Fact, Kind, Publication, State, new_ref
from workspaces.exceptions import InvalidRequest
from workspaces.models import Connection, DataClass, Project, Workspace


def publication_bootstrap(*, workspace: Workspace) -> Publication:
    """The first publication of a new workspace: version 1, nothing published yet."""
    publication, _ = Publication.objects.get_or_create(workspace=workspace, version=1)
    return publication


@transaction.atomic
def publication_record(
    *, workspace: Workspace, published_count: int = 0, changed: bool = False
) -> Publication:
    """Record one publish cycle; a heartbeat when nothing changed.

    The version is bumped under the workspace row's lock so concurrent cycles never collide.
    """
    Workspace.objects.select_for_update().filter(pk=workspace.pk).values_list("pk", flat=True).get()
    latest = (
        Publication.objects.filter(workspace=workspace).order_by("-version").values_list("version", flat=True)
    )
    version = (latest.first() or 0) + 1
    return Publication.objects.create(
        workspace=workspace, version=version, published_count=published_count, changed=changed
    )


def context_request_record(
    *,
    context_id: str,
    connection: Connection,
    project: Project,
    task: str,
    publication_version: int,
    refs: list[str],
) -> None:
    """Record a compiled bundle once per context_id (a replay in another process is a no-op)."""
    try:
        with transaction.atomic():
            ContextRequest.objects.create(
                context_id=context_id,
                workspace_id=connection.workspace_id,
                project=project,
                connection=connection,
                actor=connection.actor,
                task=task[:500],
                publication_version=publication_version,
                refs=refs,
            )
    except IntegrityError:
        pass


def default_state(kind: str) -> str:
    return State.OPEN if kind == Kind.THREAD else State.ACTIVE


def fact_build(
    *,
    project: Project,
    kind: str,
    text: str,
    actor: str,
    state: str | None = None,
    data_class: str | None = None,
    source: str = "",
    source_date: date | None = None,
    ref: str | None = None,
) -> Fact:
    """A validated, unsaved Fact (bulk import saves many at once)."""
    if kind not in Kind.values:
        raise InvalidRequest(f"Unknown kind {kind!r}; use one of {', '.join(Kind.values)}.")
    text = text.strip()
    if not text:
        raise InvalidRequest("An item needs text.")
    state = state or default_state(kind)
    allowed_states = {State.OPEN, State.CLOSED} if kind == Kind.THREAD else {State.ACTIVE, State.RETRACTED}
    if state not in allowed_states | {State.SUPERSEDED}:
        raise InvalidRequest(f"State {state!r} does not fit kind {kind!r}.")
    data_class = data_class or project.data_class
    if data_class not in DataClass.values:
        raise InvalidRequest(f"Unknown data class {data_class!r}.")
    fact = Fact(
        workspace_id=project.workspace_id,
        project=project,
        kind=kind,
        text=text,
        state=state,
        data_class=data_class,
        source=source[:500],
        source_date=source_date,
        actor=actor[:150],
        created_at=timezone.now(),
    )
    if ref:
        fact.ref = ref
    return fact


@transaction.atomic
def fact_create(**kwargs: Any) -> Fact:
    fact = fact_build(**kwargs)
    fact.save()
    project_touch(project=fact.project)
    return fact


def project_touch(*, project: Project) -> None:
    Project.objects.filter(pk=project.pk).update(updated_at=timezone.now())


def facts_bulk_create(*, project: Project, facts: list[Fact], batch_size: int = 2000) -> int:
    """Insert many items in one transaction; refs are generated where missing."""
    for fact in facts:
        if not fact.ref:
            fact.ref = new_ref(fact.kind)
    with transaction.atomic():
        Fact.objects.bulk_create(facts, batch_size=batch_size)
        project_touch(project=project)
    return len(facts)
