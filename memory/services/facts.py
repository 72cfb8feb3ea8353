"""Writes of canonical items by owners and importers (agents only ever propose)."""

from __future__ import annotations

from datetime import date
from typing import Any

from django.db import transaction
from django.utils import timezone

from memory.models import Fact, Kind, State, new_ref
from workspaces.exceptions import InvalidRequest
from workspaces.models import DataClass, Project


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
