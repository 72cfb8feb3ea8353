"""get_context's CPU per new task, in process, and its bundles, for comparing two trees.

    python bench/quality.py --items 10000 --database-url sqlite:////tmp/q.sqlite3   # seeds it once
    cd /path/to/old/tree && python /path/to/bench/context_cpu.py sqlite:////tmp/q.sqlite3 --out old.json
    cd /path/to/new/tree && python /path/to/bench/context_cpu.py sqlite:////tmp/q.sqlite3 --out new.json
    cmp old.json new.json

Run from the tree being measured: its `memory` is the one imported (the current directory comes
first on the path). Against the corpus `bench/quality.py` seeded (`--items` the same), it asks
150 fixed tasks through `context_for_agent` with a real credential's scope, as the MCP tool does,
and writes their bundles (freshness aside, which holds the time) to `--out`: bundles of two trees
on the same database must be byte-identical. Then, `--passes` times, it asks 150 tasks never
asked before (their query vectors embedded first, as the prefetch thread does, so the figure is
the request thread's CPU) and prints thread CPU per task, p50 and p95. Interleave runs of the two
trees on a busy machine and compare ranges.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.getcwd())
sys.path.insert(1, str(Path(__file__).resolve().parent))

TASKS = 150


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("database_url")
    parser.add_argument("--out", type=Path, required=True, help="where the fixed tasks' bundles go (JSON)")
    parser.add_argument("--items", type=int, default=10_000, help="the corpus size bench/quality.py seeded")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--token-file", type=Path, help="a reader token to reuse (issued and kept if absent)")
    args = parser.parse_args(argv)
    os.environ["DATABASE_URL"] = args.database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "unforgetter.settings")
    os.environ.setdefault("EMBEDDED_WORKER", "false")
    os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-not-for-production-0123456789")
    os.environ.setdefault("LEDGER_KEY", "bench-only-ledger-key-not-for-production-0123456789")
    import django

    django.setup()
    from corpus import generate
    from django.core.cache import cache
    from django.core.management import call_command
    from quality import PROJECT, WORKSPACE

    from memory.context import context_for_agent
    from memory.embeddings import embedder, query_vectors
    from workspaces.selectors import connection_for_bearer, project_for_agent

    token_file = args.token_file or args.out.with_suffix(".token")
    if not token_file.exists():
        out = io.StringIO()
        call_command("issue_token", WORKSPACE, "--actor", "bench@context", "--zone", "claude", stdout=out)
        token_file.write_text(out.getvalue().strip())
    found = connection_for_bearer(token_file.read_text().strip())
    assert found is not None, "the token file's token is not usable here"
    scope = found.scope()
    project = project_for_agent(scope, PROJECT)
    corpus = generate(args.items, questions=200)
    asked = set(corpus.asked)
    fixed = [corpus.items[i].task for i in corpus.asked[:TASKS]]
    fresh = [item.task for i, item in enumerate(corpus.items) if i not in asked]

    def ask(tasks: list[str]) -> tuple[list[float], list[Any]]:
        times, bundles = [], []
        for task in tasks:
            started = time.thread_time()
            bundles.append(context_for_agent(scope=scope, project=project, task=task))
            times.append((time.thread_time() - started) * 1000)
        return times, bundles

    cache.clear()
    _, bundles = ask(fixed)
    args.out.write_text(json.dumps([{k: v for k, v in b.items() if k != "freshness"} for b in bundles]))
    every: list[float] = []
    model = embedder()
    for number in range(args.passes):
        tasks = fresh[number * TASKS : (number + 1) * TASKS]
        if model is not None:
            for task in tasks:
                query_vectors.get(model, task)
        times, _ = ask(tasks)
        every += times
        print(f"pass {number}: {_summary(times)}", flush=True)
    if every:
        print(f"all: {_summary(every)}")
    return 0


def _summary(times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    mean = statistics.fmean(ordered)
    return f"p50 {statistics.median(ordered):.2f} ms, p95 {p95:.2f} ms, mean {mean:.2f} ms"


if __name__ == "__main__":
    raise SystemExit(main())
