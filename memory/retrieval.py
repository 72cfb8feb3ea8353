"""Hybrid retrieval: the lexical ranking and the vector index, fused by reciprocal rank.

search_memory and get_context rank with the same two sides. The lexical side
(memory.lexical_index: BM25 over each project's words, in process) finds items holding the
query's words; the semantic side (memory.embeddings: the project's vectors under the configured
model) finds items close in meaning, "ship to prod" for "deployed to production". Reciprocal rank
fusion adds 1 / (RRF_K + rank) from each side, so an item near the top of both comes first and
neither side's scores need calibrating: what a bundle is chosen by, and a long query's search.
search_memory fuses a question-sized query (CLEAR_LEAD_KEYWORDS) by its scores instead
(`fuse_scores`, a convex combination of each side's score scaled to its best), which puts the
answer higher: ranks alone place a word match that is far ahead of the rest, or a meaning far
closer than the rest, no higher than a narrow one. For such a query, too, an item whose words
match it clearly better than any other's (CLEAR_LEAD) comes first, as it would by its words
alone; fusion would otherwise let the meaning's favourite overtake the very item a question
names. An item without a vector yet is still found lexically; with no embedder configured, or no
vectors in the project, the ranking is the lexical one alone.

The vector side is PostgreSQL's where it has pgvector (memory.embeddings.pgvector: the nearest
among the caller's scoped rows, in one statement, and no vectors held in process), else the
in-process index (memory.embeddings.index); both answer `nearest` and `vectors_of`.

Both indexes only propose candidates, and nothing is shown but rows read with the caller's scoped
queryset (project, data classes, never restricted, current state). search_memory checks every
candidate against its current row before it counts, so a stale or foreign entry can neither show
nor count towards a page: the word index's candidates in one statement while the query's vector
is still being embedded, then the vector side's that the words did not offer in another.
get_context ranks the candidates the word index admits (what it knows of each row: kind, data
class, state when indexed) and reads only the rows it chose, through the scope; a chosen row
retired since it was indexed is not read, so it is not served, and takes no slot next time.
Candidates found no longer current are dropped from the word index for good.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Collection, Sequence
from collections.abc import Set as AbstractSet
from itertools import islice
from operator import itemgetter
from typing import Any, NamedTuple

import numpy as np
from django.db import connections
from django.db.models import QuerySet

from memory import search
from memory.embeddings import LOOP_HELD_SECONDS, Embedder, EmbedderResting, embedder, pgvector, query_vectors
from memory.embeddings.index import VectorIndex, indexes, newest_sql
from memory.embeddings.pgvector import ProjectVectors
from memory.lexical_index import Hit, LexicalIndex, Probe, compound_words, compounds, lexical_indexes, words
from memory.models import Fact
from memory.query_limits import bounded_query
from workspaces.models import Project
from workspaces.prepared import Beside
from workspaces.scope import AgentScope
from workspaces.units import holds_loop

logger = logging.getLogger(__name__)

RRF_K = 60
# The best word match stays first when its score is at least this many times the next one's, and
# the query has at most CLEAR_LEAD_KEYWORDS words that say what it is about (a question's few
# words name an item; a passage's many overlap by chance). bench/quality.py, recall@1, fusion
# alone against with this rule: generated corpus (keyword / question / paraphrase) at 100k items
# 0.890 / 0.885 / 0.540 against 0.905 / 0.920 / 0.540, at 10k 0.980 / 0.970 / 0.585 against
# 0.995 / 0.995 / 0.585 (lexical alone: 0.845 / 0.900 / 0.140 and 0.950 / 0.995 / 0.165);
# REALTALK's questions 0.202 against 0.219; no other recall@k lower. Without the bound on
# keywords MADial-Bench's dialogues (9 to 17 keywords, against REALTALK's 3 to 9) fell from
# 0.157 to 0.100; at a lead of 1.2, the generated questions at 100k kept 0.885. (Measured before
# joined identifiers were indexed whole; with them the rule still adds 0.005 to keyword and
# question recall@1, replayed on both corpus sizes.) A joined identifier counts once
# (`question_sized`): "risk-bridge-ca" names one service, not three things.
CLEAR_LEAD = 1.1
CLEAR_LEAD_KEYWORDS = 8
# search_memory's question-sized queries are fused by score: this share of an item's score is its
# word score over the best one's, the rest its cosine's over the best one's (both from
# MIN_SIMILARITY up). bench/quality.py, search recall@1 / 5 / 10 / 20, rank fusion against this:
# generated corpus at 100k items, paraphrases 0.640 / 0.900 / 0.950 / 0.985 against 0.650 /
# 0.940 / 0.965 / 1.000 (keywords and questions up 0.005-0.010 at @1 and @5, equal after);
# REALTALK 0.215 / 0.382 / 0.447 / 0.515 against 0.224 / 0.401 / 0.465 / 0.510; MADial-Bench,
# whose dialogues are mostly longer (rank fusion, then), 0.310 against 0.308 at @5, equal
# elsewhere. 0.5 and 0.7 read within 0.01 of 0.6 at every k. Bundles keep rank fusion: by score,
# REALTALK's bundles held 0.568 of the relevant messages against 0.580 (rank fusion finds more of
# them further down, where a bundle takes its 50 candidates), and no more answers elsewhere.
SCORE_FUSION_WORDS = 0.6
# Below this cosine a neighbour is not offered at all: every query has nearest items, and a
# question about something memory does not hold should not be answered with the least unlike.
MIN_SIMILARITY = 0.35
# Candidates of either side that turn out not to be current are replaced from further down; a
# few more than needed are checked, and the lexical side is asked again at most this often.
STALE_MARGIN = 2
STALE_EXTRA = 16
MAX_RECHECKS = 2
# How deep the two rankings are fused. The fused order is the same whatever page is asked for (so
# a cursor walks it without repeats); past this depth it goes on with the lexical ranking alone.
FUSION_DEPTH = 50
# A query that names an identifier few items hold ("Find who to page about an incident in
# settlement-service-uk") is about those items: the items holding a joined identifier of the query
# that at most the fusion's depth of the caller's items hold, and no other word of the query fewer
# ("Draft the e-mail about the deploy freeze" is about the freeze), come before the others, ranked
# among themselves as fused (`LexicalIndex.named`). Fused alone, other services' alert facts, on
# the lexical side for "page" and close in meaning, filled the bundle ahead of the service's own
# owner fact. bench/quality.py, hybrid, before -> after: generated corpus at 100k items, bundles
# holding the answer 0.995 -> 1.000, paraphrase recall@10 0.970 -> 1.000 (at 10k: 0.980 -> 1.000
# and 0.950 -> 1.000; the lexical ranking alone: 1.000 and 1.000), nothing lower; REALTALK, where
# 16 of 705 questions hold a joined word ("ex-partner", "full-time"), recall@1 0.224 -> 0.222, the
# rest equal (without the rule's second condition @5 also lost 0.001); MADial-Bench unchanged.
# Not applied to the lexical ranking alone, which ranks them by the identifier's weight already.

Vectors = VectorIndex | ProjectVectors
# Reads the given columns of the scoped rows with these ids (memory.selectors.agent_rows).
RowsOf = Callable[[list[int], tuple[str, ...]], list[tuple[Any, ...]]]


class Ranked(NamedTuple):
    # A tuple: a ranking builds hundreds of these per call, and a frozen dataclass costs more.
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
    items: Callable[[], QuerySet[Fact]],
    project_id: int,
    data_classes: Sequence[str],
    states: Sequence[str],
    query: str,
    kinds: Collection[str] | None = None,
    limit: int,
    vectors: Vectors | None,
    depth: int = FUSION_DEPTH,
    lexical_filter: Callable[[list[Hit]], list[Hit]] | None = None,
    rows_of: RowsOf | None,
    while_embedding: Callable[[list[Hit]], object] | None = None,
    index: LexicalIndex | None = None,
    by_scores: bool = False,
) -> list[Ranked]:
    """The best `limit` current items for the query, best first; ties go to the newest item.

    `items` builds the caller's scoped queryset (PostgreSQL's vector side ranks within it; the
    in-process index never needs it, so it is not built for it), and `rows_of`
    reads the same scoped rows by id (`agent_rows`, compiled once): every candidate must be
    among them to count. With `rows_of` None the candidates are not checked: the word index
    admits them as it last knew their rows (`LexicalIndex.admitted`, for the vector side's too),
    so a row retired since may still be ranked, and the caller must read every row it uses
    through the scope and tell the index of those gone (`mark_dead`); search_memory, whose pages
    count candidates, checks them. `vectors` is the project's index (`project_vectors`), None for the
    lexical ranking alone. The first `depth` of each ranking are fused; the order does not depend
    on `limit`. `while_embedding`, if the query's vector is still being embedded once the words'
    candidates are checked (and `lexical_filter`ed), is given them (current, best first) to do
    work of its own meanwhile.
    `index` is the project's word index brought up to date by the caller (`ranking_indexes`).
    `by_scores` fuses a question-sized query by its scores (`fuse_scores`: search_memory's
    ranking), else by ranks (`fuse`).
    """
    wanted = max(limit, depth)
    if not data_classes:
        return []
    if index is None:
        index = lexical_indexes.get(project_id)
    # The word ranking's work is bounded by the query's words (memory.query_limits); the vector
    # side reads the whole text (the model truncates it), so a long question keeps its meaning.
    bounded = bounded_query(query)
    keywords = search.keywords(bounded)
    identifiers = compound_words(bounded)
    query_words = [w for term in keywords for w in words(term)] + identifiers
    without = [w for term in search.excluded(bounded) for w in words(term)]

    def ranked_words() -> list[Hit]:
        return index.rank(
            query_words,
            classes=data_classes,
            states=states,
            kinds=kinds,
            without=without,
            limit=wanted + STALE_EXTRA,
        )

    checked = _Checked(rows_of, states, kinds) if rows_of is not None else None
    # Words first, and their candidates checked against the scope: the query's vector may still
    # be on its way (prefetch_query_vector), and the statement runs meanwhile.
    lexical = ranked_words()
    if checked is not None:
        for attempt in range(MAX_RECHECKS + 1):
            if attempt:
                lexical = ranked_words()
            current = checked.current([h.fact_id for h in lexical])
            stale = [h.fact_id for h in lexical if h.fact_id not in current]
            index.mark_dead(stale)
            lexical = [h for h in lexical if h.fact_id in current]
            if not stale or len(lexical) >= wanted:
                break
    if lexical_filter is not None:
        lexical = lexical_filter(lexical)
    if while_embedding is not None and vectors is not None and _embedding(query):
        while_embedding(lexical)
    semantic = _semantic(vectors, items, data_classes, states, query, kinds, depth) if vectors else []
    if checked is None:
        current = index.admitted([i for i, _ in semantic], classes=data_classes, states=states, kinds=kinds)
    else:
        # The vector side offers STALE_MARGIN times what is fused; the first `depth` (and a few
        # more) are checked in one statement (those the words did not already offer), the rest
        # only if too many of those were stale.
        first = [i for i, _ in semantic[: depth + STALE_EXTRA]]
        current = checked.current(first)
        if len(first) < len(semantic) and sum(i in current for i in first) < depth:
            current = checked.current([i for i, _ in semantic[len(first) :]])
    new = tuple.__new__  # Hit's own __new__ is Python: hundreds per call
    # Only the first `depth` are fused: the vector side offers twice as many (STALE_MARGIN).
    near = list(islice((new(Hit, (i, score, current[i])) for i, score in semantic if i in current), depth))
    question = question_sized(bounded, keywords)
    fusion = fuse_scores if by_scores and question else fuse
    named: set[int] = set()
    if near:
        named = index.named(
            identifiers, query_words, classes=data_classes, states=states, kinds=kinds, most=depth
        )
    fused = fusion(lexical[:depth], near, limit, lead=question, named=named)
    if len(fused) >= limit:
        return fused
    seen = {hit.fact_id for hit in fused}
    rest = [Ranked(h.fact_id, 0.0, h.kind, True, False) for h in lexical[depth:] if h.fact_id not in seen]
    return [*fused, *rest][:limit]


def question_sized(query: str, keywords: Sequence[str]) -> bool:
    """Whether the query names what it is about in at most CLEAR_LEAD_KEYWORDS keywords (its
    `search.keywords`), a joined identifier ("risk-bridge-ca", "out-of-date") counted once for
    the keywords it is written with: it names one thing."""
    joined, covered = 0, set()
    for name in set(compounds(query)):
        pieces = {name, *_JOINER.split(name)}
        if not pieces.isdisjoint(keywords):
            joined += 1
            covered |= pieces
    return sum(keyword not in covered for keyword in keywords) + joined <= CLEAR_LEAD_KEYWORDS


_JOINER = re.compile(r"[-_]")


class _Checked:
    """The candidates checked so far against the caller's scope, and those found current.

    Each id is read once per ranking (its id, kind and state, through `rows_of`), in one
    statement per `current` call that meets new ids. The scope is the statement's; states and
    kinds are checked here, so that the statement is a primary-key lookup per candidate (with a
    kind filter and the default ordering, SQLite would walk the project's (state, kind) index
    and sort instead: 12 ms at 100,000 items).
    """

    def __init__(self, rows_of: RowsOf, states: Sequence[str], kinds: Collection[str] | None) -> None:
        self._rows_of = rows_of
        self._states = states
        self._kinds = kinds
        self._read: set[int] = set()
        self._current: dict[int, str] = {}

    def current(self, fact_ids: list[int]) -> dict[int, str]:
        """Every candidate found current so far (these among them), with its kind."""
        new = [i for i in fact_ids if i not in self._read]
        if new:
            self._read.update(new)
            states, kinds = self._states, self._kinds
            self._current.update(
                (i, kind)
                for i, kind, state in self._rows_of(new, ("id", "kind", "state"))
                if state in states and (kinds is None or kind in kinds)
            )
        return self._current


def with_ids(items: QuerySet[Fact], fact_ids: Collection[int]) -> QuerySet[Fact]:
    """The rows of `items` (a scoped queryset) with these ids, unordered.

    The ids go in as plain parameters: through `id__in` the ORM prepares each of a few hundred
    values on its own, which costs more than the statement does. PostgreSQL takes them as one
    array: a statement of a few hundred placeholders is too long for psycopg's cache of parsed
    queries, and parsing it and quoting each value cost 2.7 times what `= ANY(%s)` does.
    """
    wanted = sorted(set(fact_ids))
    if not wanted:
        return items.none()
    if connections[items.db].vendor == "postgresql":
        return items.extra(where=['"memory_fact"."id" = ANY(%s)'], params=[wanted]).order_by()
    in_ids = f'"memory_fact"."id" IN ({", ".join(["%s"] * len(wanted))})'
    return items.extra(where=[in_ids], params=wanted).order_by()  # noqa: S610 - placeholders only


def prefetch_query_vector(project_id: int, query: str) -> None:
    """Start embedding the query now if the project's ranking will want its vector.

    Called first thing by search_memory and get_context: the embedding (the costliest part of a
    new query) then overlaps the call's statements and its word ranking. Only for projects whose
    vectors this process already keeps (`embeds_queries`), so no project without vectors pays
    for an embedding.
    """
    if embeds_queries(project_id):
        prefetch_query_text(query)


def embeds_queries(project_id: int) -> bool:
    """Whether the project's ranking wants query vectors: this process keeps its vectors (no
    statement)."""
    model = embedder()
    return model is not None and (
        indexes.holds(project_id, model.name) or pgvector.holds(project_id, model.name)
    )


def prefetch_query_text(query: str) -> None:
    """Start embedding the query now, for a ranking known to want its vector."""
    model = embedder()
    if model is not None and not search.excluded(query) and search.terms(query):
        query_vectors.prefetch(model, query)


def _embedding(query: str) -> bool:
    """Whether the query's vector is being embedded (prefetched) and is not ready yet."""
    model = embedder()
    return model is not None and query_vectors.pending(model, query)


class IndexesProbe(NamedTuple):
    """`ranking_indexes`' look at what a project's two indexes have not seen, as two scalar
    statements (`beside`) a caller may run in a statement of its own (`Prepared.rows`)."""

    beside: Beside
    words: Probe
    model: str


# A probe and the two values read with it, given to `ranking_indexes` by a caller that read them.
Probed = tuple[IndexesProbe, Sequence[Any]]


def ranking_probe(project_id: int) -> IndexesProbe | None:
    """The statement `ranking_indexes` would run, None where it must do more than one."""
    model = embedder()
    probe = lexical_indexes.probe(project_id)
    if model is None or probe is None or pgvector.enabled():
        return None
    newest, params = newest_sql(project_id, model.name)
    return IndexesProbe(Beside(f"({probe.sql}), ({newest})", [*probe.params, *params]), probe, model.name)


# Projects, by (credential scope, slug), whose queries this process embeds, with their ids.
# Keyed by the scope's fingerprint, so a call's timing tells nothing of a project its
# credential could not read (it is refused all the same, and what was read beside it not used).
EMBEDDING_PROJECTS_KEPT = 10_000
_embedding_projects: dict[tuple[str, str], int] = {}


class NamedProject:
    """A call naming a project by its slug (get_context, search_memory), for one query.

    Where this credential scope named the project before in this process and its queries are
    embedded, the query starts embedding at once, before the project is even read, and the
    project's statement can read what its indexes have not seen (`beside`): a statement fewer.
    """

    def __init__(self, scope: AgentScope, slug: str, query: str) -> None:
        self._key = (scope.fingerprint(), slug)
        self._expected = _embedding_projects.get(self._key)
        self._probe = None
        if self._expected is not None:
            prefetch_query_text(query)
            self._probe = ranking_probe(self._expected)

    @property
    def beside(self) -> Beside | None:
        """What to read in the project's statement, if anything."""
        return self._probe.beside if self._probe is not None else None

    def probed(self, project: Project, values: Sequence[Any]) -> Probed | None:
        """For `ranking_indexes`: the probe and the `values` read beside `project`, if for it."""
        if self._probe is None or project.pk != self._expected:
            return None
        return self._probe, values

    def served(self, project: Project) -> None:
        """Called once the call was served (the first of a process loads the project's vectors)."""
        if project.pk != self._expected and embeds_queries(project.pk):
            if len(_embedding_projects) >= EMBEDDING_PROJECTS_KEPT:
                _embedding_projects.clear()
            _embedding_projects[self._key] = project.pk


def embed_ahead(scope: AgentScope, slug: str, query: str) -> None:
    """Start embedding a call's query before its credential is verified, where `scope` (the
    credential's kept resolution: a hint, never authority) named this project before and its
    queries are embedded: what `NamedProject` does at once, a thread hop and the credential's
    statement earlier. Nothing is read and nothing is answered from it; the call verifies its
    credential and then waits for this vector, or embeds its query, as it would anyway.
    """
    if (scope.fingerprint(), slug) in _embedding_projects:
        prefetch_query_text(query)


def embedding_projects_clear() -> None:
    """Forget which projects' queries were embedded (ids are reused, e.g. by flushed test databases)."""
    _embedding_projects.clear()


def ranking_indexes(project_id: int, probed: Probed | None = None) -> tuple[LexicalIndex, Vectors | None]:
    """The project's word index and vectors (`project_vectors`), each brought up to date.

    Each is kept up to date by a probe of the rows added since (the word index's count of rows
    above its watermark, the vector index's newest id); where both would run one, they go as one
    statement of two values (`ranking_probe`): a statement costs more than either probe. `probed`
    is that probe of the project and the two values a caller read with it.
    """
    if probed is None:
        probe = ranking_probe(project_id)
        if probe is None:
            return lexical_indexes.get(project_id), project_vectors(project_id)
        with connections[Fact.objects.db].cursor() as cursor:
            cursor.execute(f"SELECT {probe.beside.sql}", probe.beside.params)
            values: Sequence[Any] = cursor.fetchone()
    else:
        probe, values = probed
    count, newest_id = values
    index = lexical_indexes.get(project_id, probed=(probe.words, int(count)))
    return index, indexes.at(project_id, probe.model, newest_id)


def project_vectors(project_id: int) -> Vectors | None:
    """The project's vectors under the configured model: PostgreSQL's where it has pgvector
    (no statement until searched), else the in-process index if the project has vectors."""
    model = embedder()
    if model is None:
        return None
    if pgvector.enabled():
        return ProjectVectors(project_id, model.name)
    return indexes.get(project_id, model.name)


def _semantic(
    vectors: Vectors,
    items: Callable[[], QuerySet[Fact]],
    data_classes: Sequence[str],
    states: Sequence[str],
    query: str,
    kinds: Collection[str] | None,
    limit: int,
) -> list[tuple[int, float]]:
    """The nearest items to the query's meaning: (fact id, cosine), best first.

    The in-process index's are unchecked candidates; PostgreSQL's are already among `items`.
    Both are checked against the scope with the lexical candidates (`_current`) all the same.
    """
    model = embedder()
    # An exclusion ("-word") is a lexical promise the vectors cannot keep.
    if model is None or search.excluded(query) or not search.terms(query):
        return []
    vector = _query_vector(model, query)
    if vector is None:
        return []
    if isinstance(vectors, ProjectVectors):
        # Already current and visible: no margin for stale candidates is needed.
        near = vectors.nearest(
            vector, limit=limit, items=items(), states=states, kinds=kinds, classes=data_classes
        )
    else:
        near = vectors.nearest(vector, limit=limit * STALE_MARGIN, kinds=kinds, classes=data_classes)
    return [(fact_id, score) for fact_id, score in near if score >= MIN_SIMILARITY]


# A failing embedder is logged at most once per this many seconds (per embedder and process).
EMBEDDER_FAILURE_LOG_SECONDS = 60.0
_failures_logged: dict[str, float] = {}
_failures_lock = threading.Lock()


def _query_vector(model: Embedder, query: str) -> np.ndarray | None:
    """The query's vector; None when the embedder fails (its endpoint down or timing out).

    The call is then ranked by its words alone, as an item without a vector is: each result's
    `why` says so, and the agent still gets an answer rather than an error. The failure is
    logged for the operator, without a traceback, at most once a minute; for a few seconds
    after a failure the embedder is not asked (`embeddings.RESTING_SECONDS`). A call that holds
    the event loop waits for the vector at most `LOOP_HELD_SECONDS` (`EmbedderSlow`).
    """
    try:
        return query_vectors.get(model, query, within=LOOP_HELD_SECONDS if holds_loop() else None)
    except EmbedderResting:
        return None  # it failed a moment ago, and that was logged
    except Exception as exc:
        now = time.monotonic()
        with _failures_lock:
            last = _failures_logged.get(model.name)
            due = last is None or now - last >= EMBEDDER_FAILURE_LOG_SECONDS
            if due:
                _failures_logged[model.name] = now
        if due:
            logger.warning(
                "the embedder %s failed (%s: %s); calls are ranked by their words alone until it answers",
                model.name,
                type(exc).__name__,
                exc,
            )
        return None


def fuse(
    lexical: list[Hit],
    semantic: list[Hit],
    limit: int | None = None,
    *,
    lead: bool = False,
    named: AbstractSet[int] = frozenset(),
) -> list[Ranked]:
    """Reciprocal rank fusion of two rankings, best first, ties to the newest (highest) id; with
    `lead`, the lexical ranking's first before all if its lead is clear (CLEAR_LEAD); the items
    `named` (items the query names: `LexicalIndex.named`) before the others.

    The first `limit` of the fused ranking (all of it by default).
    """
    weights = _rrf_weights(max(len(lexical), len(semantic)))
    # A ranking holds each id once: the lexical side's scores are its weights as they are.
    scores = dict(zip(map(_FACT_ID, lexical), weights, strict=False))
    get = scores.get
    for i, weight in zip(map(_FACT_ID, semantic), weights, strict=False):
        scores[i] = get(i, 0.0) + weight
    return _in_order(scores, lexical, semantic, limit, lead, named)


def fuse_scores(
    lexical: list[Hit],
    semantic: list[Hit],
    limit: int | None = None,
    *,
    lead: bool = False,
    named: AbstractSet[int] = frozenset(),
) -> list[Ranked]:
    """`fuse` by scores: SCORE_FUSION_WORDS of each item's word score over the best one's, plus
    the rest of its cosine over the best one's, both counted from MIN_SIMILARITY up (no
    neighbour below it is offered); an item one side did not offer has nothing from it."""
    scores: dict[int, float] = {}
    if lexical:
        scale = SCORE_FUSION_WORDS / (lexical[0].score or 1.0)
        scores.update((hit.fact_id, hit.score * scale) for hit in lexical)
    if semantic:
        scale = (1.0 - SCORE_FUSION_WORDS) / max(semantic[0].score - MIN_SIMILARITY, 1e-9)
        get = scores.get
        for hit in semantic:
            scores[hit.fact_id] = get(hit.fact_id, 0.0) + max(hit.score - MIN_SIMILARITY, 0.0) * scale
    return _in_order(scores, lexical, semantic, limit, lead, named)


def _in_order(
    scores: dict[int, float],
    lexical: list[Hit],
    semantic: list[Hit],
    limit: int | None,
    lead: bool,
    named: AbstractSet[int],
) -> list[Ranked]:
    """The fused items best first (ties to the newest id), those `named` before the others
    (`LexicalIndex.named`), the clear word winner first with `lead` (CLEAR_LEAD), the first `limit` of
    them."""
    lexical_ids = list(map(_FACT_ID, lexical))
    semantic_ids = list(map(_FACT_ID, semantic))
    kinds = dict(zip(lexical_ids, map(_KIND, lexical), strict=True))
    kinds.update(zip(semantic_ids, map(_KIND, semantic), strict=True))
    in_lexical, in_semantic = set(lexical_ids), set(semantic_ids)
    # (score, id) pairs compare in C; Ranked is built as a plain tuple (its __new__ is Python).
    order = sorted(zip(scores.values(), scores.keys(), strict=True), reverse=True)
    if named and not named.isdisjoint(scores):
        # Scored above every other (a bundle orders by scores): each plus the best other's.
        above = max((score for score, i in order if i not in named), default=0.0)
        order = sorted(((score + above if i in named else score, i) for score, i in order), reverse=True)
    if lead and len(lexical) >= 2 and semantic and lexical[0].score >= CLEAR_LEAD * lexical[1].score > 0:
        # The clear word winner first, scored as the fused first is (a bundle ranks by scores).
        first = lexical_ids[0]
        order = [(order[0][0], first), *(pair for pair in order if pair[1] != first)]
    order = order[:limit]
    new = tuple.__new__
    return [new(Ranked, (i, score, kinds[i], i in in_lexical, i in in_semantic)) for score, i in order]


_FACT_ID, _KIND = itemgetter(0), itemgetter(2)  # of a Hit

# 1 / (RRF_K + rank) for rank 1, 2, ...: the same values fuse() computed per hit, once.
_RRF_WEIGHTS = tuple(1.0 / (RRF_K + rank) for rank in range(1, 1025))


def _rrf_weights(count: int) -> Sequence[float]:
    if count <= len(_RRF_WEIGHTS):
        return _RRF_WEIGHTS
    return [1.0 / (RRF_K + rank) for rank in range(1, count + 1)]
