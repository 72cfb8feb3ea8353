from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from memory.embeddings import local_model, minilm


class Command(BaseCommand):
    help = (
        "Build the local embedder's int8 model file (MODELS_DIR) now, if it is missing, so that no "
        "server or worker process builds it on its first text (a few seconds, a few hundred MB at "
        "peak). Does nothing when EMBEDDER is not 'local' or the model's package is not installed."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        weights = local_model.model_zip()
        if settings.UNFORGETTER["EMBEDDER"] != "local" or weights is None:
            self.stdout.write("No local embedder to prepare.")
            return
        started = time.monotonic()
        path = minilm.built_model(weights, settings.UNFORGETTER["MODELS_DIR"])
        self.stdout.write(f"{local_model.NAME}: {path} ({time.monotonic() - started:.1f}s)")
