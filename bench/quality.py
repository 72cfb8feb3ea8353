"""Retrieval-quality benchmark: recall of search_memory and the share of tasks whose bundle holds
the answer, on a generated engineering memory with known answers (`bench/corpus.py`).

    python bench/quality.py --items 10000                    # SQLite file under var/
    python bench/quality.py --items 100000 --database-url postgres://root@127.0.0.1:5432/h9
    python bench/quality.py --public realtalk --public-path /work/data/realtalk
    python bench/quality.py --public madial-bench --public-path /work/data/madial-bench

It imports the corpus with `import_memory` into a fresh database (or reuses one with `--keep`),
issues a reader token, then asks every question through the selectors the MCP tools call (the
same scoping, ranking and cursors; no HTTP, since quality and not speed is measured here).
Relevance is known exactly: each asked item is the one answer to its phrasings.

Rows: for each phrasing (keyword, natural-language question, paraphrase in other words),
search_memory's recall@1/5/10/20 (k=20 reads the second page through its cursor); for task
phrasings, the share of get_context bundles holding the item. Each figure is printed for the
lexical ranking alone and for the hybrid one, side by side.

With `--public NAME --public-path PATH` the memory and questions are a public benchmark's instead
(`bench/public.py`, read from PATH, never downloaded). Its questions may have several relevant
items, so recall@k is the share of them in the first k results, averaged over questions, and the
bundle row is the share of them inside the question's get_context bundle.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import public  # noqa: E402
import reuse_vectors  # noqa: E402
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


def _seeded(project: str, expected: dict[str, str], count: int) -> bool:
    """Whether the project holds `count` items, among them these sources with these texts."""
    from memory.models import Fact

    items = Fact.objects.filter(project__slug=project, workspace__slug=WORKSPACE)
    if items.count() != count:
        return False
    stored = dict(items.filter(source__in=list(expected)).values_list("source", "text"))
    return stored == expected


def _corpus_seeded(corpus: Corpus) -> bool:
    asked = {f"corpus/{i}": corpus.items[i].text for i in corpus.asked}
    return _seeded(PROJECT, asked, len(corpus.items))


def seed(project: str, write: Callable[[Path], None], count: int, path: Path) -> float:
    """Import the items `write` puts at `path` into a fresh project; the import's items per second."""
    from django.core.management import call_command

    from workspaces.models import Connection, Workspace

    # A connection's zone is protected: the bench's own reader connections go first.
    Connection.objects.filter(zone__workspace__slug=WORKSPACE).delete()
    Workspace.objects.filter(slug=WORKSPACE).delete()
    call_command("create_workspace", WORKSPACE, stdout=io.StringIO())
    call_command("create_project", WORKSPACE, project, "--data-class", "internal", stdout=io.StringIO())
    path.parent.mkdir(parents=True, exist_ok=True)
    write(path)
    started = time.perf_counter()
    call_command("import_memory", WORKSPACE, project, str(path), stdout=io.StringIO())
    return count / (time.perf_counter() - started)


def _scope_and_project(project: str) -> tuple[Any, Any]:
    from django.core.management import call_command

    from workspaces.selectors import connection_for_bearer, project_for_agent

    out = io.StringIO()
    call_command("issue_token", WORKSPACE, "--actor", "bench@quality", "--zone", "claude", stdout=out)
    found = connection_for_bearer(out.getvalue().strip())
    assert found is not None
    scope = found.scope()
    return scope, project_for_agent(scope, project)


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


def measure_public(dataset: public.PublicSet, scope: Any, project: Any) -> dict[str, float]:
    """Mean share of each question's relevant items in the first k results, and in its bundle."""
    found_share = dict.fromkeys(KS, 0.0)
    held_share = 0.0
    for question in dataset.questions:
        found = _search_sources(scope, project, question.query)
        for k in KS:
            found_share[k] += len(question.relevant.intersection(found[:k])) / len(question.relevant)
        held = _bundle_sources(scope, project, question.task)
        held_share += len(question.relevant.intersection(held)) / len(question.relevant)
    asked = len(dataset.questions)
    figures = {f"search {dataset.asked_as} recall@{k}": found_share[k] / asked for k in KS}
    figures[f"get_context {dataset.asked_as}: relevant share in bundle"] = held_share / asked
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
    parser.add_argument("--keep", action="store_true", help="reuse a database seeded with the same items")
    parser.add_argument(
        "--embedder", default="local", help="EMBEDDER for the hybrid column (off: lexical only)"
    )
    parser.add_argument(
        "--vectors-from",
        metavar="DATABASE_URL",
        help="copy the vectors of identical items from this database seeded earlier (bench/reuse_vectors.py)",
    )
    parser.add_argument(
        "--public", choices=sorted(public.LOADERS), help="measure this public benchmark instead"
    )
    parser.add_argument("--public-path", type=Path, help="the public benchmark's data folder")
    args = parser.parse_args(argv)
    if bool(args.public) != bool(args.public_path):
        parser.error("--public and --public-path go together")
    dataset = None
    if args.public:
        try:
            dataset = public.load(args.public, args.public_path)
        except public.DatasetError as error:
            parser.error(str(error))
    name = args.public or str(args.items)
    url = args.database_url or f"sqlite:///{ROOT / 'var' / f'quality-{name}.sqlite3'}"
    _django(url)
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", "--noinput", verbosity=0)
    data_dir = ROOT / "var" / "bench-data"
    if dataset is not None:
        project_slug = dataset.name
        expected = {item.source: item.text for item in dataset.items}
        if not (args.keep and _seeded(project_slug, expected, len(dataset.items))):
            log(f"importing {len(dataset.items):,} items of {dataset.name} ...")
            path = data_dir / f"quality-{dataset.name}.jsonl"
            rate = seed(project_slug, partial(public.write_jsonl, dataset), len(dataset.items), path)
            log(f"  {rate:,.0f} items/s")
        heading = (
            f"{dataset.name}: {len(dataset.items):,} items, {len(dataset.questions)} questions "
            f"(best possible recall@1 {public.recall_ceiling(dataset, 1):.3f}, @5 "
            f"{public.recall_ceiling(dataset, 5):.3f})"
        )
    else:
        corpus = generate(args.items, questions=args.questions)
        project_slug = PROJECT
        if not (args.keep and _corpus_seeded(corpus)):
            log(f"importing {args.items:,} items ...")
            path = data_dir / f"quality-{len(corpus.items)}.jsonl"
            rate = seed(PROJECT, partial(write_jsonl, corpus), len(corpus.items), path)
            log(f"  {rate:,.0f} items/s")
        heading = f"{args.items:,} items, {len(corpus.asked)} questions"
    scope, project = _scope_and_project(project_slug)
    modes = _modes(args.embedder)
    if "hybrid" in modes:
        modes["hybrid"]()
        if args.vectors_from:
            log(f"copied {reuse_vectors.copy_vectors(args.vectors_from, project_slug):,} vectors")
        _embed_all()
    columns: dict[str, dict[str, float]] = {}
    for mode, prepare in modes.items():
        prepare()
        started = time.perf_counter()
        if dataset is not None:
            columns[mode] = measure_public(dataset, scope, project)
        else:
            columns[mode] = measure(corpus, scope, project)
        log(f"  {mode}: {time.perf_counter() - started:.1f}s")
    print(f"\nRetrieval quality: {heading}, {connection.vendor}\n")
    names = list(columns)
    width = max(44, *(len(metric) for metric in next(iter(columns.values()))))
    print(f"| {'metric':<{width}} | " + " | ".join(f"{n:>8}" for n in names) + " |")
    print(f"|{'-' * (width + 2)}|" + "|".join("-" * 10 for _ in names) + "|")
    for metric in next(iter(columns.values())):
        print(f"| {metric:<{width}} | " + " | ".join(f"{columns[n][metric]:>8.3f}" for n in names) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
