"""Writes of canonical items by owners and importers (agents only ever propose)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date, datetime
from typing import Any, NamedTuple

from django.db import connection as db
from django.db import transaction
from django.utils import timezone

from memory.models import Fact, Kind, Taint, text_digest
from memory.refs import new_ref
from workspaces.exceptions import InvalidRequest
from workspaces.models import DataClass, Project
from workspaces.prepared import PreparedUpdate


class FactRow(NamedTuple):
    """A validated item ready for bulk insertion, without the cost of a model instance."""

    kind: str
    text: str
    state: str
    data_class: str
    source: str
    source_date: date | None
    actor: str
    ref: str
    taint: int = Taint.CLEAN
    origin: str = ""


# Computed once: an import validates every one of its 100,000 rows against these.
_STATES = {kind: Kind.states(kind) for kind in Kind.values}
_DATA_CLASSES = frozenset(DataClass.values)


def fact_row(
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
    taint: int = Taint.CLEAN,
    origin: str = "",
) -> FactRow:
    """Validate one item of `project`: kind, non-empty text, a state that fits the kind, a data class."""
    states = _STATES.get(kind)
    if states is None:
        raise InvalidRequest(f"Unknown kind {kind!r}; use one of {', '.join(Kind.values)}.")
    text = text.strip()
    if not text:
        raise InvalidRequest("An item needs text.")
    state = state or Kind.live_state(kind)
    if state not in states:
        raise InvalidRequest(f"State {state!r} does not fit kind {kind!r}.")
    data_class = data_class or project.data_class
    if data_class not in _DATA_CLASSES:
        raise InvalidRequest(f"Unknown data class {data_class!r}.")
    return FactRow(
        kind,
        text,
        state,
        data_class,
        source[:500],
        source_date,
        actor[:150],
        new_ref(kind) if ref is None else ref,
        taint,
        origin,
    )


def fact_build(*, project: Project, **fields: Any) -> Fact:
    """A validated, unsaved Fact."""
    row = fact_row(project=project, **fields)
    return Fact(
        workspace_id=project.workspace_id,
        project=project,
        created_at=timezone.now(),
        **row._asdict(),
    )


@transaction.atomic
def fact_create(**kwargs: Any) -> Fact:
    fact = fact_build(**kwargs)
    fact.save()
    project_touch(project_ids=[fact.project_id])
    return fact


def project_touch(*, project_ids: Iterable[int], now: datetime | None = None) -> None:
    """Mark projects as changed now: `updated_at` is what list_projects shows agents."""
    _touch.update(sorted(project_ids), updated_at=now or timezone.now())


# Every batch the consolidator publishes touches its projects: SQL built once per process.
_touch = PreparedUpdate(Project, ["updated_at"])


# The workspace and project, then FactRow's fields in order, then what follows from them.
_ROW_COLUMNS = ("workspace_id", "project_id", *FactRow._fields, "text_digest", "created_at")
# Their PostgreSQL types, as a binary COPY must be told them (memory_fact's columns).
_ROW_TYPES = (
    "bigint", "bigint", "varchar", "text", "varchar", "varchar", "varchar", "date", "varchar",
    "varchar", "smallint", "varchar", "bigint", "timestamptz",
)  # fmt: skip


def fact_rows_insert(
    *, project: Project, rows: Sequence[FactRow], digests: Sequence[int] | None = None
) -> int:
    """Insert validated rows in one statement stream: COPY on PostgreSQL, executemany on SQLite.

    The bulk path of import (DESIGN: 10,000 items/s): no model instances, no per-row SQL. The
    database keeps no full-text index to follow them (words are indexed in process). `digests`
    are the rows' text digests when the caller has them already.
    """
    now = timezone.now()
    # One creation time for every row, adapted once (SQLite's adapter would format it per row).
    created = now if db.vendor == "postgresql" else now.isoformat(" ")
    if digests is None:
        digests = [text_digest(row.text) for row in rows]
    ws, pk = project.workspace_id, project.pk
    values = [(ws, pk, *row, digest, created) for row, digest in zip(rows, digests, strict=True)]
    columns = ", ".join(_ROW_COLUMNS)
    with transaction.atomic(), db.cursor() as cursor:
        if db.vendor == "postgresql":
            # Binary: each value is sent as it is stored, with no text to format and escape here
            # or to parse on the server.
            with cursor.cursor.copy(f"COPY memory_fact ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(_ROW_TYPES)
                for value in values:
                    copy.write_row(value)
        else:
            placeholders = ", ".join(["%s"] * len(_ROW_COLUMNS))
            cursor.executemany(f"INSERT INTO memory_fact ({columns}) VALUES ({placeholders})", values)  # noqa: S608
        project_touch(project_ids=[project.pk], now=now)
    return len(values)
