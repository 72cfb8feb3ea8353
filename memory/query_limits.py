"""Bounded work per query, on both databases: what any ranking code calls before it runs.

A query's text is cut to MAX_TERMS words, at most MAX_NEGATIONS of them negated (PostgreSQL's
`websearch_to_tsquery` turns each `-word` into a NOT over the whole candidate set; 120 of them
cost 224 ms); each ranking query scores at most a capped number of candidates (memory.search);
and `bounded_rows` stops a statement that still runs past SEARCH_STATEMENT_TIMEOUT_MS
(PostgreSQL: a transaction-local `statement_timeout`; SQLite: a progress handler), answered with
`invalid_request` rather than holding a worker. None of this decides what anyone may see.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.db import OperationalError
from django.db import connection as db

from workspaces.exceptions import InvalidRequest

MAX_TERMS = 24
MAX_NEGATIONS = 4
# SQLite calls the progress handler every this many virtual-machine instructions (a few ms of
# work): each call takes the GIL, so a smaller step would slow every query under load.
_SQLITE_PROGRESS_STEPS = 1_000_000


class QueryTooCostly(InvalidRequest):
    def __init__(self) -> None:
        super().__init__(
            "This query asks for more work than one call may take.",
            action="Use fewer, more specific words (and fewer negated ones), then call again.",
        )


def bounded_query(query: str) -> str:
    """`query` (web-search syntax) cut to MAX_TERMS words, at most MAX_NEGATIONS of them negated.

    Words are whitespace-separated tokens, so a quoted phrase counts one per word and `OR`
    counts too; negations past the limit are dropped, not turned into positive words.
    """
    kept: list[str] = []
    negations = 0
    for token in query.split():
        if token.startswith("-") and token.strip("-"):
            negations += 1
            if negations > MAX_NEGATIONS:
                continue
        kept.append(token)
        if len(kept) == MAX_TERMS:
            break
    return " ".join(kept)


def _timeout_ms() -> int:
    return int(settings.UNFORGETTER.get("SEARCH_STATEMENT_TIMEOUT_MS") or 0)


def time_budget_seconds() -> float:
    """The per-query time budget, for ranking work done in process (unbounded when 0)."""
    return _timeout_ms() / 1000.0 or float("inf")


# Sent with the statement in one simple-query message: PostgreSQL runs the two as one implicit
# transaction, so the transaction-local settings (the timeout, a search's own) apply to the
# statement after them and are gone afterwards (the pooled connection keeps none), at no extra
# round trip. Only a cursor that binds parameters client-side may send two statements in one
# execute(), so this one does whatever the connection's cursors do (`_client_side_cursor`).
def _pg_settings_prefix(count: int) -> str:
    return "SELECT " + ", ".join(["set_config(%s, %s, true)"] * count) + "; "


def bounded_rows(
    sql: str, params: Sequence[Any], *, local_settings: Mapping[str, str] | None = None
) -> list[tuple[Any, ...]]:
    """The rows of one read statement, run under the per-query time budget; QueryTooCostly past it.

    `local_settings` are PostgreSQL settings for this statement alone (ignored on SQLite).
    """
    timeout = _timeout_ms()
    with _client_side_cursor() if db.vendor == "postgresql" else db.cursor() as cursor:
        if db.vendor == "postgresql":
            wanted = {
                **(local_settings or {}),
                **({"statement_timeout": str(timeout)} if timeout > 0 else {}),
            }
            if not wanted:
                cursor.execute(sql, params)
                return list(cursor.fetchall())
            pairs = [value for pair in wanted.items() for value in pair]
            try:
                cursor.execute(_pg_settings_prefix(len(wanted)) + sql, [*pairs, *params])
            except OperationalError as exc:
                if getattr(exc.__cause__, "sqlstate", None) == "57014":  # query_canceled
                    raise QueryTooCostly() from None
                raise
            cursor.cursor.nextset()  # past set_config's row, to the statement's
            return list(cursor.fetchall())
        if timeout <= 0:
            cursor.execute(sql, params)
            return list(cursor.fetchall())
        with _sqlite_deadline(timeout):
            cursor.execute(sql, params)
            return list(cursor.fetchall())


def _client_side_cursor() -> Any:
    """A Django cursor (logged as the connection's are) over a psycopg cursor that binds
    parameters client-side, whatever the connection's own cursors do (DB_PREPARED_STATEMENTS)."""
    from psycopg import ClientCursor  # noqa: PLC0415 - PostgreSQL only

    db.ensure_connection()
    raw: Any = ClientCursor(db.connection)
    return db.make_debug_cursor(raw) if db.queries_logged else db.make_cursor(raw)


@contextmanager
def _sqlite_deadline(timeout_ms: int) -> Iterator[None]:
    raw = db.connection
    deadline = time.monotonic() + timeout_ms / 1000
    raw.set_progress_handler(lambda: int(time.monotonic() > deadline), _SQLITE_PROGRESS_STEPS)
    try:
        yield
    except OperationalError as exc:
        if "interrupted" in str(exc):
            raise QueryTooCostly() from None
        raise
    finally:
        raw.set_progress_handler(None, 0)
