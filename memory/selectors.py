"""Reads of memory, always on behalf of a principal.

Agent reads take the AgentScope and the Project resolved by `workspaces.selectors.project_for_agent`;
`agent_facts` is the one queryset every agent-facing read of memory starts from.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Collection
from datetime import datetime, timedelta
from functools import partial
from itertools import chain, repeat
from typing import Any, NamedTuple

from django.conf import settings
from django.db.models import F, OuterRef, QuerySet, Subquery

from memory import search
from memory.contract import ProjectEntry, ProjectList, SearchPage, SearchResult
from memory.cursors import cursor_make, cursor_offset
from memory.excerpts import excerpt
from memory.items import COLUMNS, Item, item_of, taint_label
from memory.models import Fact, Publication, State, provenance_of
from memory.refs import is_ref
from memory.retrieval import (
    NamedProject,
    Probed,
    hybrid_rank,
    prefetch_query_vector,
    ranking_indexes,
    with_ids,
)
from workspaces.bearers import read_with_credential
from workspaces.exceptions import InvalidRequest
from workspaces.models import Project
from workspaces.prepared import Beside, Prepared, Read
from workspaces.scope import AgentScope, item_condition
from workspaces.selectors import project_catalogue_entries, project_in_scope


def agent_facts(scope: AgentScope, project: Project) -> QuerySet[Fact]:
    """Current items of one project in the credential's data classes (never restricted)."""
    _assert_resolved(scope, project)
    return _facts_of(scope.workspace_id, scope.visible_classes, project.pk, scope.project_ids)


def _assert_resolved(scope: AgentScope, project: Project) -> None:
    assert scope.sees_project(
        workspace_id=project.workspace_id, project_id=project.pk, data_class=project.data_class
    ), "project must come from project_for_agent"


def _facts_of(
    workspace_id: int, classes: Collection[str], project_id: int, project_ids: Collection[int] | None
) -> QuerySet[Fact]:
    # AgentScope.item_filter from its parts (item_condition), so that a query built from it can
    # be compiled once with stand-in values (workspaces.prepared).
    return Fact.objects.current().filter(
        item_condition(workspace_id, classes, project_ids), project_id=project_id
    )


def _agent_rows_query(
    columns: tuple[str, ...],
    workspace_id: int,
    classes: list[str],
    project_id: int,
    fact_ids: list[int],
    project_ids: list[int] | None = None,
) -> QuerySet[Fact, tuple[Any, ...]]:
    return with_ids(_facts_of(workspace_id, classes, project_id, project_ids), fact_ids).values_list(*columns)


# get_context reads its chosen rows on every new task: compiled once per process, column list
# and shape. The ids are padded to a multiple of ROWS_SHAPE (repeating one), so that a few
# shapes serve every count.
ROWS_SHAPE = 32
_agent_rows: dict[tuple[str, ...], Prepared] = {}


def agent_rows(
    scope: AgentScope,
    project: Project,
    fact_ids: Collection[int],
    columns: tuple[str, ...],
    *,
    version: int | None = None,
) -> list[tuple[Any, ...]]:
    """`with_ids(agent_facts(scope, project), fact_ids).values_list(*columns)`: the same rows.

    With the content `version` the rows were asked under (a publication's), the rows this
    process already read for the same scope and version are not read again (`_RowCache`).
    """
    _assert_resolved(scope, project)
    wanted = sorted(set(fact_ids))
    if not wanted:
        return []
    if version is None:
        return _agent_rows_read(scope, project, wanted, columns)
    return _row_cache.rows(scope, project, version, wanted, columns)


def _agent_rows_read(
    scope: AgentScope, project: Project, wanted: list[int], columns: tuple[str, ...]
) -> list[tuple[Any, ...]]:
    wanted = wanted + [wanted[-1]] * (-len(wanted) % ROWS_SHAPE)
    prepared = _agent_rows.get(columns)
    if prepared is None:
        built = Prepared(partial(_agent_rows_query, columns), by_primary_key=Fact._meta.db_table)
        prepared = _agent_rows.setdefault(columns, built)
    args: list[Any] = [scope.workspace_id, list(scope.visible_classes), project.pk, wanted]
    if scope.project_ids is not None:
        args.append(sorted(scope.project_ids))
    return prepared.rows(*args)


# About this many bytes of rows are kept in all (the oldest keys' go first; a key alone over it
# starts over). Part of a web worker's memory budget (DESIGN section 8).
ROW_CACHE_BYTES = 16 * 1024 * 1024


class _RowCache:
    """The scoped rows read per (scope, project, content version, columns), each id's row or None.

    An entry holds what `_agent_rows_read` returned for the very same scope (workspace, visible
    classes, project list), project, columns and content version, and None for an id it did not
    return (not current, or not visible to that scope): a credential only ever gets rows its
    own scoped statement read. An item's row changes in one way only, from current to not (its
    data class, text and provenance never change in place), and every service that moves one
    records a publication that changes memory (`publication_record(changed=True)`), so the
    version in the key changes with it; `row_cache_clear` is for writes that bypass that.
    Bounded by ROW_CACHE_BYTES (estimated): least recently used keys are dropped first, and a
    key that alone exceeds it is emptied.
    """

    def __init__(self, max_bytes: int = ROW_CACHE_BYTES) -> None:
        self._entries: OrderedDict[tuple[object, ...], dict[int, tuple[Any, ...] | None]] = OrderedDict()
        self._sizes: dict[tuple[object, ...], int] = {}
        self._total = 0
        self._lock = threading.Lock()
        self.max_bytes = max_bytes

    def rows(
        self, scope: AgentScope, project: Project, version: int, wanted: list[int], columns: tuple[str, ...]
    ) -> list[tuple[Any, ...]]:
        assert columns[0] == "id", "rows are kept by their id"
        project_ids = None if scope.project_ids is None else tuple(sorted(scope.project_ids))
        key = (scope.workspace_id, scope.visible_classes, project_ids, project.pk, version, columns)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = {}
                self._sizes[key] = 0
            self._entries.move_to_end(key)
            known = list(map(entry.get, wanted, repeat(_UNREAD)))
        if _UNREAD not in known:
            return [row for row in known if row is not None]
        missing = [i for i, row in zip(wanted, known, strict=True) if row is _UNREAD]
        # Read outside the lock; two threads may read the same rows once, and store the same.
        read = {row[0]: _shared(row, columns) for row in _agent_rows_read(scope, project, missing, columns)}
        added = _rows_bytes(list(read.values()), len(columns)) + 16 * len(missing)
        with self._lock:
            if self._entries.get(key) is entry:
                entry.update((i, read.get(i)) for i in missing)
                self._sizes[key] += added
                self._total += added
                while self._total > self.max_bytes and len(self._entries) > 1:
                    dropped, _ = self._entries.popitem(last=False)
                    self._total -= self._sizes.pop(dropped)
                if self._total > self.max_bytes:
                    # One scope and version alone outgrew the bound (a large project asked
                    # many tasks): it starts over rather than growing with the project.
                    entry.clear()
                    self._total -= self._sizes[key]
                    self._sizes[key] = 0
        found: list[tuple[Any, ...]] = []
        for i, row in zip(wanted, known, strict=True):
            row = read.get(i) if row is _UNREAD else row
            if row is not None:
                found.append(row)
        return found

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._sizes.clear()
            self._total = 0


_UNREAD: Any = object()

# Columns whose values repeat across a project's rows (a few kinds, states, classes, authors,
# origins and source files): a kept row holds the one (interned) copy of each value, not a string
# per row (about 40% of a kept row's memory).
SHARED_COLUMNS = frozenset({"kind", "state", "data_class", "actor", "origin", "source"})
_shared_at: dict[tuple[str, ...], list[int]] = {}


def _shared(row: tuple[Any, ...], columns: tuple[str, ...]) -> tuple[Any, ...]:
    """The row, its values of SHARED_COLUMNS replaced by their interned copies."""
    at = _shared_at.get(columns)
    if at is None:
        at = _shared_at[columns] = [i for i, column in enumerate(columns) if column in SHARED_COLUMNS]
    values = list(row)
    for i in at:
        value = values[i]
        if value.__class__ is str:
            values[i] = sys.intern(value)
    return tuple(values)


def _rows_bytes(rows: list[tuple[Any, ...]], width: int) -> int:
    """About how many bytes these rows of `width` columns take: their tuples, values and text."""
    text = sum(map(len, filter(str.__instancecheck__, chain.from_iterable(rows))))
    return (56 + 40 * width) * len(rows) + text


_row_cache = _RowCache()


def row_cache_clear() -> None:
    """Forget every row `agent_rows` kept (for writes that bypass publication, e.g. tests)."""
    _row_cache.clear()


def projects_for_agent(scope: AgentScope) -> ProjectList:
    """list_projects: the credential's catalogue, as agents see it."""
    return ProjectList(
        projects=[
            ProjectEntry(id=p.slug, name=p.name, data_class=p.data_class, updated_at=p.updated_at.isoformat())
            for p in project_catalogue_entries(scope)
        ]
    )


class PublicationState(NamedTuple):
    """What a bundle needs of the newest publication: its versions, time and the publish cadence."""

    version: int
    content_version: int | None
    compiled_at: datetime
    publish_cadence: timedelta


# Read on every get_context: compiled once per process (workspaces.prepared).
_LATEST_PUBLICATION = Prepared(
    lambda workspace_id: (
        Publication.objects.filter(workspace_id=workspace_id)
        .order_by("-version")
        .values_list(*PublicationState._fields[:3], "workspace__publish_cadence")[:1]
    )
)


def latest_publication(workspace_id: int) -> PublicationState | None:
    """The newest publication's state, with its workspace's publish cadence, in one query."""
    rows = _LATEST_PUBLICATION.rows(workspace_id)
    return PublicationState(*rows[0]) if rows else None


_PROJECT_COLUMNS = tuple(field.attname for field in Project._meta.concrete_fields)
_PROJECT_WIDTH = len(_PROJECT_COLUMNS)
# Where the values read beside a project's statement start: after its row and the publication's.
_BESIDE_AT = _PROJECT_WIDTH + len(PublicationState._fields)


def _project_and_publication_query(workspace_id: int, slug: str) -> QuerySet[Project, tuple[Any, ...]]:
    newest = Publication.objects.filter(workspace_id=OuterRef("workspace_id")).order_by("-version")
    of_newest = {f"newest_{name}": Subquery(newest.values(name)[:1]) for name in PublicationState._fields[:3]}
    return (
        Project.objects.filter(workspace_id=workspace_id, slug=slug)
        .annotate(**of_newest, cadence=F("workspace__publish_cadence"))
        .values_list(*_PROJECT_COLUMNS, *of_newest, "cadence")[:1]
    )


_PROJECT_AND_PUBLICATION = Prepared(_project_and_publication_query)


class ProjectAt(NamedTuple):
    """A project an agent asked for, and its workspace's newest publication (None before any)."""

    project: Project
    publication: PublicationState | None


def project_for_context(scope: AgentScope, project_id: str) -> ProjectAt:
    """`project_for_agent` and `latest_publication`, in one statement: what get_context reads first.

    The project is read in the credential's workspace and checked as `project_for_agent` checks
    it (workspaces.selectors.project_in_scope); the publication is that workspace's.
    """
    return project_for_context_beside(scope, project_id, None)[0]


def project_for_context_beside(
    scope: AgentScope, project_id: str, beside: Beside | None
) -> tuple[ProjectAt, tuple[Any, ...]]:
    """`project_for_context`, and the values of `beside` run in the same statement (or in the
    credential's, if this call's credential statement read it: workspaces.bearers.ReadAhead)."""
    row = _project_row(scope, project_id, beside)
    project = project_in_scope(scope, project_id, _project_of(row))  # raises without a row
    version, content_version, compiled_at, cadence = row[_PROJECT_WIDTH:_BESIDE_AT]
    also = tuple(row[_BESIDE_AT:])
    if version is None:
        return ProjectAt(project, None), also
    return ProjectAt(project, PublicationState(version, content_version, compiled_at, cadence)), also


def project_found_beside(
    scope: AgentScope, project_id: str, beside: Beside
) -> tuple[Project, tuple[Any, ...]] | None:
    """The project the credential's workspace holds under `project_id`, unchecked, and the values
    of `beside` read in its statement (`project_read`'s, or the credential's: ReadAhead); None
    where the workspace has no such project (and nothing beside it was read). The caller checks
    the project (workspaces.selectors.project_in_scope) before it uses it."""
    row = _project_row(scope, project_id, beside)
    found = _project_of(row)
    return None if found is None else (found, tuple(row[_BESIDE_AT:]))


def _project_row(scope: AgentScope, project_id: str, beside: Beside | None) -> tuple[Any, ...]:
    read = project_read(scope, project_id, beside)
    rows = read_with_credential(scope, read)
    if rows is None:
        rows = read.rows()
    return rows[0] if rows else ()


def _project_of(row: tuple[Any, ...]) -> Project | None:
    return Project.from_db(Project.objects.db, _PROJECT_COLUMNS, row[:_PROJECT_WIDTH]) if row else None


def project_read(scope: AgentScope, project_id: str, beside: Beside | None) -> Read:
    """The statement `project_for_context_beside` runs: the project, its workspace's newest
    publication and `beside`."""
    return Read(_PROJECT_AND_PUBLICATION, (scope.workspace_id, project_id), beside)


def named_project_read(scope: AgentScope, project_id: str, text: str, *, ranked: bool) -> Read:
    """The first statement `context_named` (ranked) or `search_named` (`ranked` as `search_ranks`
    says) runs for `project_id` and its task or query under `scope`."""
    named = NamedProject(scope, project_id, text) if ranked else None
    return project_read(scope, project_id, named.beside if named else None)


MAX_SEARCH_OFFSET = 500


def search_ranks(query: str) -> bool:
    """Whether search_memory ranks `query` (and embeds it): an item ref alone is fetched instead."""
    return not is_ref(query.strip())


def search_named(*, scope: AgentScope, project_id: str, query: str, cursor: str | None = None) -> SearchPage:
    """`search_for_agent` in a project named by its slug (refused as `project_for_agent` refuses):
    what search_memory does. A project this scope named before has the query embedded and its
    indexes probed early (memory.retrieval.NamedProject)."""
    named = NamedProject(scope, project_id, query) if search_ranks(query) else None
    at, values = project_for_context_beside(scope, project_id, named.beside if named else None)
    page = search_for_agent(
        scope=scope,
        project=at.project,
        query=query,
        cursor=cursor,
        probed=named.probed(at.project, values) if named else None,
    )
    if named is not None:
        named.served(at.project)
    return page


def search_for_agent(
    *,
    scope: AgentScope,
    project: Project,
    query: str,
    cursor: str | None = None,
    probed: Probed | None = None,
) -> SearchPage:
    """One page of ranked, highlighted results, scoped to the project and the credential's classes.

    Ranked by memory.retrieval (words and meaning, fused); each result says why it was chosen.
    Pages are slices of one deterministic ranking, so a cursor walks it without repeats.

    A query that is exactly an item ref retrieves that item, if the credential may see it; one
    that only looks like a ref ("deploy_pipeline") is searched for as words. `probed` is the
    project's `ranking_probe` and its values, if the caller read them.
    """
    query = query.strip()
    if not query:
        raise InvalidRequest("query must contain words to search for.")
    offset = cursor_offset(cursor=cursor, scope=scope, project=project, query=query) if cursor else 0
    page_size = settings.UNFORGETTER["SEARCH_PAGE_SIZE"]
    items: list[Item] = []
    if is_ref(query) and offset == 0:
        items = [item_of(fact) for fact in agent_facts(scope, project).filter(ref=query).only(*COLUMNS)]
    why: dict[int, str] = {}
    if items:
        excerpts = {item.id: item.text[:300] for item in items}
        why = {item.id: "its ref is the query" for item in items}
        more = False
    else:
        if not search.terms(query):
            raise InvalidRequest("query must contain at least one word or number.")
        prefetch_query_vector(project.pk, query)
        index, vectors = ranking_indexes(project.pk, probed)
        ranked = hybrid_rank(
            items=partial(agent_facts, scope, project),
            project_id=project.pk,
            data_classes=scope.visible_classes,
            states=list(State.current()),
            query=query,
            limit=offset + page_size + 1,
            vectors=vectors,
            rows_of=partial(agent_rows, scope, project),
            index=index,
            by_scores=True,
        )[offset:]
        more = len(ranked) > page_size and offset + page_size < MAX_SEARCH_OFFSET
        ids = [hit.fact_id for hit in ranked[:page_size]]
        why = {hit.fact_id: hit.why for hit in ranked[:page_size]}
        # Plain rows, as a bundle reads them: building a Fact for each result cost more than
        # the statement (1.7 ms for a page of ten over HTTP, 100k items, SQLite).
        by_id = {row[0]: Item._make(row) for row in agent_rows(scope, project, ids, COLUMNS)}
        items = [by_id[i] for i in ids if i in by_id]
        marked = " ".join(search.keywords(query))
        excerpts = {item.id: excerpt(item.text, marked) for item in items}
    results = [
        SearchResult(
            ref=item.ref,
            kind=item.kind,
            state=item.state,
            excerpt=excerpts.get(item.id) or item.text[:300],
            provenance=provenance_of(item),
            data_class=item.data_class,
            taint=taint_label(item),
            why=why.get(item.id, ""),
        )
        for item in items
    ]
    page = SearchPage(results=results)
    if more:
        page["cursor"] = cursor_make(scope=scope, project=project, query=query, offset=offset + page_size)
    return page
