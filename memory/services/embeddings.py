"""Writing embeddings: the vectors of current items that have none under the configured model.

Run off the request path: by the consolidator after each cycle (a bounded batch, so a large
import is embedded over the following cycles), and by `manage.py embed_backfill` (all of it,
with a progress bar). Vectors are derived data: writing them twice is harmless (one per item
version and model), and once every current item has a vector under the configured model, the
vectors of other models are deleted (`embeddings_prune`), so a model change re-embeds in the
background while the old vectors keep nothing mixed: the index reads one model's vectors only.
Where PostgreSQL has pgvector, each vector's copy there is written with it
(memory.embeddings.pgvector); deleting a vector's row deletes its copy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet

from memory.embeddings import Embedder, embedder, pgvector
from memory.models import Embedding, Fact

BATCH = 64


@dataclass
class EmbeddingReport:
    embedded: int = 0
    # The highest item id looked at: items up to it have a vector (or are not current).
    upto: int = 0
    # Whether no item past `upto` is left to embed.
    complete: bool = False


def _missing(model: str, project_id: int | None) -> QuerySet[Fact]:
    has_vector = Embedding.objects.filter(fact=OuterRef("pk"), model=model)
    items = Fact.objects.current().filter(~Exists(has_vector))
    return items.filter(project_id=project_id) if project_id is not None else items


def embeddings_missing(*, project_id: int | None = None) -> int:
    """How many current items have no vector under the configured model."""
    model = embedder()
    return _missing(model.name, project_id).count() if model else 0


def embeddings_refresh(
    *,
    project_id: int | None = None,
    after: int = 0,
    limit: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> EmbeddingReport:
    """Embed up to `limit` current items past id `after` that have no vector (all by default).

    Items are append-only (a new version is a new row), so a caller that keeps `upto` and passes
    it back as `after` looks at each item once: the consolidator does, every cycle.
    """
    model = embedder()
    report = EmbeddingReport(upto=after)
    if model is None:
        report.complete = True
        return report
    while limit is None or report.embedded < limit:
        size = BATCH if limit is None else min(BATCH, limit - report.embedded)
        batch = list(
            _missing(model.name, project_id)
            .filter(id__gt=report.upto)
            .order_by("id")
            .values_list("id", "project_id", "kind", "data_class", "text")[:size]
        )
        if not batch:
            newest = Fact.objects.order_by("-id").values_list("id", flat=True).first()
            report.upto = max(report.upto, newest or 0)
            report.complete = True
            break
        _store(model, batch)
        report.embedded += len(batch)
        report.upto = batch[-1][0]
        if progress:
            progress(report.embedded)
    return report


@transaction.atomic
def _store(model: Embedder, batch: list[tuple[int, int, str, str, str]]) -> None:
    vectors = model.embed([row[4] for row in batch])
    stored = [np.asarray(vector, dtype="<f2").tobytes() for vector in vectors]
    Embedding.objects.bulk_create(
        [
            Embedding(
                fact_id=fact_id,
                project_id=project,
                model=model.name,
                kind=kind,
                data_class=data_class,
                vector=vector,
            )
            for (fact_id, project, kind, data_class, _), vector in zip(batch, stored, strict=True)
        ],
        ignore_conflicts=True,
    )
    # In the same transaction: a vector and its pgvector copy are never seen apart.
    pgvector.store_copies(
        model=model.name, rows=[(row[0], vector) for row, vector in zip(batch, stored, strict=True)]
    )


def embeddings_prune() -> int:
    """Delete the vectors of every model but the configured one; call once it covers every item."""
    model = embedder()
    if model is None:
        return 0
    deleted, _ = Embedding.objects.exclude(model=model.name).delete()
    return deleted
