from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.exports import workspace_export
from memory.models import Fact
from workspaces.management.base import workspace_or_fail
from workspaces.management.progress import ProgressBar


class Command(BaseCommand):
    help = "Export a workspace as readable Markdown plus a provenance manifest (a directory, or a .zip)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("workspace")
        parser.add_argument("output", type=Path, help="A directory to create, or a path ending in .zip")

    def handle(self, *args: Any, **options: Any) -> None:
        workspace = workspace_or_fail(options["workspace"])
        output: Path = options["output"]
        if output.suffix != ".zip" and output.exists() and any(output.iterdir()):
            raise CommandError(f"{output} exists and is not empty; choose a new directory or a .zip path.")
        bar = ProgressBar("exporting", total=Fact.objects.filter(workspace=workspace).count())
        try:
            written = workspace_export(workspace=workspace, output=output, progress=bar.update)
        finally:
            bar.close()
        self.stdout.write(f"Exported {workspace.slug} to {written}.")
