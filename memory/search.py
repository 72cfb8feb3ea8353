"""Full-text ranking over memory items, on PostgreSQL and on SQLite.

PostgreSQL: a stored generated `tsvector` column with a GIN index, ranked by a BM25 computed here.
SQLite: an external-content FTS5 table kept in step by triggers (migration 0002), ranked by bm25().
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
from django.db.models.expressions import RawSQL

from memory.query_limits import MAX_TERMS, bounded_query, bounded_rows
from memory.stopwords import STOP_WORDS

Match = Literal["all", "any"]

_WORD_RE = re.compile(r"\w+", re.UNICODE)
# "-word" at the start of the query or after a space excludes items with that word.
_EXCLUDED_RE = re.compile(r"(?:^|(?<=\s))-(\w+)", re.UNICODE)
MAX_TERM_LENGTH = 64
HIGHLIGHT_START = "**"
HIGHLIGHT_STOP = "**"

# PostgreSQL ranks a bounded candidate set: every item of a word found in at most
# CANDIDATES_PER_TERM items, that many items of a commoner word, that many items holding both
# words of each pair among the PAIRED_TERMS rarest ones, and that many holding all the words.
# Pairs matter when every word is common: "invoice" and "worker" each match thousands of items,
# "invoice & worker" the few about invoice-worker. A word's document frequency is counted up to
# DF_CAP items: past it the word is too common to tell items apart, and counting on would cost a
# heap fetch per match.
CANDIDATES_PER_TERM = 200
PAIRED_TERMS = 8
DF_CAP = 1000
# BM25's saturation and length normalisation. Items rarely repeat a word, so each matched word
# counts once and k1 only shapes the length term.
BM25_K1 = 1.2
BM25_B = 0.75


@dataclass(frozen=True)
class Hit:
    fact_id: int
    score: float
    kind: str = ""


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
    project_id: int,
    data_classes: Sequence[str],
    states: Sequence[str],
    kinds: list[str] | None,
    without: list[str],
) -> _Scope:
    kind_sql = f" AND f.kind IN ({_placeholders(kinds)})" if kinds else ""
    # PostgreSQL excludes here; FTS5 excludes in its MATCH expression (see _fts5_query).
    without = without if db.vendor == "postgresql" else []
    without_sql = " AND NOT f.search_vector @@ plainto_tsquery('english', %s)" * len(without)
    return _Scope(
        sql=(
            f"f.project_id = %s AND f.state IN ({_placeholders(states)}) "
            f"AND f.data_class IN ({_placeholders(data_classes)}){kind_sql}{without_sql}"
        ),
        params=[project_id, *states, *data_classes, *(kinds or []), *without],
    )


def rank(
    *,
    project_id: int,
    data_classes: Sequence[str],
    states: Sequence[str],
    query: str,
    match: Match = "any",
    kinds: Iterable[str] | None = None,
    limit: int,
    offset: int = 0,
) -> list[Hit]:
    """The best `limit` matches after `offset`; ties go to the newest item, so pages are stable.

    "any" (what agents get) ranks every item holding a word of the query by BM25: rare words
    weigh more than common ones, so items with all the telling words come first, and stop words
    and punctuation do not count. "all" (the console's filter) keeps only items with every word.

    The work is bounded (memory.query_limits): the query is cut to its allowed words and
    negations, and the statement runs under the per-query time budget (`bounded_rows`).
    """
    query = bounded_query(query)
    words = keywords(query) if match == "any" else terms(query)
    if not words or not data_classes:
        return []
    without = excluded(query) if match == "any" else []
    scope = _scope(project_id, data_classes, states, list(kinds) if kinds is not None else None, without)
    if db.vendor == "postgresql":
        if match == "all":
            return _all_postgresql(scope, query, limit, offset)
        return _bm25_postgresql(scope, words, limit, offset)
    return _rank_sqlite(scope, _fts5_query(words, match, without), limit, offset)


# The query's lexemes as PostgreSQL parses them (stemmed, its stop words dropped); each one's
# weight from its document frequency in scope, counted up to DF_CAP; the bounded candidate set;
# BM25 over it. Nothing reads planner statistics, so a database imported a second ago ranks as
# well as an analysed one.
_PG_BM25 = """
WITH lexemes AS (
    SELECT lexeme, ('''' || replace(lexeme, '''', '''''') || '''')::tsquery AS q
    FROM unnest(tsvector_to_array(to_tsvector('english', %s))) AS lexeme
    WHERE strpos(lexeme, chr(92)) = 0
),
weights AS (
    SELECT l.q, ln(1 + (%s - d.df + 0.5) / (d.df + 0.5)) AS idf
    FROM lexemes l, LATERAL (
        SELECT count(*) AS df FROM (
            SELECT 1 FROM memory_fact f WHERE f.search_vector @@ l.q AND {scope} LIMIT %s
        ) s
    ) d
),
pairs AS (
    SELECT a.q && b.q AS q
    FROM (SELECT q, row_number() OVER (ORDER BY idf DESC) AS n FROM weights) a
    JOIN (SELECT q, row_number() OVER (ORDER BY idf DESC) AS n FROM weights) b ON a.n < b.n
    WHERE b.n <= %s
),
candidates AS (
    SELECT c.id FROM weights w, LATERAL (
        SELECT f.id FROM memory_fact f WHERE f.search_vector @@ w.q AND {scope} LIMIT %s
    ) c
    UNION
    SELECT c.id FROM pairs p, LATERAL (
        SELECT f.id FROM memory_fact f WHERE f.search_vector @@ p.q AND {scope} LIMIT %s
    ) c
    UNION
    (SELECT f.id FROM memory_fact f
     WHERE f.search_vector @@ (
         SELECT string_agg('''' || replace(lexeme, '''', '''''') || '''', ' & ')::tsquery FROM lexemes
     ) AND {scope} LIMIT %s)
),
scored AS (
    SELECT f.id, f.kind, length(f.search_vector) AS len,
           (SELECT sum(w.idf) FROM weights w WHERE f.search_vector @@ w.q) AS idf
    FROM candidates c JOIN memory_fact f ON f.id = c.id
)
SELECT id, idf * %s / (1 + %s * (1 - %s + %s * len / greatest(avg(len) OVER (), 1))) AS score, kind
FROM scored
ORDER BY score DESC, id DESC
LIMIT %s OFFSET %s
"""


def _bm25_postgresql(scope: _Scope, words: list[str], limit: int, offset: int) -> list[Hit]:
    params: list[Any] = [" ".join(words), DF_CAP, *scope.params, DF_CAP, PAIRED_TERMS]
    params += [*scope.params, CANDIDATES_PER_TERM, *scope.params, CANDIDATES_PER_TERM]
    params += [*scope.params, CANDIDATES_PER_TERM]
    params += [BM25_K1 + 1, BM25_K1, BM25_B, BM25_B, limit, offset]
    return _hits(_PG_BM25.replace("{scope}", scope.sql), params)


def _all_postgresql(scope: _Scope, query: str, limit: int, offset: int) -> list[Hit]:
    sql = f"""
        SELECT f.id, ts_rank_cd(f.search_vector, q.query, 32) AS score, f.kind
        FROM memory_fact f, websearch_to_tsquery('english', %s) AS q(query)
        WHERE f.search_vector @@ q.query AND {scope.sql}
        ORDER BY score DESC, f.id DESC
        LIMIT %s OFFSET %s
    """  # noqa: S608 - only placeholders are interpolated
    return _hits(sql, [query, *scope.params, limit, offset])


def _fts5_query(words: list[str], match: Match, without: Sequence[str] = ()) -> str:
    def quoted(word: str) -> str:
        return '"' + word.replace('"', "") + '"'

    expression = "(" + (" OR " if match == "any" else " ").join(map(quoted, words)) + ")"
    return " NOT ".join([expression, *map(quoted, without)])


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


def highlight(fact_ids: Sequence[int], query: str, *, match: Match = "any") -> dict[int, str]:
    """Excerpts with the matching words marked `**like this**`, for the given (already scoped) ids."""
    query = bounded_query(query)
    words = keywords(query) if match == "any" else terms(query)
    if not fact_ids or not words:
        return {}
    if db.vendor == "postgresql":
        tsquery, tsparams = "websearch_to_tsquery('english', %s)", [query]
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
