"""Retrieval-quality benchmark: recall of search_memory and the share of tasks whose bundle holds
the answer, on a generated engineering memory with known answers (`bench/corpus.py`).

    python bench/quality.py --items 10000                    # SQLite file under var/
    python bench/quality.py --items 100000 --database-url postgres://root@127.0.0.1:5432/h9

It imports the corpus with `import_memory` into a fresh database (or reuses one with `--keep`),
issues a reader token, then asks every question through the selectors the MCP tools call (the
same scoping, ranking and cursors; no HTTP, since quality and not speed is measured here).
Relevance is known exactly: each asked item is the one answer to its phrasings.

Rows: for each phrasing (keyword, natural-language question, paraphrase in other words),
search_memory's recall@1/5/10/20 (k=20 reads the second page through its cursor); for task
phrasings, the share of get_context bundles holding the item. Each figure is printed for the
lexical ranking alone and for the hybrid one, side by side.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from corpus import PHRASINGS, Corpus, generate, write_jsonl  # noqa: E402

WORKSPACE = "quality"
PROJECT = "engineering"
KS = (1, 5, 10, 20)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _django(database_url: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "unforgetter.settings")
    os.environ.setdefault("EMBEDDED_WORKER", "false")
    os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-not-for-production-0123456789")
    os.environ.setdefault("LEDGER_KEY", "bench-only-ledger-key-not-for-production-0123456789")
    import django

    django.setup()


def _seeded(corpus: Corpus) -> bool:
    """Whether the database holds exactly this corpus (same size, and the asked items in place)."""
    from memory.models import Fact

    items = Fact.objects.filter(project__slug=PROJECT, workspace__slug=WORKSPACE)
    if items.count() != len(corpus.items):
        return False
    asked = {f"corpus/{i}": corpus.items[i].text for i in corpus.asked}
    stored = dict(items.filter(source__in=list(asked)).values_list("source", "text"))
    return stored == asked


def seed(corpus: Corpus, data_dir: Path) -> float:
    """Import the corpus into a fresh project; the import's items per second."""
    from django.core.management import call_command

    from workspaces.models import Workspace

    Workspace.objects.filter(slug=WORKSPACE).delete()
    call_command("create_workspace", WORKSPACE, stdout=io.StringIO())
    call_command("create_project", WORKSPACE, PROJECT, "--data-class", "internal", stdout=io.StringIO())
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / f"quality-{len(corpus.items)}.jsonl"
    write_jsonl(corpus, path)
    started = time.perf_counter()
    call_command("import_memory", WORKSPACE, PROJECT, str(path), stdout=io.StringIO())
    return len(corpus.items) / (time.perf_counter() - started)


def _scope_and_project() -> tuple[Any, Any]:
    from django.core.management import call_command

    from workspaces.selectors import connection_for_bearer, project_for_agent

    out = io.StringIO()
    call_command("issue_token", WORKSPACE, "--actor", "bench@quality", "--zone", "claude", stdout=out)
    found = connection_for_bearer(out.getvalue().strip())
    assert found is not None
    scope = found.scope()
    return scope, project_for_agent(scope, PROJECT)


def _search_sources(scope: Any, project: Any, query: str) -> list[str]:
    from memory.selectors import search_for_agent

    page = search_for_agent(scope=scope, project=project, query=query)
    found = [r["provenance"]["source"] for r in page["results"]]
    if "cursor" in page and len(found) < max(KS):
        more = search_for_agent(scope=scope, project=project, query=query, cursor=page["cursor"])
        found += [r["provenance"]["source"] for r in more["results"]]
    return found


def _bundle_sources(scope: Any, project: Any, task: str) -> list[str]:
    from memory.context import context_for_agent

    bundle = context_for_agent(scope=scope, project=project, task=task)
    return [item["provenance"]["source"] for item in bundle["facts"]]


def measure(corpus: Corpus, scope: Any, project: Any) -> dict[str, float]:
    """Recall@k per search phrasing and the bundle hit share of tasks: one figure per row."""
    figures: dict[str, float] = {}
    asked = corpus.asked
    for phrasing in PHRASINGS:
        if phrasing == "task":
            continue
        hits = dict.fromkeys(KS, 0)
        for i in asked:
            found = _search_sources(scope, project, getattr(corpus.items[i], phrasing))
            for k in KS:
                hits[k] += f"corpus/{i}" in found[:k]
        for k in KS:
            figures[f"search {phrasing} recall@{k}"] = hits[k] / len(asked)
    held = sum(f"corpus/{i}" in _bundle_sources(scope, project, corpus.items[i].task) for i in asked)
    figures["get_context task: bundle holds the answer"] = held / len(asked)
    return figures


def _embed_all() -> None:
    from memory.services.embeddings import embeddings_missing, embeddings_refresh

    total = embeddings_missing()
    if not total:
        return
    log(f"embedding {total:,} items ...")
    started = time.perf_counter()

    def progress(done: int) -> None:
        if done % 2048 == 0:
            log(f"  {done:,}/{total:,}")

    embeddings_refresh(progress=progress)
    log(f"  {total / (time.perf_counter() - started):,.0f} items/s")


def _modes(embedder_setting: str) -> dict[str, Callable[[], None]]:
    """The rankings compared: the lexical one alone, and the hybrid one with the given embedder."""
    from django.conf import settings
    from django.core.cache import cache

    def use(value: str) -> Callable[[], None]:
        def prepare() -> None:
            settings.UNFORGETTER["EMBEDDER"] = value
            cache.clear()  # bundles compiled under the other ranking

        return prepare

    modes = {"lexical": use("off")}
    if embedder_setting != "off":
        modes["hybrid"] = use(embedder_setting)
    return modes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--database-url", help="default: a SQLite file under var/")
    parser.add_argument("--keep", action="store_true", help="reuse a database seeded with the same size")
    parser.add_argument(
        "--embedder", default="local", help="EMBEDDER for the hybrid column (off: lexical only)"
    )
    args = parser.parse_args(argv)
    url = args.database_url or f"sqlite:///{ROOT / 'var' / f'quality-{args.items}.sqlite3'}"
    _django(url)
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", "--noinput", verbosity=0)
    corpus = generate(args.items, questions=args.questions)
    if not (args.keep and _seeded(corpus)):
        log(f"importing {args.items:,} items ...")
        rate = seed(corpus, ROOT / "var" / "bench-data")
        log(f"  {rate:,.0f} items/s")
    scope, project = _scope_and_project()
    modes = _modes(args.embedder)
    if "hybrid" in modes:
        modes["hybrid"]()
        _embed_all()
    columns: dict[str, dict[str, float]] = {}
    for mode, prepare in modes.items():
        prepare()
        started = time.perf_counter()
        columns[mode] = measure(corpus, scope, project)
        log(f"  {mode}: {time.perf_counter() - started:.1f}s")
    print(f"\nRetrieval quality: {args.items:,} items, {len(corpus.asked)} questions, {connection.vendor}\n")
    names = list(columns)
    print(f"| {'metric':<44} | " + " | ".join(f"{n:>8}" for n in names) + " |")
    print(f"|{'-' * 46}|" + "|".join("-" * 10 for _ in names) + "|")
    for metric in next(iter(columns.values())):
        print(f"| {metric:<44} | " + " | ".join(f"{columns[n][metric]:>8.3f}" for n in names) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
