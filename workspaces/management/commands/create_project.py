from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from workspaces.management.base import service_call, workspace_or_fail
from workspaces.models import DataClass
from workspaces.services import project_create


class Command(BaseCommand):
    help = "Create a project in a workspace."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("workspace")
        parser.add_argument("slug")
        parser.add_argument("--name", default="")
        parser.add_argument("--data-class", default=DataClass.INTERNAL, choices=DataClass.values)

    def handle(self, *args: Any, **options: Any) -> None:
        workspace = workspace_or_fail(options["workspace"])
        project = service_call(
            project_create,
            workspace=workspace,
            slug=options["slug"],
            name=options["name"],
            data_class=options["data_class"],
        )
        self.stdout.write(f"Created project {project.slug} ({project.data_class}) in {workspace.slug}.")
