"""Hot-path queries compiled to SQL once per process, then run with each call's values.

Building a queryset and compiling it costs the ORM far more than the database takes to answer:
profiled, a proposal's five small indexed reads spent about 60% of its CPU in `filter()` and
`as_sql()` and under a tenth in SQLite. A `Prepared` query is built once per shape (per number of
values in each list argument) with stand-in values, compiled by the ORM itself, and the stand-ins
are then replaced by each call's values: the SQL is exactly what the ORM would have sent.

Only for `values_list` queries; each value is converted as the ORM converts it (a date read from
SQLite's text becomes a datetime). A query built with `raw=True` skips the conversion and returns
what the database driver gives: for comparing a row with itself, never for reading it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import QuerySet

# Stand-ins no real value is: a call's values are matched to the compiled parameters through them.
_INT_BASE = -(2**62) + 7_919
_TEXT_MARK = "\x00prepared-stand-in-{}\x00"

Shape = tuple[int | None, ...]  # per argument: the length of a list argument, or None for a scalar
# Where a compiled parameter's value comes from: (argument, index in it or None), or (None, a constant).
Slot = tuple[int, int | None] | tuple[None, Any]
# A compiled shape: its SQL, its parameters' slots, and the conversion of its rows (None: none needed).
_Compiled = tuple[str, list[Slot], Callable[[list[Any]], list[tuple[Any, ...]]] | None]


class Prepared:
    """`build(*args)` returns a values_list queryset; `rows(*args)` runs its compiled SQL with `args`.

    A list argument (the values of an `__in`) may have any length: each length is one shape,
    compiled on first use.
    """

    def __init__(
        self, build: Callable[..., QuerySet[Any, Any]], *, using: str = "default", raw: bool = False
    ) -> None:
        self._build = build
        self._using = using
        self._raw = raw
        # (vendor, shape) -> its SQL, slots and converter, or None where the ORM knows the answer
        # is empty
        self._compiled: dict[tuple[str, Shape], _Compiled | None] = {}

    def rows(self, *args: Any) -> list[tuple[Any, ...]]:
        connection = connections[self._using]
        shape: Shape = tuple(len(a) if isinstance(a, list | tuple | set | frozenset) else None for a in args)
        key = (connection.vendor, shape)
        if key not in self._compiled:
            self._compiled[key] = self._compile(args, shape)
        compiled = self._compiled[key]
        if compiled is None:
            return []
        sql, slots, convert = compiled
        values = [list(a) if length is not None else a for a, length in zip(args, shape, strict=True)]
        params = [
            slot[1] if slot[0] is None else (values[slot[0]] if slot[1] is None else values[slot[0]][slot[1]])
            for slot in slots
        ]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            fetched = cursor.fetchall()
        return convert(fetched) if convert else [tuple(row) for row in fetched]

    def _compile(self, args: Sequence[Any], shape: Shape) -> _Compiled | None:
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
        columns = [column for column, _, _ in compiler.select]
        converters = {} if self._raw else compiler.get_converters(columns)

        def converted(fetched: list[Any]) -> list[tuple[Any, ...]]:
            return [tuple(row) for row in compiler.apply_converters(fetched, converters)]

        convert = converted if converters else None

        slots: list[Slot] = [
            where[p] if (isinstance(p, int | str) and p in where) else (None, p) for p in params
        ]
        if len([s for s in slots if s[0] is not None]) != sum(
            1 if length is None else length for length in shape
        ):
            raise TypeError("Every argument of a prepared query must appear once in its SQL.")
        return sql, slots, convert
