from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.imports import memory_import
from workspaces.management.base import project_or_fail, service_call, workspace_or_fail


class Command(BaseCommand):
    help = "Bulk-import memory items into a project from JSONL or CLAUDE.md/AGENTS.md-style Markdown."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("workspace")
        parser.add_argument("project")
        parser.add_argument("path", type=Path)
        parser.add_argument(
            "--format", choices=["jsonl", "markdown"], help="Default: from the file extension"
        )
        parser.add_argument("--actor", default="import", help="Actor recorded on items that name none")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["path"]
        if not path.is_file():
            raise CommandError(f"No file at {path}.")
        fmt = options["format"] or ("markdown" if path.suffix.lower() in (".md", ".markdown") else "jsonl")
        workspace = workspace_or_fail(options["workspace"])
        project = project_or_fail(workspace, options["project"])
        interactive = sys.stderr.isatty()
        started = time.monotonic()

        def progress(done: int) -> None:
            if interactive:
                rate = done / max(time.monotonic() - started, 1e-6)
                sys.stderr.write(f"\r  imported {done:>10,} items  ({rate:,.0f}/s)")
                sys.stderr.flush()

        report = service_call(
            memory_import, project=project, path=path, fmt=fmt, actor=options["actor"], progress=progress
        )
        if interactive:
            sys.stderr.write("\n")
        elapsed = time.monotonic() - started
        self.stdout.write(
            f"Imported {report.imported} items into {workspace.slug}/{project.slug} "
            f"in {elapsed:.2f}s ({report.imported / max(elapsed, 1e-6):,.0f} items/s)."
        )
