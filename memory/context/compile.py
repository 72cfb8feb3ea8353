"""Compiling a bundle: the sections of what an agent needs for one task in one project.

Sections by kind: `policies` (goal, policy, permission, identity: always included), `facts`
(fact, decision, convention: ranked by relevance to the task, kind weight and recency),
`open_threads`, `methods` (relevant to the task) and `pointers` (refs worth retrieving with
search_memory that did not fit, each with why it was chosen). Relevance is memory.retrieval's
hybrid ranking (the task's words and meaning, fused); near-duplicates take one slot
(memory.context.duplicates). Bounded by CONTEXT_MAX_ITEMS and CONTEXT_MAX_CHARS.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import TypeVar

import numpy as np
from django.conf import settings

from memory.context.duplicates import NearDuplicates
from memory.context.standing import StandingCache, standing_key
from memory.contract import CompiledBundle, ItemPayload, Pointer, ProjectBrief, Sections
from memory.items import COLUMNS, Item, item_of, item_payload
from memory.lexical_index import Hit, LexicalIndex
from memory.models import Fact, Kind, State
from memory.query_limits import QueryTooCostly
from memory.retrieval import Probed, Ranked, hybrid_rank, ranking_indexes
from memory.selectors import agent_facts, agent_rows, row_cache_clear
from workspaces.models import Project
from workspaces.scope import AgentScope

logger = logging.getLogger(__name__)
# A ranked hit of either kind: the word index's (Hit) or the fused ranking's (Ranked).
HitT = TypeVar("HitT", Hit, Ranked)

FACT_KINDS = (Kind.FACT, Kind.DECISION, Kind.CONVENTION)
KIND_WEIGHT: dict[str, float] = {Kind.DECISION: 1.0, Kind.CONVENTION: 0.9, Kind.FACT: 0.75}
RECENCY_HALF_LIFE_DAYS = 45.0
# Facts the task's ranking offers a bundle: the default bundle serves up to 40 items and points to
# 10 more (larger bounds are offered more: `_candidates`), and the newest facts (RECENT) are
# offered beside them. 60 held the answer for no more tasks (bench/quality.py: 0.985 at 100k
# items, 0.980 at 10k, 0.581 of REALTALK's relevant messages, at 50 and 60 alike) and read more
# rows: get_context p50 over HTTP fell 0.22 ms on SQLite and 0.57 ms on PostgreSQL from 60 to 50
# (alternated A/B, English tasks, 100k items).
CANDIDATES = 50
# Ranked items considered per bundle (facts and methods together), and how deep each side's ranking
# is fused: CANDIDATES facts and 6 methods are kept of them. bench/quality.py, hybrid, share of bundles
# holding the answer at 100k / 10k items, and of relevant REALTALK messages in bundles:
#   120: 0.985 / 0.985 / 0.581      80: 0.985 / 0.980 / 0.581      60: 0.990 / 0.970 / 0.587
# (200 held no more than 120 did.) What 80 loses at 10k is one task whose answer was 10th by its
# words and 120th by its meaning, at the edge of any depth. From 120 to 80, a new task's
# get_context p50 over HTTP fell 0.44-0.56 ms on SQLite and 0.16-0.40 on PostgreSQL (alternated
# A/B runs, English tasks, 100k items): each side ranks, checks and fuses a third fewer.
RANK_CANDIDATES = 80
WEAK_MATCH_SHARE = 0.25
MAX_THREADS = 12
RECENT = 20
RESERVED_THREADS = 4
RESERVED_METHODS = 3
MAX_METHODS = 6


def _candidates() -> tuple[int, int]:
    """How many ranked facts a bundle is offered and how deep the ranking goes, for the configured
    bounds: CANDIDATES and RANK_CANDIDATES, or more where a bundle may serve and point to more
    (CONTEXT_MAX_ITEMS, CONTEXT_MAX_POINTERS), so that a larger bundle is not filled by recency."""
    limits = settings.UNFORGETTER
    facts = max(CANDIDATES, limits["CONTEXT_MAX_ITEMS"] + limits["CONTEXT_MAX_POINTERS"])
    return facts, facts + RANK_CANDIDATES - CANDIDATES


@dataclass
class _Budget:
    items: int
    chars: int

    def less(self, reserved: list[Item]) -> _Budget:
        """A budget for one section that leaves room for `reserved` items of later sections."""
        return _Budget(
            items=self.items - len(reserved), chars=self.chars - sum(len(f.text) for f in reserved)
        )

    def spend(self, section: list[ItemPayload]) -> None:
        self.items -= len(section)
        self.chars -= sum(len(item["text"]) for item in section)

    def take(self, text: str) -> bool:
        if self.items <= 0 or len(text) > self.chars:
            return False
        self.items -= 1
        self.chars -= len(text)
        return True


def _recency(created_at: datetime, now: datetime) -> float:
    age_days = max((now - created_at).total_seconds() / 86400.0, 0.0)
    return math.pow(0.5, age_days / RECENCY_HALF_LIFE_DAYS)


@dataclass
class _Standing:
    """Items chosen without the task: policies, the newest open threads and the newest facts."""

    policies: list[Item]
    threads: list[Item]
    recent: list[Item]


def _standing(scope: AgentScope, project: Project) -> _Standing:
    """Every protected item, the newest open threads and the newest facts per kind: one statement.

    Each part walks the (project, state, kind, -created_at) index newest first and stops at its
    limit: a single `kind IN (...)` query would sort every current item of the project first (tens
    of milliseconds at 100k items).
    """
    items = agent_facts(scope, project).only(*COLUMNS)
    newest = ("-created_at", "-id")
    parts = [items.filter(kind__in=Kind.protected(), state=State.ACTIVE).order_by(*newest)]
    parts.append(items.filter(kind=Kind.THREAD, state=State.OPEN).order_by(*newest)[:MAX_THREADS])
    parts += [items.filter(kind=kind, state=State.ACTIVE).order_by(*newest)[:RECENT] for kind in FACT_KINDS]
    compiled = [part.query.sql_with_params() for part in parts]
    # ORM-compiled SQL; every value is a parameter.
    sql = " UNION ALL ".join(f"SELECT * FROM ({part}) AS k{i}" for i, (part, _) in enumerate(compiled))  # noqa: S608
    params = [param for _, part_params in compiled for param in part_params]
    found = (item_of(f) for f in Fact.objects.raw(sql, params))
    rows = sorted(found, key=lambda f: (f.created_at, f.id), reverse=True)
    protected = Kind.protected()
    return _Standing(
        policies=sorted((f for f in rows if f.kind in protected), key=lambda f: f.kind),
        threads=[f for f in rows if f.kind == Kind.THREAD],
        recent=[f for f in rows if f.kind in FACT_KINDS][:RECENT],
    )


_standing_parts: StandingCache[_Standing] = StandingCache()


def standing_part(scope: AgentScope, project: Project, version: int | None) -> _Standing:
    """The task-independent part, compiled once per (project, content version, visible classes).

    `version` None (no publication to key it by) compiles it afresh.
    """
    if version is None:
        return _standing(scope, project)
    return _standing_parts.get_or_compile(
        standing_key(scope, project, version), lambda: _standing(scope, project)
    )


def standing_parts_clear() -> None:
    """Forget every standing part and scoped row this process keeps per content version (for
    writes that bypass publication)."""
    _standing_parts.clear()
    row_cache_clear()


RECENT_WHY = "recent in this project"
OPEN_WHY = "is open"


@dataclass
class _Ranked:
    facts: list[tuple[Item, str]]
    methods: list[tuple[Item, str]]
    # The project's word index, which knows what each item's text tells (near-duplicates).
    index: LexicalIndex
    # The stored vectors of the ranked items, to tell near-duplicates apart (empty without any).
    vectors: Mapping[int, np.ndarray] = field(default_factory=dict)


def _strong(hits: list[Hit]) -> list[Hit]:
    """The lexical hits that match the task, per section (facts, methods).

    A hit that shares only the task's commonest words with it scores a sliver of the best one
    of its section: it is neither served for relevance nor offered as a pointer.
    """
    best: dict[bool, float] = {}
    for hit in hits:
        section = hit.kind == Kind.METHOD
        best[section] = max(best.get(section, 0.0), hit.score)
    return [hit for hit in hits if hit.score >= WEAK_MATCH_SHARE * best[hit.kind == Kind.METHOD]]


def _taken(hits: list[HitT], candidates: int) -> tuple[list[HitT], list[HitT]]:
    """The facts (the first `candidates`) and methods (the first MAX_METHODS) a bundle takes of
    ranked hits, best first: what the read-ahead reads and what the ranking then offers."""
    facts = [hit for hit in hits if hit.kind != Kind.METHOD][:candidates]
    return facts, [hit for hit in hits if hit.kind == Kind.METHOD][:MAX_METHODS]


def _why(hit: Ranked) -> str:
    if hit.lexical and hit.semantic:
        return "matches the task's words and meaning"
    return "matches words of the task" if hit.lexical else "is close in meaning to the task"


def _ranked(
    scope: AgentScope,
    project: Project,
    task: str,
    now: datetime,
    recent: list[Item],
    version: int | None,
    probed: Probed | None,
) -> _Ranked:
    """The task-specific part: facts, decisions and conventions best first, and methods, each
    with why it was chosen. It ranks the standing part's newest facts (`recent`) beside its own
    matches, and reads only through the scope (`agent_facts`, `agent_rows`).

    One hybrid ranking (memory.retrieval: words and meaning, fused) scores facts and methods
    together, its candidates unchecked, and one fetch reads every chosen row through the scope,
    as a plain tuple: the rows, not the ranking, are the costly part, and a row the fetch does
    not return (retired since the word index read it) is not served. Both reads name the
    content `version`, so rows this process already read under it for the same scope are not
    read again (memory.selectors.agent_rows): while the task's vector is being embedded, the
    rows the words alone would choose are read ahead, and the fetch then reads only the chosen
    rows the meaning added.
    """
    index, vectors = ranking_indexes(project.pk, probed)
    had = {f.id for f in recent}
    candidates, depth = _candidates()

    def read_ahead(strong: list[Hit]) -> None:
        facts, methods = _taken(strong, candidates)
        wanted = [h.fact_id for h in [*facts, *methods] if h.fact_id not in had]
        agent_rows(scope, project, wanted, COLUMNS, version=version)

    try:
        hits = hybrid_rank(
            items=partial(agent_facts, scope, project),
            project_id=project.pk,
            data_classes=scope.visible_classes,
            states=[State.ACTIVE],
            kinds=(*FACT_KINDS, Kind.METHOD),
            query=task,
            limit=depth,
            vectors=vectors,
            depth=depth,
            lexical_filter=_strong,
            # Not checked: the chosen rows are read through the scope below, and only they count.
            rows_of=None,
            # Read ahead only into the rows kept per content version (none without one).
            while_embedding=read_ahead if version is not None else None,
            index=index,
        )
    except QueryTooCostly:
        # A task whose words match more than one call may rank still gets its bundle: the
        # standing part (policies, newest facts, open threads) without the task-specific picks.
        # search_memory refuses such a query with a clear error; a bundle is owed on every turn.
        logger.warning("get_context: ranking for project %s stopped at the time budget", project.pk)
        hits = []
    fact_hits, method_hits = _taken(hits, candidates)
    rows = {f.id: f for f in recent}
    recent_ids = list(rows)
    missing = [hit.fact_id for hit in [*fact_hits, *method_hits] if hit.fact_id not in rows]
    if missing:
        rows.update(
            (row[0], Item._make(row)) for row in agent_rows(scope, project, missing, COLUMNS, version=version)
        )
        # Candidates are ranked as the word index last knew them: one retired since is not read
        # through the scope, so it is left out, and the index stops offering it.
        index.mark_dead([i for i in missing if i not in rows])
    relevance = {hit.fact_id: hit.score for hit in fact_hits if hit.fact_id in rows}
    why = {hit.fact_id: _why(hit) for hit in [*fact_hits, *method_hits]}
    top = max(relevance.values(), default=0.0) or 1.0
    method_ids = [hit.fact_id for hit in method_hits if hit.fact_id in rows]

    def score(fact: Item) -> float:
        rel = relevance.get(fact.id, 0.0) / top
        return 0.6 * rel + 0.25 * KIND_WEIGHT.get(fact.kind, 0.5) + 0.15 * _recency(fact.created_at, now)

    facts = [rows[i] for i in dict.fromkeys([*relevance, *recent_ids]) if i in rows]
    ordered = sorted(facts, key=lambda f: (score(f), f.id), reverse=True)
    return _Ranked(
        facts=[(f, why.get(f.id, RECENT_WHY)) for f in ordered],
        methods=[(rows[i], why[i]) for i in method_ids if i in rows],
        index=index,
        vectors=vectors.vectors_of(rows) if vectors else {},
    )


def _fill(
    section: list[ItemPayload],
    candidates: Iterable[tuple[Item, str]],
    budget: _Budget,
    pointers: list[Pointer],
    served: list[str],
    duplicates: NearDuplicates,
) -> None:
    max_pointers = settings.UNFORGETTER["CONTEXT_MAX_POINTERS"]
    for fact, why in candidates:
        if budget.items <= 0 and len(pointers) >= max_pointers:
            break  # nothing further can be served or pointed to
        if duplicates.repeats(fact.id, fact.text):
            continue
        if budget.take(fact.text):
            section.append(item_payload(fact))
            served.append(fact.ref)
        elif len(pointers) < max_pointers and why not in (RECENT_WHY, OPEN_WHY):
            pointers.append(
                {"ref": fact.ref, "why": f"{fact.kind} that {why}; left out to keep the bundle bounded"}
            )


def compile_bundle(
    scope: AgentScope,
    project: Project,
    task: str,
    now: datetime,
    *,
    version: int | None = None,
    probed: Probed | None = None,
) -> CompiledBundle:
    """The bundle's sections, without freshness and identity (which belong to each serving).

    The standing part comes from `standing_part` (kept per content `version`); only `_ranked`
    (the task-specific part) runs for each new task, with `probed` (the project's
    `ranking_probe` and its values) if the caller read them.
    """
    limits = settings.UNFORGETTER
    budget = _Budget(items=limits["CONTEXT_MAX_ITEMS"], chars=limits["CONTEXT_MAX_CHARS"])
    served: list[str] = []
    pointers: list[Pointer] = []

    standing = standing_part(scope, project, version)
    # Protected items are always included; they spend the budget first.
    policies = standing.policies
    for fact in policies:
        budget.items -= 1
        budget.chars -= len(fact.text)
        served.append(fact.ref)

    ranked = _ranked(scope, project, task, now, standing.recent, version, probed)
    offered = [f.id for f, _ in (*ranked.facts, *ranked.methods)] + [t.id for t in standing.threads]
    duplicates = NearDuplicates(ranked.vectors, ranked.index.told_of(offered))
    # Facts alone would fill any budget in a large project: each section keeps room for the first
    # few items of the sections after it (the newest open threads, the best methods).
    thread_room = standing.threads[:RESERVED_THREADS]
    method_room = [m for m, _ in ranked.methods[:RESERVED_METHODS]]
    facts: list[ItemPayload] = []
    _fill(facts, ranked.facts, budget.less(thread_room + method_room), pointers, served, duplicates)
    budget.spend(facts)

    open_threads: list[ItemPayload] = []
    threads = ((t, OPEN_WHY) for t in standing.threads)
    _fill(open_threads, threads, budget.less(method_room), pointers, served, duplicates)
    budget.spend(open_threads)

    methods: list[ItemPayload] = []
    _fill(methods, ranked.methods, budget, pointers, served, duplicates)

    sections = Sections(
        project=ProjectBrief(id=project.slug, name=project.name, data_class=project.data_class),
        task=task,
        policies=[item_payload(p) for p in policies],
        facts=facts,
        open_threads=open_threads,
        methods=methods,
        pointers=pointers,
    )
    return CompiledBundle(sections=sections, served=served)
