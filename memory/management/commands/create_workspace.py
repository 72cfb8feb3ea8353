from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.services import workspace_open
from workspaces.management.base import service_call


class Command(BaseCommand):
    help = "Create a workspace with the default trust zones, optionally owned by an existing user."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", default="")
        parser.add_argument("--owner", help="Username of an existing user to make owner.")

    def handle(self, *args: Any, **options: Any) -> None:
        owner = None
        if options["owner"]:
            owner = get_user_model().objects.filter(username=options["owner"]).first()
            if owner is None:
                raise CommandError(
                    f"No user {options['owner']!r}. Create one with: manage.py createsuperuser"
                )
        workspace = service_call(workspace_open, slug=options["slug"], name=options["name"], owner=owner)
        self.stdout.write(f"Created workspace {workspace.slug}.")
