from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.ledger import ledger_verify
from workspaces.management.base import workspace_or_fail


class Command(BaseCommand):
    help = (
        "Recompute a workspace's proposal ledger (the HMAC chain) and name the first proposal "
        "that was edited, deleted or reordered. Exits 1 if the ledger is broken."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("workspace", help="The workspace slug.")

    def handle(self, *args: Any, **options: Any) -> None:
        report = ledger_verify(workspace=workspace_or_fail(options["workspace"]))
        if not report.ok:
            raise CommandError(report.describe(), returncode=1)
        self.stdout.write(report.describe())
