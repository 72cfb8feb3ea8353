from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memory.services import workspace_erase
from workspaces.management.base import service_call, workspace_or_fail


class Command(BaseCommand):
    help = "Delete a workspace and all it holds. Irreversible: --confirm must repeat the workspace's slug."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("workspace")
        parser.add_argument("--confirm", required=True, help="The workspace's slug again.")

    def handle(self, *args: Any, **options: Any) -> None:
        workspace = workspace_or_fail(options["workspace"])
        counts = service_call(workspace_erase, workspace=workspace, confirm=options["confirm"])
        summary = ", ".join(f"{n} {label.split('.')[-1]}" for label, n in sorted(counts.items()) if n)
        self.stdout.write(f"Deleted workspace {options['workspace']}: {summary}.")
