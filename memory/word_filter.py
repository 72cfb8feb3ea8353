"""The console's every-word filter: a project's items holding every word of a query, newest first.

Current items are found in the in-process word index (memory.lexical_index), which agent
retrieval keeps up to date anyway, so no full-text index has to be kept by the database for the
console alone (writing one was most of an import's time). The index holds current items only;
items no longer current (superseded, retracted, closed), which the browser shows when asked for
them, are few and are read and matched word by word, newest first, under the per-query time budget.

Words are matched as the index matches them (memory.lexical_index.words: casefolded, diacritics
dropped, English stems), so "deploys" finds "deployed". A query's `-word` excludes items holding it.
The index only proposes candidates: each is checked against the caller's scoped queryset.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence

from django.db.models import QuerySet

from memory import search
from memory.lexical_index import lexical_indexes, words
from memory.models import Fact, State
from memory.query_limits import QueryTooCostly, bounded_query, time_budget_seconds
from memory.retrieval import MAX_RECHECKS, STALE_EXTRA, with_ids
from workspaces.models import DataClass

# Rows read at a time by the scan of items that are no longer current.
SCAN_CHUNK_ROWS = 2_000


def holding_every_word(
    *,
    items: QuerySet[Fact],
    project_id: int,
    states: Sequence[str],
    kinds: Collection[str] | None,
    query: str,
    limit: int,
) -> list[int]:
    """Ids of the newest `limit` items of `items` (a scoped queryset of one project) in these
    states holding every word of `query` and none it excludes."""
    bounded = bounded_query(query)
    wanted = [w for term in search.keywords(bounded) for w in words(term)]
    without = [w for term in search.excluded(bounded) for w in words(term)]
    if not wanted or limit <= 0:
        return []
    current = [s for s in states if s in State.current()]
    others = [s for s in states if s not in State.current()]
    found: list[int] = []
    if current:
        found += _indexed(items, project_id, current, kinds, wanted, without, limit)
    if others:
        found += _scanned(items.filter(state__in=others), set(wanted), set(without), limit)
    return sorted(set(found), reverse=True)[:limit]


def _indexed(
    items: QuerySet[Fact],
    project_id: int,
    states: Sequence[str],
    kinds: Collection[str] | None,
    wanted: list[str],
    without: list[str],
    limit: int,
) -> list[int]:
    """Current matches from the word index, each checked against its row as it is now."""
    index = lexical_indexes.get(project_id)
    found: list[int] = []
    for _ in range(MAX_RECHECKS + 1):
        candidates = index.holding_every(
            wanted, classes=DataClass.values, states=states, kinds=kinds, without=without,
            limit=limit + STALE_EXTRA,
        )  # fmt: skip
        rows = with_ids(items, candidates).values_list("id", "kind", "state")
        alive = {i for i, kind, state in rows if state in states and (kinds is None or kind in kinds)}
        stale = [i for i in candidates if i not in alive]
        index.mark_dead(stale)
        found = [i for i in candidates if i in alive]
        if not stale or len(found) >= limit:
            break
    return found[:limit]


def _scanned(items: QuerySet[Fact], wanted: set[str], without: set[str], limit: int) -> list[int]:
    """Matches among rows the index does not hold, read newest first; QueryTooCostly past the budget."""
    deadline = time.perf_counter() + time_budget_seconds()
    found: list[int] = []
    for fact_id, text in items.order_by("-id").values_list("id", "text").iterator(chunk_size=SCAN_CHUNK_ROWS):
        held = set(words(text))
        if wanted <= held and not (without & held):
            found.append(fact_id)
            if len(found) >= limit:
                break
        if time.perf_counter() > deadline:
            raise QueryTooCostly()
    return found
