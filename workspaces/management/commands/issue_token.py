from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from workspaces.durations import parse_duration
from workspaces.management.base import service_call, workspace_or_fail
from workspaces.models import Connection
from workspaces.services import token_issue


def _csv(value: str | None) -> list[str] | None:
    return None if value is None else [part.strip() for part in value.split(",") if part.strip()]


class Command(BaseCommand):
    help = "Issue a personal bearer token for an agent. Prints the token alone; it is shown only once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("workspace")
        parser.add_argument("--actor", required=True, help="Who acts with it, e.g. claude-code@alice")
        parser.add_argument("--zone", required=True, help="Trust zone name, e.g. claude, codex, grok-bot")
        parser.add_argument("--role", default=Connection.Role.READER, choices=Connection.Role.values)
        parser.add_argument("--projects", help="Comma-separated project ids (default: all allowed projects)")
        parser.add_argument("--data-classes", default="public,internal", help="Comma-separated data classes")
        parser.add_argument(
            "--ttl", help="Lifetime such as 90s, 15m, 12h, 30d (default 90d, capped by the zone)"
        )
        parser.add_argument("--label", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        workspace = workspace_or_fail(options["workspace"])
        try:
            ttl = parse_duration(options["ttl"]) if options["ttl"] else None
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        issued = service_call(
            token_issue,
            workspace=workspace,
            actor=options["actor"],
            zone=options["zone"],
            role=options["role"],
            projects=_csv(options["projects"]),
            data_classes=_csv(options["data_classes"]) or [],
            ttl=ttl,
            label=options["label"],
        )
        self.stdout.write(issued.token)
