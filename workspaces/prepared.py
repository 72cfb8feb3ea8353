"""Hot-path queries compiled to SQL once per process, then run with each call's values.

Building a queryset and compiling it costs the ORM far more than the database takes to answer:
profiled, a proposal's five small indexed reads spent about 60% of its CPU in `filter()` and
`as_sql()` and under a tenth in SQLite. A `Prepared` query is built once per shape (per number of
values in each list argument) with stand-in values, compiled by the ORM itself, and the stand-ins
are then replaced by each call's values: the SQL is exactly what the ORM would have sent.

`Prepared` is for `values_list` queries; each value is converted as the ORM converts it (a date
read from SQLite's text becomes a datetime), and one built with `raw=True` returns what the
database driver gives, unconverted: for comparing a row with itself, never for reading it.
`PreparedObjects` is for querysets of model instances (with `select_related`):
rows are converted and instances built as the ORM's own iterator builds them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import Model, QuerySet
from django.db.models.query import ModelIterable, get_related_populators  # type: ignore[attr-defined]
from django.db.models.sql.compiler import SQLCompiler

# Stand-ins no real value is: a call's values are matched to the compiled parameters through them.
_INT_BASE = -(2**62) + 7_919
_TEXT_MARK = "\x00prepared-stand-in-{}\x00"

Shape = tuple[int | None, ...]  # per argument: the length of a list argument, or None for a scalar
# Where a compiled parameter's value comes from: (argument, index in it or None), or (None, a constant)
# where the constant may be the _Places of one parameter holding a list (`= ANY(%s)`).
Slot = tuple[int, int | None] | tuple[None, Any]


class Beside(NamedTuple):
    """Scalar statements run beside a prepared query, in its statement: `(SELECT ...), (SELECT ...)`
    and their parameters. Their values end each of its rows, as the database returns them."""

    sql: str
    params: list[Any]


@dataclass(frozen=True)
class Read:
    """A prepared query with its arguments, to be run later or beside another (`rows_and_one`)."""

    prepared: Prepared
    args: tuple[Any, ...]
    beside: Beside | None = None

    def rows(self) -> list[tuple[Any, ...]]:
        return self.prepared.rows(*self.args, beside=self.beside)


class _Places(list[tuple[int, int | None]]):
    """The arguments' values one list parameter holds (PostgreSQL's `= ANY(%s)`), by place."""

    def values(self, arguments: list[Any]) -> list[Any] | str:
        """The parameter's value: the list, or for integers the array's text (`{1,2,3}`).

        psycopg dumps a list element by element (a type check, a conversion and a regular
        expression for each), about a fifth of what a primary-key lookup of 136 ids costs in
        all; PostgreSQL reads the text as an array of the column's type.
        """
        found = [arguments[a] if i is None else arguments[a][i] for a, i in self]
        if all(type(value) is int for value in found):
            return "{" + ",".join(map(str, found)) + "}"
        return found


class Prepared:
    """`build(*args)` returns a values_list queryset; `rows(*args)` runs its compiled SQL with `args`.

    A list argument (the values of an `__in`) may have any length: each length is one shape,
    compiled on first use. `by_primary_key` names a table whose rows the query finds by their
    ids: on SQLite it is then read `NOT INDEXED` (see `sqlite_by_primary_key`).
    """

    def __init__(
        self,
        build: Callable[..., QuerySet[Any, Any]],
        *,
        using: str = "default",
        raw: bool = False,
        by_primary_key: str | None = None,
    ) -> None:
        self._build = build
        self._using = using
        self._raw = raw
        self._by_primary_key = by_primary_key
        # (vendor, shape) -> its SQL and slots, or None where the ORM knows the answer is empty
        self._compiled: dict[tuple[str, Shape], tuple[str, list[Slot], SQLCompiler] | None] = {}

    def rows(self, *args: Any, beside: Beside | None = None) -> list[tuple[Any, ...]]:
        """The query's rows for `args`; with `beside`, each row also ends with its values."""
        ran = self._run(args, beside)
        if ran is None:
            return []
        compiler, fetched = ran
        return self._converted(compiler, fetched)

    def rows_and_one(
        self, args: Sequence[Any], also: Read
    ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """`rows(*args)` and `also.rows()`, in one statement: for a read of at most one row that
        is wanted beside this query's (workspaces.bearers: a call's first read beside its
        credential's). `also` must find at most one row; it gets none where this query finds
        none."""
        mine = self._statement(args, None)
        theirs = also.prepared._statement(also.args, also.beside)
        if mine is None or theirs is None or also.prepared._using != self._using:
            return self.rows(*args), also.rows()
        (compiler, sql, params), (also_compiler, also_sql, also_params) = mine, theirs
        width = len(compiler.select)
        # ORM-compiled SQL of both; every value is a parameter.
        joined = (
            f"SELECT mine.*, also.* FROM ({sql}) AS mine LEFT JOIN "  # noqa: S608
            f"(SELECT 1 AS also_found, also_query.* FROM ({also_sql}) AS also_query) AS also ON TRUE"
        )
        with connections[self._using].cursor() as cursor:
            cursor.execute(joined, [*params, *also_params])
            fetched = cursor.fetchall()
        rows = self._converted(compiler, [row[:width] for row in fetched])
        found = [row[width + 1 :] for row in fetched[:1] if row[width] is not None]
        return rows, also.prepared._converted(also_compiler, found)

    def _converted(self, compiler: SQLCompiler, fetched: list[Any]) -> list[tuple[Any, ...]]:
        converters = {} if self._raw else compiler.get_converters([c for c, _, _ in compiler.select])
        if converters:
            return [tuple(row) for row in compiler.apply_converters(fetched, converters)]
        return [tuple(row) for row in fetched]

    def _run(self, args: Sequence[Any], beside: Beside | None = None) -> tuple[SQLCompiler, list[Any]] | None:
        """The compiler of the query's shape and the rows its SQL returns with `args`."""
        statement = self._statement(args, beside)
        if statement is None:
            return None
        compiler, sql, params = statement
        with connections[self._using].cursor() as cursor:
            cursor.execute(sql, params)
            return compiler, cursor.fetchall()

    def _statement(
        self, args: Sequence[Any], beside: Beside | None = None
    ) -> tuple[SQLCompiler, str, list[Any]] | None:
        """The compiler of the query's shape, and its SQL and parameters for `args` (None where
        the ORM knows the answer is empty)."""
        connection = connections[self._using]
        shape: Shape = tuple(len(a) if isinstance(a, list | tuple | set | frozenset) else None for a in args)
        key = (connection.vendor, shape)
        if key not in self._compiled:
            self._compiled[key] = self._compile(args, shape)
        compiled = self._compiled[key]
        if compiled is None:
            return None
        sql, slots, compiler = compiled
        values = [list(a) if length is not None else a for a, length in zip(args, shape, strict=True)]
        params = [
            (values[a] if i is None else values[a][i])
            if a is not None
            else (i.values(values) if isinstance(i, _Places) else i)
            for a, i in slots
        ]
        if beside is not None:
            # Its values go after the query's columns, which keep their places (and converters).
            sql = f"SELECT prepared.*, {beside.sql} FROM ({sql}) AS prepared"  # noqa: S608
            params = [*beside.params, *params]
        return compiler, sql, params

    def _check(self, queryset: QuerySet[Any, Any], compiler: SQLCompiler) -> None:
        """Refuse, at its first compilation, a queryset this kind of query cannot answer."""

    def _compile(self, args: Sequence[Any], shape: Shape) -> tuple[str, list[Slot], SQLCompiler] | None:
        counter = itertools.count()
        where: dict[Any, tuple[int, int | None]] = {}

        def stand_in(example: Any, position: tuple[int, int | None]) -> Any:
            n = next(counter)
            value: Any = _INT_BASE - n if isinstance(example, int) else _TEXT_MARK.format(n)
            where[value] = position
            return value

        stand_ins = [
            [stand_in(v, (i, j)) for j, v in enumerate(arg)]
            if length is not None
            else stand_in(arg, (i, None))
            for i, (arg, length) in enumerate(zip(args, shape, strict=True))
        ]
        queryset = self._build(*stand_ins)
        compiler = queryset.query.get_compiler(using=self._using)
        try:
            sql, params = compiler.as_sql()
        except EmptyResultSet:  # an empty `__in`: the ORM answers [] without asking the database
            return None
        self._check(queryset, compiler)
        if self._by_primary_key is not None and compiler.connection.vendor == "sqlite":
            sql = sqlite_by_primary_key(sql, self._by_primary_key)

        def stood_in(p: Any) -> bool:
            return isinstance(p, int | str) and p in where

        def slot(p: Any) -> Slot:
            if stood_in(p):
                return where[p]
            if isinstance(p, list) and p and all(map(stood_in, p)):
                return (None, _Places(where[v] for v in p))
            return (None, p)

        slots = [slot(p) for p in params]
        placed = sum(len(i) if isinstance(i, _Places) else a is not None for a, i in slots)
        if placed != sum(1 if length is None else length for length in shape):
            raise TypeError("Every argument of a prepared query must appear once in its SQL.")
        return sql, slots, compiler


def sqlite_by_primary_key(sql: str, table: str) -> str:
    """`sql` with `table` read `NOT INDEXED`: its rows found by their ids, one lookup each.

    Asked for a few hundred rows by id within a project and a scope, SQLite's planner searches a
    secondary index holding the project (or the workspace) and the id, then the table by rowid
    for the other columns: two B-tree searches a row. Without secondary indexes it searches the
    table by rowid alone and checks the other terms on the row it finds: 0.27 against 0.39 ms
    for 128 ids at 100,000 items in the project. Primary-key lookups are still allowed.
    """
    quoted = f'FROM "{table}" '
    if sql.count(quoted) != 1:
        raise ValueError(f"Expected one FROM {table} in the statement to hint.")
    return sql.replace(quoted, f'FROM "{table}" NOT INDEXED ', 1)


@dataclass(frozen=True)
class _Plan:
    """How a compiled query's rows become instances: what ModelIterable works out per queryset."""

    converters: dict[int, Any]
    model: type[Model]
    first: int
    last: int
    names: list[str]
    populators: list[Any]


class PreparedObjects(Prepared):
    """`build(*args)` returns a queryset of model instances; `objects(*args)` runs its compiled SQL.

    The instances are built as Django's ModelIterable builds them (the database's values
    converted, the `select_related` instances populated) from what the compiler worked out once
    per shape: only the compiling is skipped. For plain querysets: no annotations, `only()`,
    `defer()` or prefetching; anything else raises when it is compiled.
    """

    def __init__(self, build: Callable[..., QuerySet[Any, Any]], *, using: str = "default") -> None:
        super().__init__(build, using=using)
        self._plans: dict[int, _Plan] = {}

    def objects(self, *args: Any) -> list[Model]:
        ran = self._run(args)
        if ran is None:
            return []
        compiler, rows = ran
        plan = self._plans[id(compiler)]
        if plan.converters:
            rows = list(compiler.apply_converters(rows, plan.converters))
        db = compiler.using
        found = []
        for row in rows:
            instance = plan.model.from_db(db, plan.names, row[plan.first : plan.last])
            for populator in plan.populators:
                populator.populate(row, instance)
            found.append(instance)
        return found

    def _check(self, queryset: QuerySet[Any, Any], compiler: SQLCompiler) -> None:
        if (
            queryset._iterable_class is not ModelIterable
            or getattr(queryset, "_prefetch_related_lookups", False)
            or getattr(queryset, "_known_related_objects", False)
            or compiler.annotation_col_map
            or compiler.query.deferred_loading != (frozenset(), True)
            or compiler.klass_info is None
        ):
            raise TypeError("Prepared objects are plain querysets: no annotations, only() or defer().")
        select, klass_info = compiler.select, compiler.klass_info
        first, last = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
        self._plans[id(compiler)] = _Plan(
            converters=compiler.get_converters([column[0] for column in select[: compiler.col_count]]),
            model=klass_info["model"],
            first=first,
            last=last,
            names=[column[0].target.attname for column in select[first:last]],
            populators=get_related_populators(klass_info, select, compiler.using),
        )


# The most parameters one statement may bind: PostgreSQL's protocol counts them in 16 bits once
# the server binds them (unforgetter.settings, DB_PREPARED_STATEMENTS); SQLite allows 32,766.
MAX_PARAMETERS = 65_535

# Turns the WAL flush off for the current transaction only (see PreparedInsert.insert_unflushed).
_NO_FLUSH = "set_config('synchronous_commit', 'off', true)"


class PreparedInsert:
    """Inserts new instances of one model as `bulk_create` does, its SQL built once per row count.

    Each field's value is prepared as the ORM prepares it for a save (`pre_save`, then
    `get_db_prep_save`), and the primary keys come back from the statement (RETURNING) and are
    set on the instances. Only for models whose primary key is the database's (an AutoField) and
    instances without one; rows go in batches of what the database allows per statement.
    With `ignore_conflicts`, a row that would break a unique constraint is left out (`ON CONFLICT
    DO NOTHING`, as `bulk_create(ignore_conflicts=True)`), and no primary key is set.

    `insert_unflushed` is for rows that record a read, not memory, outside any transaction: on
    PostgreSQL the statement commits without waiting for its WAL flush (its own transaction's
    `synchronous_commit` off, set by the statement itself: one round trip).
    """

    def __init__(self, model: type[Model], *, using: str = "default", ignore_conflicts: bool = False) -> None:
        self._model = model
        self._using = using
        self._ignore_conflicts = ignore_conflicts
        self._sql: dict[tuple[str, int], str] = {}

    def insert(self, instances: Sequence[Model]) -> None:
        self._insert(instances, unflushed=False)

    def insert_unflushed(self, instances: Sequence[Model]) -> None:
        """`insert` in autocommit; on PostgreSQL each statement commits without a WAL flush.

        A data-modifying WITH always runs; `set_config(..., true)` lasts for the statement's own
        transaction, whose commit reads it: only a crash of the database server itself can lose
        the last fraction of a second of such rows.
        """
        connection = connections[self._using]
        assert self._ignore_conflicts, "no primary keys come back from an unflushed insert"
        assert not connection.in_atomic_block, "a transaction's commit is its caller's"
        self._insert(instances, unflushed=connection.vendor == "postgresql")

    def _insert(self, instances: Sequence[Model], *, unflushed: bool) -> None:
        connection = connections[self._using]
        meta = self._model._meta
        fields = [f for f in meta.concrete_fields if f is not meta.pk and not getattr(f, "generated", False)]
        size = max(1, min(connection.ops.bulk_batch_size(fields, instances), MAX_PARAMETERS // len(fields)))
        for start in range(0, len(instances), size):
            batch = instances[start : start + size]
            params = [f.get_db_prep_save(f.pre_save(obj, True), connection) for obj in batch for f in fields]
            statement = self._statement(connection.vendor, len(batch), fields)
            if unflushed:
                statement = f"WITH _rows AS ({statement}) SELECT {_NO_FLUSH}"
            with connection.cursor() as cursor:
                cursor.execute(statement, params)
                if not self._ignore_conflicts:
                    for obj, (key,) in zip(batch, cursor.fetchall(), strict=True):
                        obj.pk = key
            for obj in batch:
                obj._state.adding = False
                obj._state.db = self._using

    def _statement(self, vendor: str, rows: int, fields: list[Any]) -> str:
        sql = self._sql.get((vendor, rows))
        if sql is None:
            quote = connections[self._using].ops.quote_name
            meta = self._model._meta
            table, key, columns = (
                quote(meta.db_table),
                quote(meta.pk.column),
                ", ".join(quote(f.column) for f in fields),
            )
            row = "(" + ", ".join(["%s"] * len(fields)) + ")"
            ending = "ON CONFLICT DO NOTHING" if self._ignore_conflicts else f"RETURNING {key}"
            # Only quoted names from the model's meta and placeholders are interpolated.
            sql = f"INSERT INTO {table} ({columns}) VALUES {', '.join([row] * rows)} {ending}"  # noqa: S608
            self._sql[(vendor, rows)] = sql
        return sql


class PreparedUpdate:
    """Sets the same values on rows of one model chosen by primary key, as
    `filter(pk__in=keys).update(**values)` does, its SQL built once per process and row count.

    Each value is prepared as the ORM prepares an update's (`get_db_prep_save`); plain values only,
    no expressions. Returns how many rows were updated.
    """

    def __init__(self, model: type[Model], fields: Sequence[str], *, using: str = "default") -> None:
        self._model = model
        concrete = {f.name: f for f in model._meta.concrete_fields}
        self._fields: list[Any] = [concrete[name] for name in fields]
        self._using = using
        self._sql: dict[tuple[str, int], str] = {}

    def update(self, keys: Sequence[Any], **values: Any) -> int:
        if sorted(values) != sorted(f.name for f in self._fields):
            raise TypeError("A prepared update sets exactly the fields it was made for.")
        connection = connections[self._using]
        pk = self._model._meta.pk
        assert pk is not None
        sets = [f.get_db_prep_save(values[f.name], connection) for f in self._fields]
        updated = 0
        for start in range(0, len(keys), _UPDATE_KEYS):
            chunk = [pk.get_db_prep_value(key, connection) for key in keys[start : start + _UPDATE_KEYS]]
            with connection.cursor() as cursor:
                cursor.execute(self._statement(connection.vendor, len(chunk)), [*sets, *chunk])
                updated += cursor.rowcount
        return updated

    def _statement(self, vendor: str, rows: int) -> str:
        sql = self._sql.get((vendor, rows))
        if sql is None:
            quote = connections[self._using].ops.quote_name
            meta = self._model._meta
            assert meta.pk is not None
            sets = ", ".join(f"{quote(f.column)} = %s" for f in self._fields)
            keys = ", ".join(["%s"] * rows)
            # Only quoted names from the model's meta and placeholders are interpolated.
            sql = f"UPDATE {quote(meta.db_table)} SET {sets} WHERE {quote(meta.pk.column)} IN ({keys})"  # noqa: S608
            self._sql[(vendor, rows)] = sql
        return sql


_UPDATE_KEYS = 500  # primary keys per UPDATE statement, well within every database's limit
