from __future__ import annotations

import sys
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.embeddings import embedder
from memory.services.embeddings import embeddings_missing, embeddings_prune, embeddings_refresh

BAR_WIDTH = 30


class Command(BaseCommand):
    help = (
        "Embed every current item that has no vector under the configured model (EMBEDDER), "
        "then delete other models' vectors. Safe to stop and run again, and beside the worker."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        model = embedder()
        if model is None:
            raise CommandError("No embedder is configured (EMBEDDER=off, or its model is not installed).")
        total = embeddings_missing()
        started = time.monotonic()

        def progress(done: int) -> None:
            share = done / max(total, 1)
            rate = done / max(time.monotonic() - started, 1e-6)
            filled = "#" * int(share * BAR_WIDTH)
            sys.stderr.write(f"\r  [{filled:<{BAR_WIDTH}}] {done:>9,}/{total:,}  {rate:,.0f} items/s")
            sys.stderr.flush()

        report = embeddings_refresh(progress=progress)
        if report.embedded:
            sys.stderr.write("\n")
        pruned = embeddings_prune() if report.complete else 0
        self.stdout.write(
            f"Embedded {report.embedded} items with {model.name} in {time.monotonic() - started:.1f}s; "
            f"deleted {pruned} vectors of other models."
        )
