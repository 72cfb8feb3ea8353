"""The vector side on PostgreSQL, pgvector against the in-process index: `python bench/pgvector_topk.py`.

Run against a database seeded by `bench/run.py --keep --projects 1 ...` (DATABASE_URL, with
pgvector 0.8+ installed). Embedding 100,000 items with the local model would take hours, so the
measured project's current items get random unit vectors (384 dimensions, float16, as stored)
under a model name of their own, copied into pgvector by `pgvector.sync()` (the HNSW build is
timed). Random vectors are the worst case for an HNSW graph's recall (no clusters), which is
reported beside the latency; they are fine for latency.

Measured, per top-k of `limit` (50: search_memory's depth; 200: get_context's):
- pgvector with its HNSW index, without it (an exact scan; the index dropped in a transaction
  that is rolled back), and with a selective filter (one kind), through the real scoped
  queryset (memory.selectors.agent_facts) and `ProjectVectors.nearest`;
- the in-process index (`indexes.get` loading it once, then `VectorIndex.nearest`).
CPU time per call is the client's `time.process_time()` plus the PostgreSQL backend's utime+stime
from /proc (both summed over CALLS calls), so the figures hold on a loaded machine; wall-clock
medians are printed too. Then each store's resident memory in a fresh process (VmRSS / VmHWM).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "unforgetter.settings")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
django.setup()

import numpy as np  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from memory.embeddings import pgvector  # noqa: E402
from memory.embeddings.index import indexes  # noqa: E402
from memory.models import Embedding, Fact, State  # noqa: E402
from memory.selectors import agent_facts  # noqa: E402
from workspaces.models import Connection, Project  # noqa: E402
from workspaces.scopes import scopes_for_role  # noqa: E402
from workspaces.selectors import agent_scope  # noqa: E402

MODEL = "bench-random-384"
DIMENSIONS = 384
CALLS = 40
SEED_ROWS = 5_000
CLK_TCK = os.sysconf("SC_CLK_TCK")


def _project() -> Project:
    return Project.objects.order_by("id").first()  # type: ignore[return-value]


def _scoped(project: Project) -> Any:
    credential = Connection.objects.filter(workspace_id=project.workspace_id).order_by("id").first()
    assert credential is not None, "seed the database with bench/run.py first"
    return agent_facts(agent_scope(credential, grants=scopes_for_role(credential.role)), project)


def _queries(count: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    q = rng.standard_normal((count, DIMENSIONS), dtype=np.float32)
    unit: np.ndarray = q / np.linalg.norm(q, axis=1, keepdims=True)
    return unit


def seed() -> None:
    project = _project()
    done = Embedding.objects.filter(project=project, model=MODEL).count()
    facts = list(Fact.objects.current().filter(project=project).values_list("id", "kind", "data_class"))
    rng = np.random.default_rng(20261202)
    if done < len(facts):
        Embedding.objects.filter(model=MODEL).delete()
        for start in range(0, len(facts), SEED_ROWS):
            chunk = facts[start : start + SEED_ROWS]
            v = rng.standard_normal((len(chunk), DIMENSIONS), dtype=np.float32)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            Embedding.objects.bulk_create(
                Embedding(
                    fact_id=i,
                    project=project,
                    model=MODEL,
                    kind=k,
                    data_class=c,
                    vector=row.astype("<f2").tobytes(),
                )
                for (i, k, c), row in zip(chunk, v, strict=True)
            )
    started = time.monotonic()
    copied = pgvector.sync()
    print(
        json.dumps(
            {
                "vectors": len(facts),
                "copied": copied,
                "copy_and_index_s": round(time.monotonic() - started, 1),
            }
        )
    )


def _backend_cpu() -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def _timed(call: Callable[[np.ndarray], list[tuple[int, float]]], queries: np.ndarray) -> dict[str, Any]:
    call(queries[0])  # warm caches and connections
    walls = []
    cpu0, backend0 = time.process_time(), _backend_cpu()
    for q in queries:
        started = time.perf_counter()
        call(q)
        walls.append((time.perf_counter() - started) * 1000)
    client = (time.process_time() - cpu0) * 1000 / len(queries)
    backend = (_backend_cpu() - backend0) * 1000 / len(queries)
    return {
        "cpu_ms_per_call": round(client + backend, 2),
        "client_cpu_ms": round(client, 2),
        "postgres_cpu_ms": round(backend, 2),
        "wall_p50_ms": round(statistics.median(walls), 2),
    }


def measure() -> None:
    project = _project()
    items = _scoped(project)
    states = list(State.current())
    queries = _queries(CALLS)
    visible = pgvector.ProjectVectors(project.pk, MODEL)
    classes = ["public", "internal"]  # the benchmark credential's
    out: dict[str, Any] = {}
    exact = indexes.get(project.pk, MODEL)
    assert exact is not None
    for limit in (50, 200):

        def pg(q: np.ndarray, limit: int = limit, kinds: Any = None) -> list[tuple[int, float]]:
            return visible.nearest(q, limit=limit, items=items, states=states, kinds=kinds, classes=classes)

        out[f"pgvector_hnsw_top{limit}"] = _timed(pg, queries)

        def one_kind(
            q: np.ndarray, pg: Callable[..., list[tuple[int, float]]] = pg
        ) -> list[tuple[int, float]]:
            return pg(q, kinds=["method"])

        def in_process(q: np.ndarray, limit: int = limit) -> list[tuple[int, float]]:
            return exact.nearest(q, limit=limit, kinds=None, classes=classes)

        out[f"pgvector_hnsw_top{limit}_one_kind"] = _timed(one_kind, queries)
        out[f"in_process_top{limit}"] = _timed(in_process, queries)
        # Recall of the HNSW answers against the exact ones (float32 brute force).
        ids, full = _all_vectors(project)
        for name, store in ((f"pgvector_hnsw_top{limit}", pg), (f"in_process_top{limit}", in_process)):
            recalls = []
            for q in queries[:10]:
                truth = set(ids[np.argsort(-(full @ q))[:limit]].tolist())
                recalls.append(len(truth & {i for i, _ in store(q)}) / limit)
            out[name]["recall_vs_exact"] = round(float(np.mean(recalls)), 3)
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(f"DROP INDEX {pgvector.index_name(MODEL)}")
            out[f"pgvector_exact_top{limit}"] = _timed(pg, queries[:10])
            transaction.set_rollback(True)
    sql, params = _explain_sql(project, items, states, classes, queries[0])
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + sql, params)
        out["plan"] = [row[0] for row in cursor.fetchall()][:8]
    print(json.dumps(out, indent=1))


def _all_vectors(project: Project) -> tuple[np.ndarray, np.ndarray]:
    rows = list(
        Embedding.objects.filter(
            project=project, model=MODEL, fact__in=_scoped(project).values("pk")
        ).values_list("fact_id", "vector")
    )
    ids = np.array([r[0] for r in rows])
    full = (
        np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype="<f2")
        .reshape(len(rows), -1)
        .astype(np.float32)
    )
    return ids, full


def _explain_sql(project: Project, items: Any, states: list[str], classes: list[str], q: np.ndarray) -> Any:
    from django.db.models.expressions import RawSQL

    d = DIMENSIONS
    distance = RawSQL(f'("memory_embedding"."vec"::halfvec({d})) <=> %s::halfvec({d})', [pgvector.as_text(q)])  # noqa: S611
    query = (
        Embedding.objects.filter(
            model=MODEL,
            project_id=project.pk,
            data_class__in=classes,
            fact__in=items.filter(state__in=states).values("pk"),
        )
        .annotate(distance=distance)
        .order_by("distance")
        .values_list("fact_id", "distance")[:50]
    )
    return query.query.sql_with_params()


def rss(store: str) -> None:
    """One process's resident memory after serving top-k from `store` (run in a fresh process)."""
    project = _project()
    queries = _queries(5)
    if store == "baseline":
        _scoped(project).count()
    elif store == "in-process":
        index = indexes.get(project.pk, MODEL)
        assert index is not None
        for q in queries:
            index.nearest(q, limit=200, kinds=None, classes=["public", "internal", "confidential"])
    else:
        items = _scoped(project)
        visible = pgvector.ProjectVectors(project.pk, MODEL)
        for q in queries:
            visible.nearest(
                q, limit=200, items=items, states=list(State.current()), kinds=None, classes=["public"]
            )
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    print(json.dumps({store: {k: status[k].strip() for k in ("VmRSS", "VmHWM")}}))


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "all"
    if what == "seed":
        seed()
    elif what == "measure":
        measure()
    elif what.startswith("rss-"):
        rss(what[4:])
    else:
        seed()
        measure()
        for store in ("rss-baseline", "rss-in-process", "rss-pgvector"):
            subprocess.run([sys.executable, __file__, store], check=True)
