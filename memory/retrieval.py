"""Hybrid retrieval: the lexical ranking and the vector index, fused by reciprocal rank.

search_memory and get_context rank the same way. The lexical side (memory.search: BM25 over the
full-text index) finds items holding the query's words; the semantic side (memory.embeddings:
the project's vectors under the configured model) finds items close in meaning, "ship to prod"
for "deployed to production". Reciprocal rank fusion adds 1 / (RRF_K + rank) from each side, so
an item near the top of both comes first and neither side's scores need calibrating. An item
without a vector yet is still found lexically; with no embedder configured, or no vectors in the
project, the ranking is the lexical one alone.

The vector index only proposes candidates: each one is checked against the item's current row
with the caller's scoped queryset (project, data classes, never restricted, current state), so
a stale or foreign vector can neither show nor count towards a page.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from django.db.models import QuerySet

from memory import search
from memory.embeddings import embedder, query_vectors
from memory.embeddings.index import VectorIndex, indexes
from memory.models import Fact

RRF_K = 60
# Below this cosine a neighbour is not offered at all: every query has nearest items, and a
# question about something memory does not hold should not be answered with the least unlike.
MIN_SIMILARITY = 0.35
# Vectors of superseded versions stay in the index until it is rebuilt; asking for a few more
# neighbours than needed keeps the page full after they are checked out.
STALE_MARGIN = 2
# How deep the two rankings are fused. The fused order is the same whatever page is asked for (so
# a cursor walks it without repeats); past this depth it goes on with the lexical ranking alone.
FUSION_DEPTH = 50


@dataclass(frozen=True)
class Ranked:
    fact_id: int
    score: float
    kind: str
    lexical: bool
    semantic: bool

    @property
    def why(self) -> str:
        """Why the item was chosen, in words an agent or owner can act on."""
        if self.lexical and self.semantic:
            return "matches words of the query and is close in meaning"
        return "matches words of the query" if self.lexical else "close in meaning to the query"


def hybrid_rank(
    *,
    items: QuerySet[Fact],
    project_id: int,
    data_classes: Sequence[str],
    states: Sequence[str],
    query: str,
    kinds: Collection[str] | None = None,
    limit: int,
    vectors: VectorIndex | None,
    depth: int = FUSION_DEPTH,
    lexical_filter: Callable[[list[search.Hit]], list[search.Hit]] | None = None,
) -> list[Ranked]:
    """The best `limit` items for the query, best first; ties go to the newest item.

    `items` is the caller's scoped queryset: semantic candidates must be in it to count.
    `vectors` is the project's index (`project_vectors`), None for the lexical ranking alone.
    The first `depth` of each ranking are fused; the order does not depend on `limit`.
    """
    lexical = search.rank(
        project_id=project_id,
        data_classes=data_classes,
        states=states,
        query=query,
        kinds=kinds,
        limit=max(limit, depth),
    )
    if lexical_filter is not None:
        lexical = lexical_filter(lexical)
    semantic = _semantic(items, vectors, data_classes, states, query, kinds, depth) if vectors else []
    fused = fuse(lexical[:depth], semantic)
    seen = {hit.fact_id for hit in fused}
    rest = [Ranked(h.fact_id, 0.0, h.kind, True, False) for h in lexical[depth:] if h.fact_id not in seen]
    return [*fused, *rest][:limit]


def project_vectors(project_id: int) -> VectorIndex | None:
    """The project's vector index under the configured model, if there is one with vectors."""
    model = embedder()
    return indexes.get(project_id, model.name) if model is not None else None


def _semantic(
    items: QuerySet[Fact],
    index: VectorIndex,
    data_classes: Sequence[str],
    states: Sequence[str],
    query: str,
    kinds: Collection[str] | None,
    limit: int,
) -> list[search.Hit]:
    model = embedder()
    # An exclusion ("-word") is a lexical promise the vectors cannot keep.
    if model is None or search.excluded(query) or not search.terms(query):
        return []
    vector = query_vectors.get(model, query)
    near = index.nearest(vector, limit=limit * STALE_MARGIN, kinds=kinds, classes=data_classes)
    near = [(fact_id, score) for fact_id, score in near if score >= MIN_SIMILARITY]
    if not near:
        return []
    checked = items.filter(id__in=[fact_id for fact_id, _ in near], state__in=states)
    if kinds is not None:
        checked = checked.filter(kind__in=kinds)
    current = dict(checked.values_list("id", "kind"))
    return [search.Hit(i, score, current[i]) for i, score in near if i in current][:limit]


def fuse(lexical: list[search.Hit], semantic: list[search.Hit]) -> list[Ranked]:
    """Reciprocal rank fusion of two rankings, best first, ties to the newest (highest) id."""
    scores: dict[int, float] = {}
    kinds: dict[int, str] = {}
    for ranking in (lexical, semantic):
        for rank, hit in enumerate(ranking, start=1):
            scores[hit.fact_id] = scores.get(hit.fact_id, 0.0) + 1.0 / (RRF_K + rank)
            kinds[hit.fact_id] = hit.kind
    in_lexical = {hit.fact_id for hit in lexical}
    in_semantic = {hit.fact_id for hit in semantic}
    order = sorted(scores, key=lambda i: (scores[i], i), reverse=True)
    return [Ranked(i, scores[i], kinds[i], i in in_lexical, i in in_semantic) for i in order]
