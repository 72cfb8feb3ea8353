"""Full-text ranking over memory items, on PostgreSQL and on SQLite.

PostgreSQL: a stored generated `tsvector` column with a GIN index, `websearch_to_tsquery`.
SQLite: an external-content FTS5 table kept in step by triggers (migration 0002).
Both return ids with a score (higher is better); callers apply scoping before anything is shown,
and every query here also filters by project, state and data class in SQL, so no hidden row
ever counts towards a limit or an offset.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from django.db import connection as db

Match = Literal["all", "any"]

_WORD_RE = re.compile(r"\w+", re.UNICODE)
MAX_TERMS = 24
MAX_TERM_LENGTH = 64
HIGHLIGHT_START = "**"
HIGHLIGHT_STOP = "**"


@dataclass(frozen=True)
class Hit:
    fact_id: int
    score: float


def terms(query: str) -> list[str]:
    """The searchable words of a query, bounded in number and length, duplicates dropped."""
    words = [w[:MAX_TERM_LENGTH] for w in _WORD_RE.findall(query) if w.strip("_")]
    return list(dict.fromkeys(w.casefold() for w in words))[:MAX_TERMS]


def _placeholders(values: Sequence[Any]) -> str:
    return ", ".join(["%s"] * len(values))


def rank(
    *,
    project_id: int,
    data_classes: Sequence[str],
    states: Sequence[str],
    query: str,
    match: Match,
    kinds: Iterable[str] | None = None,
    limit: int,
    offset: int = 0,
) -> list[Hit]:
    words = terms(query)
    if not words or not data_classes:
        return []
    kinds = list(kinds) if kinds is not None else None
    if db.vendor == "postgresql":
        return _rank_postgresql(project_id, data_classes, states, query, words, match, kinds, limit, offset)
    return _rank_sqlite(project_id, data_classes, states, words, match, kinds, limit, offset)


def _pg_tsquery(query: str, words: list[str], match: Match) -> tuple[str, list[Any]]:
    if match == "all":
        return "websearch_to_tsquery('english', %s)", [query]
    # Any word may match: plainto_tsquery stems and drops stop words, then AND becomes OR.
    return "replace(plainto_tsquery('english', %s)::text, '&', '|')::tsquery", [" ".join(words)]


def _rank_postgresql(
    project_id: int,
    data_classes: Sequence[str],
    states: Sequence[str],
    query: str,
    words: list[str],
    match: Match,
    kinds: list[str] | None,
    limit: int,
    offset: int,
) -> list[Hit]:
    tsquery, tsparams = _pg_tsquery(query, words, match)
    kind_sql = f"AND f.kind IN ({_placeholders(kinds)})" if kinds else ""
    sql = f"""
        SELECT f.id, ts_rank_cd(f.search_vector, q.query, 32) AS score
        FROM memory_fact f, (SELECT {tsquery} AS query) q
        WHERE f.search_vector @@ q.query
          AND f.project_id = %s
          AND f.state IN ({_placeholders(states)})
          AND f.data_class IN ({_placeholders(data_classes)})
          {kind_sql}
        ORDER BY score DESC, f.id DESC
        LIMIT %s OFFSET %s
    """  # noqa: S608 - only placeholders are interpolated
    params: list[Any] = [*tsparams, project_id, *states, *data_classes, *(kinds or []), limit, offset]
    with db.cursor() as cursor:
        cursor.execute(sql, params)
        return [Hit(row[0], float(row[1])) for row in cursor.fetchall()]


def _fts5_query(words: list[str], match: Match) -> str:
    quoted = ['"' + w.replace('"', "") + '"' for w in words]
    return (" OR " if match == "any" else " ").join(quoted)


def _rank_sqlite(
    project_id: int,
    data_classes: Sequence[str],
    states: Sequence[str],
    words: list[str],
    match: Match,
    kinds: list[str] | None,
    limit: int,
    offset: int,
) -> list[Hit]:
    kind_sql = f"AND f.kind IN ({_placeholders(kinds)})" if kinds else ""
    sql = f"""
        SELECT f.id, -bm25(memory_fact_fts) AS score
        FROM memory_fact_fts JOIN memory_fact f ON f.id = memory_fact_fts.rowid
        WHERE memory_fact_fts MATCH %s
          AND f.project_id = %s
          AND f.state IN ({_placeholders(states)})
          AND f.data_class IN ({_placeholders(data_classes)})
          {kind_sql}
        ORDER BY score DESC, f.id DESC
        LIMIT %s OFFSET %s
    """  # noqa: S608 - only placeholders are interpolated
    params: list[Any] = [
        _fts5_query(words, match),
        project_id,
        *states,
        *data_classes,
        *(kinds or []),
        limit,
        offset,
    ]
    with db.cursor() as cursor:
        cursor.execute(sql, params)
        return [Hit(row[0], float(row[1])) for row in cursor.fetchall()]


def highlight(fact_ids: Sequence[int], query: str, *, match: Match = "all") -> dict[int, str]:
    """Excerpts with the matching words marked `**like this**`, for the given (already scoped) ids."""
    words = terms(query)
    if not fact_ids or not words:
        return {}
    if db.vendor == "postgresql":
        tsquery, tsparams = _pg_tsquery(query, words, match)
        sql = f"""
            SELECT f.id, ts_headline('english', f.text, {tsquery},
                'StartSel=**, StopSel=**, MaxWords=35, MinWords=15, MaxFragments=2, FragmentDelimiter=" … "')
            FROM memory_fact f WHERE f.id IN ({_placeholders(fact_ids)})
        """  # noqa: S608
        params: list[Any] = [*tsparams, *fact_ids]
    else:
        sql = f"""
            SELECT rowid, snippet(memory_fact_fts, 0, %s, %s, '…', 32)
            FROM memory_fact_fts WHERE memory_fact_fts MATCH %s AND rowid IN ({_placeholders(fact_ids)})
        """  # noqa: S608
        params = [HIGHLIGHT_START, HIGHLIGHT_STOP, _fts5_query(words, match), *fact_ids]
    with db.cursor() as cursor:
        cursor.execute(sql, params)
        return {row[0]: row[1] for row in cursor.fetchall()}
