"""Reuse the vectors another database computed for the same items: `quality.py --vectors-from URL`.

Embedding 100,000 items with the local model takes a quarter of an hour on 2 cores; measuring
the same corpus on the other database need not pay it twice. A vector is a function of the item's
text and the model alone, so it is copied only where the other database holds an item with the
same source and the very same text, under the model configured here; whatever is left without a
vector is then embedded as usual (`quality._embed_all`). Only the benchmark does this.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import environ

_ROWS = """
    SELECT f.source, f.text, e.vector FROM memory_embedding AS e
    JOIN memory_fact AS f ON f.id = e.fact_id
    JOIN workspaces_project AS p ON p.id = e.project_id
    WHERE e.model = {mark} AND p.slug = {mark} ORDER BY e.id
"""
BATCH = 2_000


def _other_rows(url: str, model: str, project: str) -> Iterator[tuple[str, str, bytes]]:
    config = environ.Env.db_url_config(url)
    if "sqlite" in config["ENGINE"]:
        with sqlite3.connect(config["NAME"]) as lite:
            yield from lite.execute(_ROWS.format(mark="?"), [model, project])
        return
    import psycopg

    with (
        psycopg.connect(
            dbname=config["NAME"],
            user=config.get("USER") or None,
            password=config.get("PASSWORD") or None,
            host=config.get("HOST") or None,
            port=config.get("PORT") or None,
        ) as db,
        db.cursor(name="vectors") as cursor,
    ):
        cursor.execute(_ROWS.format(mark="%s"), [model, project])
        for source, text, vector in cursor:
            yield source, text, bytes(vector)


def copy_vectors(url: str, project_slug: str) -> int:
    """Copy the other database's vectors of this project's items with identical texts; how many."""
    from django.db import transaction

    from memory.embeddings import embedder, pgvector
    from memory.models import Embedding, Fact

    model = embedder()
    if model is None:
        return 0
    here = {
        source: (fact_id, project_id, kind, data_class, text)
        for fact_id, project_id, kind, data_class, text, source in Fact.objects.current()
        .filter(project__slug=project_slug)
        .exclude(embeddings__model=model.name)
        .values_list("id", "project_id", "kind", "data_class", "text", "source")
    }
    copied = 0
    batch: list[tuple[Any, bytes]] = []

    def flush() -> None:
        with transaction.atomic():  # a vector and its pgvector copy are never seen apart
            _write()
        batch.clear()

    def _write() -> None:
        Embedding.objects.bulk_create(
            [
                Embedding(
                    fact_id=row[0],
                    project_id=row[1],
                    model=model.name,
                    kind=row[2],
                    data_class=row[3],
                    vector=v,
                )
                for row, v in batch
            ],
            ignore_conflicts=True,
        )
        pgvector.store_copies(model=model.name, rows=[(row[0], v) for row, v in batch])

    for source, text, vector in _other_rows(url, model.name, project_slug):
        row = here.get(source)
        if row is None or row[4] != text:
            continue
        batch.append((row, vector))
        copied += 1
        if len(batch) >= BATCH:
            flush()
    if batch:
        flush()
    return copied
