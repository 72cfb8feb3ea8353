from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from memory.embeddings import pgvector
from workspaces.management.progress import ProgressBar


class Command(BaseCommand):
    help = (
        "Where PostgreSQL has the pgvector extension (0.8 or later): create it in this database if "
        "needed, copy every stored vector into it, build each model's HNSW index and switch reads to "
        "it. For a database that held vectors before the extension was installed; safe to run again "
        "and beside the worker. Restart the server afterwards: each process checks once."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        if connection.vendor != "postgresql":
            raise CommandError("pgvector is for PostgreSQL; on SQLite the in-process index serves.")
        found = pgvector.install(connection)
        if not found.usable:
            raise CommandError(_why_not(found))
        started = time.monotonic()
        bar = ProgressBar("copying vectors", total=pgvector.missing_copies())
        try:
            copied = pgvector.sync(progress=bar.update)
        finally:
            bar.close()
        self.stdout.write(
            f"Copied {copied} vectors into pgvector and indexed them in {time.monotonic() - started:.1f}s; "
            "searches use pgvector from each process's next start."
        )


def _why_not(found: pgvector.State) -> str:
    if found.version is not None:
        version = ".".join(map(str, found.version))
        return f"pgvector {version} is installed; 0.8 or later is needed (ALTER EXTENSION vector UPDATE)."
    if found.available:
        return "pgvector is on the server but this role may not CREATE EXTENSION vector: ask a superuser."
    return "pgvector is not installed on this PostgreSQL server (see the README, Semantic search)."
