from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from workspaces.durations import parse_duration
from workspaces.oauth import oauth_clients_prune


class Command(BaseCommand):
    help = (
        "Delete self-registered OAuth clients (dynamic registration or client metadata documents) "
        "that nobody ever approved, registered longer ago than --older-than (default: the "
        "OAUTH_CLIENT_PRUNE_AFTER setting)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--older-than", help="e.g. 7d, 12h; default OAUTH_CLIENT_PRUNE_AFTER")

    def handle(self, *args: Any, **options: Any) -> None:
        older_than = None
        if options["older_than"]:
            try:
                older_than = parse_duration(options["older_than"])
            except ValueError as error:
                raise CommandError(str(error)) from error
        deleted = oauth_clients_prune(older_than=older_than)
        self.stdout.write(f"Pruned {deleted} unused OAuth client registration(s).")
