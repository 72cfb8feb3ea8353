from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memory.services import workspace_erase
from workspaces.management.base import service_call, workspace_or_fail
from workspaces.receipts import receipt_lines


class Command(BaseCommand):
    help = (
        "Delete a workspace and all it holds, and print the deletion receipt. Irreversible: --confirm "
        "must repeat the workspace's slug. The server's exports of it are purged after the retention window."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("workspace")
        parser.add_argument("--confirm", required=True, help="The workspace's slug again.")

    def handle(self, *args: Any, **options: Any) -> None:
        workspace = workspace_or_fail(options["workspace"])
        receipt = service_call(workspace_erase, workspace=workspace, confirm=options["confirm"])
        self.stdout.write("\n".join(receipt_lines(receipt)))
