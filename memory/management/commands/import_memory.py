from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.core.checks import Tags
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.imports import memory_import
from memory.readers import FORMATS, detect_format
from workspaces.checks import CONFIG
from workspaces.management.base import project_or_fail, service_call, workspace_or_fail
from workspaces.management.progress import ProgressBar


def _lines(path: Path) -> int | None:
    """How many items a line-per-item file holds at most: the bar's total (None for other shapes)."""
    if not path.is_file() or path.suffix.lower() not in (".jsonl", ".ndjson"):
        return None
    with path.open("rb") as stream:
        return sum(1 for line in stream if line.strip())


# Objects an import may allocate between two collections of the youngest generation (CPython:
# 700). An import allocates several per item (its JSON object, the item, its row, its keys) and
# frees nearly all of them by reference counting, so the collections find little; the cycles an
# import makes (few) wait a little longer to be freed.
_IMPORT_GC_THRESHOLD = 50_000


@contextmanager
def _fewer_collections() -> Iterator[None]:
    """Collect garbage less often while an import runs, and not among what was there before it.

    Process-wide settings, so the command's and not memory_import's: a serving process keeps
    its own (unforgetter.collector).

    The process's earlier objects (Django, its apps and models: a few hundred thousand) are set
    aside (`gc.freeze`) rather than scanned again by each full collection. Measured on the
    benchmark's 100,000 items: about half a second of the import's 7 s of CPU.
    """
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(threshold[0], _IMPORT_GC_THRESHOLD), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


class Command(BaseCommand):
    help = (
        "Import memory into a project: Unforgetter JSONL or export, CLAUDE.md/AGENTS.md, the MCP memory "
        "server's knowledge graph, a basic-memory folder, or a mem0/OpenMemory export. Re-importing "
        "changes nothing; items with the same id supersede."
    )
    # The checks of what an import touches: models, the database and Unforgetter's configuration.
    # Not the URL and template checks, which load every view and template engine of the site: a
    # second or more of a large import's time, spent on nothing it uses.
    requires_system_checks = [Tags.models, Tags.database, CONFIG]

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("workspace")
        parser.add_argument("project")
        parser.add_argument("path", type=Path, help="A file, a folder (basic-memory, an export) or a .zip")
        parser.add_argument("--format", choices=FORMATS, help="Default: from the file's shape and extension")
        parser.add_argument("--actor", default="import", help="Actor recorded on items that name none")
        parser.add_argument(
            "--source-project", help="Which project of an Unforgetter export to read (default: the same slug)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["path"]
        if not path.exists():
            raise CommandError(f"No file or folder at {path}.")
        fmt = options["format"] or detect_format(path)
        workspace = workspace_or_fail(options["workspace"])
        project = project_or_fail(workspace, options["project"])
        started = time.monotonic()
        bar = ProgressBar("importing")
        if bar.enabled:  # counting the lines is a pass over the file: only for a bar that is drawn
            bar.total = _lines(path)
        with _fewer_collections():
            try:
                report = service_call(
                    memory_import,
                    project=project,
                    path=path,
                    fmt=fmt,
                    actor=options["actor"],
                    source_project=options["source_project"],
                    progress=bar.update,
                    # This process owns its threads: its batches are checked on another core.
                    forked=True,
                )
            finally:
                bar.close()
        elapsed = time.monotonic() - started
        self.stdout.write(
            f"Imported {report.imported} items into {workspace.slug}/{project.slug} "
            f"(unchanged {report.unchanged}, updated {report.updated}"
            + (f", {report.redacted} with secrets redacted" if report.redacted else "")
            + f"; {fmt}) "
            f"in {elapsed:.2f}s ({report.total / max(elapsed, 1e-6):,.0f} items/s)."
        )
