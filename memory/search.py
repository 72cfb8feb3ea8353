"""The words of a query, and full-text matching and highlighting over memory items in SQL.

What agents get is ranked in process (memory.lexical_index, fused with the vectors by
memory.retrieval); this module says which words a query searches for and excludes, and holds
what the database's full-text index does best: the console's every-word filter (`rank`).

PostgreSQL: a stored generated `tsvector` column with a GIN index. SQLite: an external-content
FTS5 table kept in step by triggers (migration 0002). Every query here also filters by project,
state and data class in SQL, so no hidden row ever counts towards a limit or an offset.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection as db

from memory.lexical_index import Hit
from memory.query_limits import MAX_TERMS, bounded_query, bounded_rows
from memory.stopwords import STOP_WORDS

_WORD_RE = re.compile(r"\w+", re.UNICODE)
# "-word" at the start of the query or after a space excludes items with that word.
_EXCLUDED_RE = re.compile(r"(?:^|(?<=\s))-(\w+)", re.UNICODE)
MAX_TERM_LENGTH = 64


def terms(query: str) -> list[str]:
    """The searchable words of a query, bounded in number and length, duplicates dropped."""
    words = [w[:MAX_TERM_LENGTH] for w in _WORD_RE.findall(query) if w.strip("_")]
    return list(dict.fromkeys(w.casefold() for w in words))[:MAX_TERMS]


def excluded(query: str) -> list[str]:
    """The words the query excludes, written `-word`."""
    words = [w[:MAX_TERM_LENGTH].casefold() for w in _EXCLUDED_RE.findall(query) if w.strip("_")]
    return list(dict.fromkeys(words))[:MAX_TERMS]


def keywords(query: str) -> list[str]:
    """The words of a query that say what it is about: its terms less stop words and exclusions.

    A query of stop words alone keeps them, so that it still searches for something.
    """
    unwanted = set(excluded(query))
    words = [w for w in terms(query) if w not in unwanted]
    return [w for w in words if w not in STOP_WORDS] or words


def _placeholders(values: Sequence[Any]) -> str:
    return ", ".join(["%s"] * len(values))


@dataclass(frozen=True)
class _Scope:
    """The filter every row counted, fetched or scored passes, as SQL and its parameters."""

    sql: str
    params: list[Any]


def _scope(
    project_id: int, data_classes: Sequence[str], states: Sequence[str], kinds: list[str] | None
) -> _Scope:
    kind_sql = f" AND f.kind IN ({_placeholders(kinds)})" if kinds else ""
    return _Scope(
        sql=(
            f"f.project_id = %s AND f.state IN ({_placeholders(states)}) "
            f"AND f.data_class IN ({_placeholders(data_classes)}){kind_sql}"
        ),
        params=[project_id, *states, *data_classes, *(kinds or [])],
    )


def rank(
    *,
    project_id: int,
    data_classes: Sequence[str],
    states: Sequence[str],
    query: str,
    kinds: Iterable[str] | None = None,
    limit: int,
    offset: int = 0,
) -> list[Hit]:
    """The console's filter: items holding every word of the query, best first, ties to the newest.

    The work is bounded (memory.query_limits): the query is cut to its allowed words and
    negations, and the statement runs under the per-query time budget (`bounded_rows`).
    """
    query = bounded_query(query)
    words = terms(query)
    if not words or not data_classes:
        return []
    scope = _scope(project_id, data_classes, states, list(kinds) if kinds is not None else None)
    if db.vendor == "postgresql":
        return _all_postgresql(scope, query, limit, offset)
    return _rank_sqlite(scope, _fts5_query(words), limit, offset)


def _all_postgresql(scope: _Scope, query: str, limit: int, offset: int) -> list[Hit]:
    sql = f"""
        SELECT f.id, ts_rank_cd(f.search_vector, q.query, 32) AS score, f.kind
        FROM memory_fact f, websearch_to_tsquery('english', %s) AS q(query)
        WHERE f.search_vector @@ q.query AND {scope.sql}
        ORDER BY score DESC, f.id DESC
        LIMIT %s OFFSET %s
    """  # noqa: S608 - only placeholders are interpolated
    return _hits(sql, [query, *scope.params, limit, offset])


def _fts5_query(words: list[str]) -> str:
    """An FTS5 expression matching items that hold every one of the words (each quoted)."""
    return " ".join('"' + word.replace('"', "") + '"' for word in words)


def _rank_sqlite(scope: _Scope, fts5_query: str, limit: int, offset: int) -> list[Hit]:
    # FTS5's bm25() weighs each word by its frequency in the whole index.
    sql = f"""
        SELECT f.id, -bm25(memory_fact_fts) AS score, f.kind
        FROM memory_fact_fts JOIN memory_fact f ON f.id = memory_fact_fts.rowid
        WHERE memory_fact_fts MATCH %s AND {scope.sql}
        ORDER BY score DESC, f.id DESC
        LIMIT %s OFFSET %s
    """  # noqa: S608 - only placeholders are interpolated
    return _hits(sql, [fts5_query, *scope.params, limit, offset])


def _hits(sql: str, params: list[Any]) -> list[Hit]:
    return [Hit(row[0], float(row[1]), row[2]) for row in bounded_rows(sql, params)]
