"""get_context and search_memory over HTTP, every item embedded: `bench/full_vectors.py [--database-url URL]`.

`bench/run.py` embeds a few hundred of its million items before measuring (embedding them all
would take an hour on some machines of this kind), so its get_context runs the hybrid ranking over
a vector index of a few hundred rows, and its tasks are made-up words that tokenise to twice the
tokens of English ones. This measures the case DESIGN section 8 budgets as an agent meets it: a
project of 100,000 items, every one with a vector, asked in English.

It measures the generated engineering corpus (bench/corpus.py) that `bench/quality.py` seeds and
embeds: on the database `--database-url` names (default: `unforgetter_quality` on the PostgreSQL
server of `--admin-url`, created if missing), it first runs `bench/quality.py --items N --keep`,
which imports and embeds the corpus unless the database already holds it (and prints the quality
table); `--vectors-from URL` copies the vectors of a database seeded earlier instead of embedding
them again. Then it serves that database with the benchmark's settings and `--workers` workers
(default: one per CPU), issues a reader token and, with one kept-alive client:

1. fresh server: get_context for task phrasings not asked before, the first calls after the start;
2. warmed, after a warm-up: list_projects, get_context for new tasks, search_memory for questions;

then reads the largest worker's resident memory, the project's vectors included. Prints one table
with the budgets.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess

import psycopg
import run
from corpus import generate
from quality import PROJECT, WORKSPACE


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--admin-url", default=os.environ.get("BENCH_ADMIN_URL", "postgres://root@127.0.0.1:5432/postgres")
    )
    parser.add_argument(
        "--database-url", help="sqlite:///path or postgres://... (default: unforgetter_quality)"
    )
    parser.add_argument(
        "--vectors-from", metavar="DATABASE_URL", help="copy the corpus's vectors from this database"
    )
    parser.add_argument("--items", type=int, default=100_000, help="the corpus size quality.py seeded")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--calls", type=int, default=300, help="calls per measured phase")
    options = parser.parse_args()
    url = options.database_url or run.server_url(options.admin_url, "unforgetter_quality")
    if not url.startswith("sqlite:"):
        _create_missing(options.admin_url, url.rsplit("/", 1)[-1])
    seeding = [run.PYTHON, str(run.ROOT / "bench" / "quality.py"), "--items", str(options.items), "--keep"]
    seeding += ["--database-url", url]
    if options.vectors_from:
        seeding += ["--vectors-from", options.vectors_from]
    run.log(f"bench/quality.py --items {options.items} --keep (seeds and embeds the corpus if not yet) ...")
    subprocess.run(seeding, check=True, cwd=run.ROOT)

    corpus = generate(options.items, questions=200)
    rng = random.Random(20261206)
    order = list(range(len(corpus.items)))
    rng.shuffle(order)
    # Distinct task texts: a task asked again is the bundle cache's, not a ranking.
    tasks = list(dict.fromkeys(corpus.items[i].task for i in order))
    questions = list(dict.fromkeys(corpus.items[i].question for i in order))
    n = options.calls
    fresh, warm_up, warmed = tasks[: n // 3], tasks[n // 3 : n // 3 + 30], tasks[n // 3 + 30 :][:n]

    counted = run.query_row(url, _EMBEDDED, [WORKSPACE, PROJECT])
    if counted is None or counted[0] != options.items or counted[1] != counted[0]:
        raise SystemExit(
            f"Expected {options.items:,} items, every one with a vector, in {WORKSPACE}/{PROJECT}; "
            f"found {counted}."
        )
    token = run.manage(url, "issue_token", WORKSPACE, "--actor", "bench@full-vectors", "--zone", "claude")
    server = run.serve(url, options.workers)
    rows: list[tuple[str, str, str, bool | None]] = []
    try:
        client = run.McpHttp(server.url, token.strip())
        run.log(f"get_context, fresh server ({len(fresh)} new tasks) ...")
        first = run.timed(client, "get_context", [{"project_id": PROJECT, "task": t} for t in fresh])
        for task in warm_up:
            client.call("get_context", {"project_id": PROJECT, "task": task})
        run.log("list_projects, get_context and search_memory, warmed ...")
        floor = run.timed(client, "list_projects", [{}] * n)
        ctx = run.timed(client, "get_context", [{"project_id": PROJECT, "task": t} for t in warmed])
        asked = [{"project_id": PROJECT, "query": q} for q in questions[:n]]
        srch = run.timed(client, "search_memory", asked)
        client.close()
        k = f"{options.items // 1000}k"
        rows += run._latency_rows(f"get_context ({k} embedded, English tasks, fresh server)", first, 8, 20)
        rows.append(run._ceiling_row("list_projects p50", floor.pct(50), 2))
        rows += run._latency_rows(f"get_context ({k} embedded, English tasks, warmed)", ctx, 8, 20)
        rows += run._latency_rows(f"search_memory ({k} embedded, questions, warmed)", srch, None, 15)
        rss, peak = server.rss_mb()
        rows.append(run._ceiling_row(f"RSS of one web worker after the run ({k} vectors)", rss, 250, "MB"))
        rows.append(run._ceiling_row("peak RSS of one web worker (VmHWM)", peak, 250, "MB"))
        rows += server.parts_rows()
    finally:
        server.stop()
    sizes = run.Sizes(
        project_items=options.items, projects=1, latency_calls=n, warmup_calls=30, concurrent_seconds=0
    )
    run.print_table(rows, sizes, url.rsplit("/", 1)[-1], url, options.workers)


def _create_missing(admin_url: str, name: str) -> None:
    """Create the PostgreSQL database `name` if the server has none of that name (never drops one)."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{name}"')


# The project's items, and those of them with a vector (of any model: quality.py embeds with one).
_EMBEDDED = """
    SELECT count(*), count(DISTINCT e.fact_id) FROM memory_fact AS f
    JOIN workspaces_project AS p ON p.id = f.project_id
    JOIN workspaces_workspace AS w ON w.id = p.workspace_id
    LEFT JOIN memory_embedding AS e ON e.fact_id = f.id
    WHERE w.slug = {0} AND p.slug = {0}
"""


if __name__ == "__main__":
    main()
