"""Full-text ranking over memory items, on PostgreSQL and on SQLite.

PostgreSQL: a stored generated `tsvector` column with a GIN index, `websearch_to_tsquery`.
SQLite: an external-content FTS5 table kept in step by triggers (migration 0002).
Both return ids with a score (higher is better); callers apply scoping before anything is shown,
and every query here also filters by project, state and data class in SQL, so no hidden row
ever counts towards a limit or an offset.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from django.db import connection as db
from django.db.models.expressions import RawSQL

from memory.query_limits import MAX_TERMS, bounded_query, bounded_rows

Match = Literal["all", "any"]

_WORD_RE = re.compile(r"\w+", re.UNICODE)
MAX_TERM_LENGTH = 64
HIGHLIGHT_START = "**"
HIGHLIGHT_STOP = "**"

# At most this many matching rows are scored per query. Scoring reads each candidate's row, so an
# unbounded set costs a heap fetch per match (a common word matches most of a 100k project); no
# search page past MAX_SEARCH_OFFSET is served, so for search the cap only bounds work.
CANDIDATE_CAP = 512
# In "any" mode (get_context ranks items for a free-text task) words found in more than this share
# of all items are left out: they match most of a project, say little about the task, and would
# crowd the telling words out of the candidate cap.
COMMON_TERM_SHARE = 0.02
COMMON_TERMS_TTL_SECONDS = 600.0
COMMON_TERMS_MIN_ITEMS = 10_000


@dataclass(frozen=True)
class Hit:
    fact_id: int
    score: float
    kind: str = ""


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
    candidates: int = CANDIDATE_CAP,
) -> list[Hit]:
    """The best `limit` matches after `offset`, scoring at most `candidates` matching rows.

    The work is bounded (memory.query_limits): the query is cut to its allowed words and
    negations, and the statement runs under the per-query time budget (`bounded_rows`).
    """
    query = bounded_query(query)
    words = terms(query)
    if not words or not data_classes:
        return []
    kinds = list(kinds) if kinds is not None else None
    if db.vendor == "postgresql":
        return _rank_postgresql(
            project_id, data_classes, states, query, words, match, kinds, limit, offset, candidates
        )
    return _rank_sqlite(project_id, data_classes, states, words, match, kinds, limit, offset, candidates)


class _CommonTerms:
    """Lexemes found in more than COMMON_TERM_SHARE of items, from PostgreSQL's column statistics.

    Read from `pg_stats` (what ANALYZE and autovacuum keep for the tsvector column) at most once
    per COMMON_TERMS_TTL_SECONDS per process. Only word frequencies are kept: they decide which
    words are too common to rank by, never what anyone may see.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded_at: float | None = None
        self._terms: list[str] = []

    def get(self) -> list[str]:
        now = time.monotonic()
        if self._loaded_at is not None and now - self._loaded_at < COMMON_TERMS_TTL_SECONDS:
            return self._terms
        with self._lock:
            if self._loaded_at is None or now - self._loaded_at >= COMMON_TERMS_TTL_SECONDS:
                self._terms = self._load()
                self._loaded_at = now
        return self._terms

    @staticmethod
    def _load() -> list[str]:
        if db.vendor != "postgresql":
            return []
        with db.cursor() as cursor:
            cursor.execute(
                "SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples "
                "FROM pg_stats s JOIN pg_class c ON c.oid = 'memory_fact'::regclass "
                "WHERE s.tablename = 'memory_fact' AND s.attname = 'search_vector' "
                "AND s.schemaname = ANY(current_schemas(false))"
            )
            row = cursor.fetchone()
        # A small table ranks every match cheaply, and its statistics say little.
        if not row or not row[0] or row[2] < COMMON_TERMS_MIN_ITEMS:
            return []
        # The frequencies array ends with the minimum, the maximum and the null fraction.
        return [lexeme for lexeme, share in zip(row[0], row[1], strict=False) if share > COMMON_TERM_SHARE]

    def clear(self) -> None:
        self._loaded_at = None


common_terms = _CommonTerms()

# The task's lexemes (stemmed, stop words dropped) less the common ones, OR-ed into a tsquery;
# with no informative word left it is NULL, which matches nothing.
_ANY_TSQUERY = """(
    SELECT string_agg('''' || replace(lexeme, '''', '''''') || '''', ' | ')::tsquery
    FROM unnest(tsvector_to_array(to_tsvector('english', %s))) AS lexeme
    WHERE lexeme <> ALL(%s::text[]) AND strpos(lexeme, chr(92)) = 0
)"""


def _pg_tsquery(query: str, words: list[str], match: Match) -> tuple[str, list[Any]]:
    if match == "all":
        return "websearch_to_tsquery('english', %s)", [query]
    return _ANY_TSQUERY, [" ".join(words), common_terms.get()]


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
    candidates: int,
) -> list[Hit]:
    tsquery, tsparams = _pg_tsquery(query, words, match)
    kind_sql = f"AND f.kind IN ({_placeholders(kinds)})" if kinds else ""
    # The inner LIMIT bounds the rows scored (CANDIDATE_CAP); the scoping filters stay inside it,
    # so a hidden row never takes a candidate's place.
    sql = f"""
        SELECT m.id, ts_rank_cd(m.search_vector, m.query, 32) AS score, m.kind
        FROM (
            SELECT f.id, f.kind, f.search_vector, q.query
            FROM memory_fact f, (SELECT {tsquery} AS query) q
            WHERE f.search_vector @@ q.query
              AND f.project_id = %s
              AND f.state IN ({_placeholders(states)})
              AND f.data_class IN ({_placeholders(data_classes)})
              {kind_sql}
            LIMIT %s
        ) m
        ORDER BY score DESC, m.id DESC
        LIMIT %s OFFSET %s
    """  # noqa: S608 - only placeholders are interpolated
    params: list[Any] = [
        *tsparams,
        project_id,
        *states,
        *data_classes,
        *(kinds or []),
        max(candidates, limit + offset),
        limit,
        offset,
    ]
    return [Hit(row[0], float(row[1]), row[2]) for row in bounded_rows(sql, params)]


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
    candidates: int,
) -> list[Hit]:
    kind_sql = f"AND f.kind IN ({_placeholders(kinds)})" if kinds else ""
    # As on PostgreSQL, the inner LIMIT bounds the rows scored and the scoping filters stay
    # inside it, so a hidden row never takes a candidate's place.
    sql = f"""
        SELECT m.id, m.score, m.kind FROM (
            SELECT f.id, -bm25(memory_fact_fts) AS score, f.kind
            FROM memory_fact_fts JOIN memory_fact f ON f.id = memory_fact_fts.rowid
            WHERE memory_fact_fts MATCH %s
              AND f.project_id = %s
              AND f.state IN ({_placeholders(states)})
              AND f.data_class IN ({_placeholders(data_classes)})
              {kind_sql}
            LIMIT %s
        ) m
        ORDER BY m.score DESC, m.id DESC
        LIMIT %s OFFSET %s
    """  # noqa: S608 - only placeholders are interpolated
    params: list[Any] = [
        _fts5_query(words, match),
        project_id,
        *states,
        *data_classes,
        *(kinds or []),
        max(candidates, limit + offset),
        limit,
        offset,
    ]
    return [Hit(row[0], float(row[1]), row[2]) for row in bounded_rows(sql, params)]


_HEADLINE_OPTIONS = (
    'StartSel=**, StopSel=**, MaxWords=35, MinWords=15, MaxFragments=2, FragmentDelimiter=" … "'
)
_WHOLE_TEXT_OPTIONS = "StartSel=**, StopSel=**, HighlightAll=true"
# Items up to this many characters are shown whole, highlighted; longer ones as fragments.
WHOLE_EXCERPT_CHARS = 300


def _pg_headline(text: str, tsquery: str) -> str:
    """SQL for an excerpt: short items whole (fragment mode would drop their edges), long ones cut."""
    return (
        f"CASE WHEN char_length({text}) <= {WHOLE_EXCERPT_CHARS} "
        f"THEN ts_headline('english', {text}, {tsquery}, %s) "
        f"ELSE ts_headline('english', {text}, {tsquery}, %s) END"
    )


def headline(query: str) -> RawSQL | None:
    """On PostgreSQL, the highlighted excerpt as an expression to annotate the fetched rows with.

    Loading the rows and their excerpts in one statement saves search a round trip; None on
    SQLite, whose excerpts come from the FTS5 table (see `highlight`).
    """
    query = bounded_query(query)
    if db.vendor != "postgresql" or not terms(query):
        return None
    return RawSQL(  # noqa: S611 - only constants are interpolated; the query is a parameter
        _pg_headline("memory_fact.text", "websearch_to_tsquery('english', %s)"),
        [query, _WHOLE_TEXT_OPTIONS, query, _HEADLINE_OPTIONS],
    )


def highlight(fact_ids: Sequence[int], query: str, *, match: Match = "all") -> dict[int, str]:
    """Excerpts with the matching words marked `**like this**`, for the given (already scoped) ids."""
    query = bounded_query(query)
    words = terms(query)
    if not fact_ids or not words:
        return {}
    if db.vendor == "postgresql":
        tsquery, tsparams = _pg_tsquery(query, words, match)
        sql = f"""
            SELECT f.id, {_pg_headline("f.text", tsquery)}
            FROM memory_fact f WHERE f.id IN ({_placeholders(fact_ids)})
        """  # noqa: S608
        params: list[Any] = [*tsparams, _WHOLE_TEXT_OPTIONS, *tsparams, _HEADLINE_OPTIONS, *fact_ids]
    else:
        sql = f"""
            SELECT rowid, snippet(memory_fact_fts, 0, %s, %s, '…', 32)
            FROM memory_fact_fts WHERE memory_fact_fts MATCH %s AND rowid IN ({_placeholders(fact_ids)})
        """  # noqa: S608
        params = [HIGHLIGHT_START, HIGHLIGHT_STOP, _fts5_query(words, match), *fact_ids]
    with db.cursor() as cursor:
        cursor.execute(sql, params)
        return {row[0]: row[1] for row in cursor.fetchall()}
