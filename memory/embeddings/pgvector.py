"""pgvector, where PostgreSQL has it and PGVECTOR asks for it: each vector's copy beside its row,
searched by PostgreSQL.

Opt-in (PGVECTOR, default off): measured at 100,000 real vectors in one project
(bench/vector_side.py), its HNSW graph held 74% of the exact 200 nearest (get_context's depth) at
`hnsw.ef_search` 200, and 90% at 1000 for 31 ms a statement, where the in-process index holds 99%
in less time. What it saves is memory: no web worker holds the project's vectors.

With the `vector` extension (0.8 or later) installed, `memory_embedding` gains a `vec halfvec`
column (the stored float16 vector, as pgvector's half-precision type) and, per embedding model,
a partial HNSW index on `vec::halfvec(<dimensions>)` for `model = '<name>'`. Django's migration
state knows none of it: the column and the indexes are made by conditional SQL (the migration
`0012_pgvector_where_installed`, `manage.py pgvector_sync`, and the worker for a model's first
vectors), so `makemigrations --check` holds with and without the extension, and SQLite or a
PostgreSQL without it keeps the in-process index (memory.embeddings.index).

The copy is ready to serve once every vector has it: the column's comment says so (READY),
written by the migration on an empty table or by `pgvector_sync` once it has filled every row.
Until then the worker writes the copy of each new vector (in its own transaction, so the two
never differ) but reads keep the in-process index. `state()` reads the extension's version and
that mark in one catalog statement, once per process; `forget()` makes the next call look again.

Reads (`ProjectVectors.nearest`) ask for the nearest vectors of one model among the rows of the
caller's scoped queryset, in one statement: the HNSW index with pgvector's iterative scan when
the filter leaves much of the project, an exact scan when the planner sees a small set.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

from memory.embeddings.stored import StoredVectors
from memory.models import Embedding, Fact
from memory.query_limits import bounded_rows

logger = logging.getLogger(__name__)

MIN_VERSION = (0, 8, 0)  # halfvec (0.7) and the HNSW iterative scan (0.8)
TABLE = Embedding._meta.db_table
COLUMN = "vec"
READY = "unforgetter: every vector has its pgvector copy"
# The HNSW search's candidate list: EF_PER_RESULT times as long as the results asked for, within
# these bounds. At 100,000 vectors of the quality corpus (bench/vector_side.py), 4x found the asked
# item among search_memory's 50 nearest for 95% of questions (ef_search 64: 90%), and among
# get_context's 200 for 88% of tasks (ef_search 200: 73%), at 7 and 24 ms a statement.
EF_SEARCH = 64
EF_PER_RESULT = 4
MAX_EF_SEARCH = 1000
# Rows copied per statement by `sync` (each row's text form is about 3 KB at 384 dimensions).
SYNC_ROWS = 2_000
# The statements, of constant identifiers only: values always go as parameters.
_ADD_COLUMN = f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS {COLUMN} halfvec"
_ALL_COPIED = f"SELECT NOT EXISTS (SELECT 1 FROM {TABLE} WHERE {COLUMN} IS NULL)"  # noqa: S608
_COPY_BY_ID = (
    f"UPDATE {TABLE} AS e SET {COLUMN} = v.vec::halfvec "  # noqa: S608
    "FROM unnest(%s::bigint[], %s::text[]) AS v(id, vec) WHERE e.id = v.id"
)
_COPY_NEW = (
    f"UPDATE {TABLE} AS e SET {COLUMN} = v.vec::halfvec "  # noqa: S608
    "FROM unnest(%s::bigint[], %s::text[]) AS v(fact_id, vec) "
    f"WHERE e.fact_id = v.fact_id AND e.model = %s AND e.{COLUMN} IS NULL"
)
_MODELS = f"SELECT DISTINCT ON (model) model, octet_length(vector) / 2 FROM {TABLE} ORDER BY model"  # noqa: S608
_NOT_COPIED = f"{TABLE}.{COLUMN} IS NULL"


@dataclass(frozen=True)
class State:
    """What this database offers: pgvector's version (None: not installed) and the copy's state."""

    version: tuple[int, ...] | None = None
    available: bool = False  # installable here (pg_available_extensions), whether created or not
    column: bool = False
    ready: bool = False

    @property
    def usable(self) -> bool:
        return self.version is not None and self.version >= MIN_VERSION


_lock = threading.Lock()
_states: dict[str, State] = {}
_indexed: set[str] = set()  # models whose HNSW index this process has seen or made


def enabled() -> bool:
    """Whether reads ask PostgreSQL for the nearest vectors (else: the in-process index)."""
    return bool(settings.UNFORGETTER["PGVECTOR"]) and ready()


def ready() -> bool:
    """Whether this database could serve the reads (pgvector 0.8+, every vector copied), whatever
    PGVECTOR says."""
    if connection.vendor != "postgresql":
        return False
    found = state()
    return found.usable and found.ready


def writes_copies() -> bool:
    """Whether new vectors get their pgvector copy (the column exists), ready or not yet."""
    if connection.vendor != "postgresql":
        return False
    found = state()
    return found.usable and found.column


def state() -> State:
    """The database's pgvector state, read once per process and database (see `forget`)."""
    key = str(connection.settings_dict["NAME"])
    cached = _states.get(key)
    if cached is None:
        cached = _read_state(connection)
        with _lock:
            _states[key] = cached
    return cached


def forget() -> None:
    """Look at the database again on the next call (after `pgvector_sync`, or in tests)."""
    with _lock:
        _states.clear()
        _indexed.clear()


def _read_state(db: BaseDatabaseWrapper) -> State:
    with db.cursor() as cursor:
        cursor.execute(
            """
            SELECT (SELECT extversion FROM pg_extension WHERE extname = 'vector'),
                   EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector'),
                   col_description(a.attrelid, a.attnum), a.attnum IS NOT NULL
            FROM (SELECT 1) AS one
            LEFT JOIN pg_attribute AS a
              ON a.attrelid = to_regclass(%s) AND a.attname = %s AND NOT a.attisdropped
            """,
            [TABLE, COLUMN],
        )
        version, available, comment, column = cursor.fetchone()
    return State(
        version=_parsed(version) if version else None,
        available=bool(available),
        column=bool(column),
        ready=comment == READY,
    )


def _parsed(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


# --- schema -------------------------------------------------------------------------------------


def install(db: BaseDatabaseWrapper, *, create_extension: bool = True) -> State:
    """Create the extension (when installable and the role may) and the copy's column.

    Never fails for want of the extension or of the right to create it: the in-process index
    then stays in use. The column is marked ready at once when the table holds no vector yet;
    otherwise `sync` fills it and marks it.
    """
    if db.vendor != "postgresql":
        return State()
    found = _read_state(db)
    if found.version is None and found.available and create_extension:
        try:
            with transaction.atomic(using=db.alias), db.cursor() as cursor:
                cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except DatabaseError as exc:
            logger.warning("pgvector is available but not created (%s): the in-process index serves", exc)
        found = _read_state(db)
    if not found.usable:
        if found.version is not None:
            logger.warning(
                "pgvector %s is older than %s: the in-process index serves", found.version, MIN_VERSION
            )
        return found
    with db.cursor() as cursor:
        cursor.execute(_ADD_COLUMN)
        cursor.execute(_ALL_COPIED)
        if cursor.fetchone()[0]:
            _mark_ready(cursor)
    forget()
    return _read_state(db)


def _mark_ready(cursor: Any) -> None:
    # A literal, not a parameter: COMMENT takes no bind parameters, and with server-side binding
    # (DB_PREPARED_STATEMENTS, the default) psycopg would send `IS $1`, a syntax error.
    literal = "'" + READY.replace("'", "''") + "'"
    cursor.execute(f"COMMENT ON COLUMN {TABLE}.{COLUMN} IS {literal}")


def index_name(model: str) -> str:
    return f"embedding_hnsw_{hashlib.sha256(model.encode()).hexdigest()[:12]}"


def ensure_index(cursor: Any, model: str, dimensions: int) -> None:
    """The model's HNSW index (cosine), made once: a partial index holds one model's vectors only."""
    if model in _indexed:
        return
    literal = "'" + model.replace("'", "''") + "'"
    # PostgreSQL refuses CREATE INDEX on a table with pending trigger events, as the deferred
    # foreign-key checks of rows this transaction wrote are: they are run now instead, and
    # deferred again after (Django declares every foreign key DEFERRABLE INITIALLY DEFERRED).
    cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    cursor.execute(
        f"CREATE INDEX IF NOT EXISTS {index_name(model)} ON {TABLE} "
        f"USING hnsw (({COLUMN}::halfvec({int(dimensions)})) halfvec_cosine_ops) WHERE model = {literal}"
    )
    cursor.execute("SET CONSTRAINTS ALL DEFERRED")
    # Remembered once committed: a transaction rolled back takes the index with it.
    transaction.on_commit(lambda: _indexed.add(model))


def sync(*, progress: Callable[[int], None] | None = None) -> int:
    """Copy every vector that has no pgvector copy yet, index each model's, then mark it ready.

    For a database that had vectors before the extension was installed. Safe beside the worker
    (which copies what it writes) and to run again; returns how many rows it copied.
    """
    found = install(connection)
    if not found.usable:
        return 0
    copied = 0
    after = 0
    while True:
        rows = list(
            Embedding.objects.extra(where=[_NOT_COPIED])  # noqa: S610 - no parameters
            .filter(id__gt=after)
            .order_by("id")
            .values_list("id", "vector")[:SYNC_ROWS]
        )
        if not rows:
            break
        with connection.cursor() as cursor:
            cursor.execute(_COPY_BY_ID, [[r[0] for r in rows], [as_text(_decoded(r[1])) for r in rows]])
        copied += len(rows)
        after = rows[-1][0]
        if progress:
            progress(copied)
    with connection.cursor() as cursor:
        for model, dimensions in _models(cursor):
            ensure_index(cursor, model, dimensions)
        _mark_ready(cursor)
        # Fresh statistics: without them the planner takes a filled table for empty and scans
        # each project's vectors exactly (400 ms at 100,000) instead of walking the HNSW index.
        cursor.execute(f"ANALYZE {TABLE}")
    forget()
    return copied


def missing_copies() -> int:
    """How many vectors have no pgvector copy (all of them while the column does not exist)."""
    if not writes_copies():
        return Embedding.objects.count()
    return Embedding.objects.extra(where=[_NOT_COPIED]).count()  # noqa: S610 - no parameters


def _models(cursor: Any) -> list[tuple[str, int]]:
    """Each model with vectors, and its dimensions (float16: two bytes each)."""
    cursor.execute(_MODELS)
    return [(model, int(dimensions)) for model, dimensions in cursor.fetchall()]


# --- writes -------------------------------------------------------------------------------------


def as_text(vector: np.ndarray) -> str:
    """pgvector's text form of a vector: `[0.1,-0.2,...]` (enough digits for float16)."""
    return "[" + ",".join(["%.5g"] * len(vector)) % tuple(vector.tolist()) + "]"


def _decoded(stored: bytes | memoryview) -> np.ndarray:
    return np.frombuffer(bytes(stored), dtype="<f2").astype(np.float32)


def store_copies(*, model: str, rows: Sequence[tuple[int, bytes]]) -> None:
    """Write the pgvector copy of just-stored vectors: (fact id, float16 bytes) of this model.

    Called in the transaction that stored them. A model's first vectors also make its HNSW index
    (cheap then: no row holds that model yet), once the copy is ready: before that, `sync` does.
    """
    if not rows or not writes_copies():
        return
    with connection.cursor() as cursor:
        if state().ready and model not in _indexed:
            ensure_index(cursor, model, len(rows[0][1]) // 2)
        cursor.execute(_COPY_NEW, [[r[0] for r in rows], [as_text(_decoded(r[1])) for r in rows], model])


# --- reads --------------------------------------------------------------------------------------


@dataclass
class ProjectVectors:
    """The project's vectors under one model, searched in PostgreSQL (the VectorIndex counterpart).

    Made per call: it keeps the vectors of the neighbours its search found (`vectors_of`), for
    telling near-duplicates apart without a second statement.
    """

    project_id: int
    model: str
    _found: dict[int, np.ndarray] = field(default_factory=dict)

    def nearest(
        self,
        query: np.ndarray,
        *,
        limit: int,
        items: QuerySet[Fact],
        states: Collection[str],
        kinds: Collection[str] | None,
        classes: Collection[str],
    ) -> list[tuple[int, float]]:
        """The `limit` nearest items of `items` (the caller's scoped queryset) in these states and
        kinds, with their cosine, best first; equal scores go to the newest item."""
        if limit <= 0 or not classes:
            return []
        visible = items.filter(state__in=list(states))
        if kinds is not None:
            visible = visible.filter(kind__in=list(kinds))
        dimensions = len(query)
        # The expression of the model's HNSW index (`ensure_index`), so that PostgreSQL can use it.
        distance = RawSQL(  # noqa: S611 - constant identifiers, the vector as a parameter
            f'("{TABLE}"."{COLUMN}"::halfvec({dimensions})) <=> %s::halfvec({dimensions})', [as_text(query)]
        )
        nearest = (
            Embedding.objects.filter(
                model=self.model,
                project_id=self.project_id,
                data_class__in=list(classes),
                fact__in=visible.order_by().values("pk"),
            )
            .annotate(distance=distance)
            .order_by("distance")
            .values_list("fact_id", "distance", "vector")[:limit]
        )
        sql, params = nearest.query.sql_with_params()
        ef_search = min(max(EF_SEARCH, EF_PER_RESULT * limit), MAX_EF_SEARCH)
        # Relaxed order: the scan goes on past the first candidates the filter drops, and the few
        # results it returns slightly out of order are sorted here.
        rows = bounded_rows(
            sql,
            params,
            local_settings={"hnsw.ef_search": str(ef_search), "hnsw.iterative_scan": "relaxed_order"},
        )
        found = sorted(((int(i), 1.0 - float(d)) for i, d, _ in rows), key=lambda r: (-r[1], -r[0]))
        self._found = {int(i): _decoded(v) for i, _, v in rows}
        if found:
            _with_vectors.add((self.project_id, self.model))
        return found

    def vectors_of(self, fact_ids: Collection[int]) -> StoredVectors:
        """The vectors of these facts among the neighbours the last search found."""
        return StoredVectors.of({i: self._found[i] for i in fact_ids if i in self._found})


# Projects whose search found vectors in this process: their queries are worth embedding early
# (memory.retrieval.prefetch_query_vector), as for a project the in-process index holds.
_with_vectors: set[tuple[int, str]] = set()


def holds(project_id: int, model: str) -> bool:
    return (project_id, model) in _with_vectors
