from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from workspaces.management.base import service_call
from workspaces.services import connection_for_operator, connection_revoke


class Command(BaseCommand):
    help = "Revoke a credential by its token or its connection id. Effective on the next call."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("token_or_id")

    def handle(self, *args: Any, **options: Any) -> None:
        connection = service_call(connection_for_operator, token_or_id=options["token_or_id"])
        connection = service_call(connection_revoke, connection=connection)
        self.stdout.write(
            f"Revoked connection {connection.pk} ({connection.actor}) "
            f"at {connection.revoked_at:%Y-%m-%d %H:%M:%S}Z."
        )
