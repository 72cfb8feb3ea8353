from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.embeddings import embedder
from memory.models import Embedding
from memory.services.embeddings import embeddings_missing, embeddings_prune, embeddings_refresh
from memory.statistics import statistics_refresh
from workspaces.management.progress import ProgressBar


class Command(BaseCommand):
    help = (
        "Embed every current item that has no vector under the configured model (EMBEDDER), "
        "then delete other models' vectors. Safe to stop and run again, and beside the worker."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--limit",
            type=int,
            help="embed at most this many items now (the oldest first); run again for the rest",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        model = embedder()
        if model is None:
            raise CommandError("No embedder is configured (EMBEDDER=off, or its model is not installed).")
        limit = options["limit"]
        if limit is not None and limit < 1:
            raise CommandError("--limit must be a positive number of items.")
        started = time.monotonic()
        missing = embeddings_missing()
        bar = ProgressBar("embedding", total=min(missing, limit) if limit else missing)
        try:
            report = embeddings_refresh(limit=limit, progress=bar.update)
        finally:
            bar.close()
        pruned = embeddings_prune() if report.complete else 0
        # The vectors' table has grown by up to every item: the next searches (pgvector's plan
        # above all) are planned for it now, not when autovacuum gets round to it.
        statistics_refresh(Embedding._meta.db_table)
        self.stdout.write(
            f"Embedded {report.embedded} items with {model.name} in {time.monotonic() - started:.1f}s; "
            f"deleted {pruned} vectors of other models."
        )
