"""The vector side at full size, with real vectors: `python bench/vector_side.py --database-url URL`.

Run against a database that `bench/quality.py --items N --database-url URL` seeded and embedded
(the generated engineering corpus, every item embedded with the local model). For the corpus's
task phrasings (get_context: RANK_CANDIDATES nearest) and questions (search_memory: FUSION_DEPTH
nearest) it times the vector side's `nearest` in process, over the quality project's scoped
items, for each store that serves this database:

- `pgvector`: PostgreSQL's HNSW index (memory.embeddings.pgvector), on PostgreSQL with the copy ready;
- `in-process`: the in-process index (memory.embeddings.index), on either database.

Per store and depth: wall-clock p50/p95 per call, this process's CPU per call (p50: steadier than
the wall clock on a loaded machine), the PostgreSQL backend's CPU per call (mean), the
share of the exact (float32, every vector) top-k it returns, and the share of queries whose asked
item is among its results. Then the plan of one pgvector statement (EXPLAIN ANALYZE, BUFFERS).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import quality  # noqa: E402
from corpus import generate  # noqa: E402

Nearest = Callable[[np.ndarray, int], list[tuple[int, float]]]


def _backend_cpu() -> float:
    import os

    from django.db import connection

    if connection.vendor != "postgresql":
        return 0.0
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _exact(project_id: int, model: str, ids_of: Any) -> tuple[np.ndarray, np.ndarray]:
    from memory.models import Embedding

    rows = list(
        Embedding.objects.filter(project_id=project_id, model=model, fact__in=ids_of).values_list(
            "fact_id", "vector"
        )
    )
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    full = np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype="<f2").reshape(len(rows), -1)
    return ids, full.astype(np.float32)


def _measure(
    nearest: Nearest,
    queries: np.ndarray,
    answers: list[int],
    depth: int,
    exact: tuple[np.ndarray, np.ndarray],
) -> dict[str, float]:
    ids, full = exact
    nearest(queries[0], depth)  # warm
    walls: list[float] = []
    cpus: list[float] = []
    overlap: list[float] = []
    found = 0
    cpu = _backend_cpu()
    for q, answer in zip(queries, answers, strict=True):
        started, used = time.perf_counter(), time.process_time()
        got = nearest(q, depth)
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((time.process_time() - used) * 1000)
        truth = set(ids[np.argsort(-(full @ q))[:depth]].tolist())
        overlap.append(len(truth & {i for i, _ in got}) / len(truth))
        found += answer in {i for i, _ in got}
    backend = (_backend_cpu() - cpu) * 1000 / len(queries)
    walls.sort()
    return {
        "p50 ms": statistics.median(walls),
        "p95 ms": walls[int(0.95 * (len(walls) - 1))],
        "cpu p50 ms": statistics.median(cpus),
        "pg cpu ms": backend,
        "of exact top-k": float(np.mean(overlap)),
        "answer in it": found / len(queries),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--explain", action="store_true", help="print one pgvector statement's plan")
    args = parser.parse_args(argv)
    quality._django(args.database_url)
    from django.conf import settings
    from django.db import connection

    from memory.context.compile import RANK_CANDIDATES
    from memory.embeddings import embedder, pgvector
    from memory.embeddings.index import indexes
    from memory.models import State
    from memory.retrieval import FUSION_DEPTH, STALE_MARGIN
    from memory.selectors import agent_facts

    corpus = generate(args.items, questions=args.questions)
    scope, project = quality._scope_and_project(quality.PROJECT)
    model = embedder()
    assert model is not None
    items = agent_facts(scope, project)
    by_source = dict(items.filter(source__startswith="corpus/").values_list("source", "id"))
    answers = [by_source[f"corpus/{i}"] for i in corpus.asked]
    classes = list(scope.visible_classes)
    states = list(State.current())
    exact = _exact(project.pk, model.name, items.filter(state__in=states).values("pk"))
    print(f"{len(exact[0]):,} vectors of {model.name}, {connection.vendor}", flush=True)
    texts = {
        "task": [corpus.items[i].task for i in corpus.asked],
        "question": [corpus.items[i].question for i in corpus.asked],
    }
    vectors = {k: np.asarray(model.embed(v), dtype=np.float32) for k, v in texts.items()}
    stores: dict[str, Nearest] = {}
    pgvector.forget()
    if pgvector.ready():  # measured whatever PGVECTOR says (reads use it only when on)
        pg = pgvector.ProjectVectors(project.pk, model.name)

        def with_pgvector(q: np.ndarray, depth: int) -> list[tuple[int, float]]:
            return pg.nearest(q, limit=depth, items=items, states=states, kinds=None, classes=classes)

        stores["pgvector"] = with_pgvector
    index = indexes.get(project.pk, model.name)
    assert index is not None

    def in_process(q: np.ndarray, depth: int) -> list[tuple[int, float]]:
        return index.nearest(q, limit=depth * STALE_MARGIN, kinds=None, classes=classes)[:depth]

    stores["in-process"] = in_process
    print(f"PGVECTOR={settings.UNFORGETTER['PGVECTOR']}; pgvector ready: {pgvector.ready()}")
    header = None
    for phrasing, depth in (("task", RANK_CANDIDATES), ("question", FUSION_DEPTH)):
        for name, nearest in stores.items():
            row = _measure(nearest, vectors[phrasing], answers, depth, exact)
            if header is None:
                header = list(row)
                print("| store | phrasing | depth | " + " | ".join(header) + " |")
                print("|---|---|---|" + "---|" * len(header))
            print(f"| {name} | {phrasing} | {depth} | " + " | ".join(f"{row[h]:.3f}" for h in header) + " |")
    if args.explain and "pgvector" in stores:
        _explain(project.pk, model.name, items, states, classes, vectors["task"][0], RANK_CANDIDATES)
    return 0


def _explain(
    project_id: int, model: str, items: Any, states: list[str], classes: list[str], q: Any, depth: int
) -> None:
    from unittest import mock

    from django.db import connection

    from memory.embeddings import pgvector
    from memory.query_limits import bounded_rows

    with mock.patch.object(pgvector, "bounded_rows", wraps=bounded_rows) as statement:
        pgvector.ProjectVectors(project_id, model).nearest(
            q, limit=depth, items=items, states=states, kinds=None, classes=classes
        )
    sql, params = statement.call_args.args
    local = statement.call_args.kwargs.get("local_settings")
    with connection.cursor() as cursor:
        for key, value in (local or {}).items():
            cursor.execute("SELECT set_config(%s, %s, false)", [key, value])
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
        print("\n".join(row[0] for row in cursor.fetchall()))


if __name__ == "__main__":
    raise SystemExit(main())
