from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from memory.demo import DEMO_ITEMS, DEMO_PROJECTS
from memory.models import Fact
from memory.services import fact_create
from workspaces.models import Connection, DataClass, Project, Workspace
from workspaces.selectors import connection_for_token
from workspaces.services import membership_add, project_create, token_issue, workspace_create
from workspaces.snippets import ENV_VAR, client_snippets

DEMO_WORKSPACE = "demo"
DEMO_USER = "owner"


class Command(BaseCommand):
    help = "Create (idempotently) a demo owner, workspace, projects, memory and token; print how to connect."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print a JSON object for scripts.")
        parser.add_argument(
            "--state-file",
            type=Path,
            default=Path(settings.BASE_DIR) / "var" / "demo-credentials.json",
            help="Where the demo password and token are kept between runs (mode 0600).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        state_file: Path = options["state_file"]
        state = json.loads(state_file.read_text()) if state_file.exists() else {}
        with transaction.atomic():
            password = self._owner(state)
            workspace = self._workspace()
            token = self._token(workspace, state)
        state.update({"password": password, "token": token})
        state_file.parent.mkdir(parents=True, exist_ok=True)
        state_file.write_text(json.dumps(state))
        state_file.chmod(0o600)

        mcp_url = settings.MCP_RESOURCE_URL
        info = {
            "url": settings.PUBLIC_URL,
            "mcp_url": mcp_url,
            "console_url": f"{settings.PUBLIC_URL}/console/",
            "username": DEMO_USER,
            "password": password,
            "workspace": workspace.slug,
            "token": token,
            "snippets": {s.client: s.text for s in client_snippets(mcp_url)},
        }
        if options["json"]:
            self.stdout.write(json.dumps(info, indent=2))
            return
        self.stdout.write(self.style.SUCCESS("Unforgetter demo is ready."))
        self.stdout.write(f"  Console:   {info['console_url']}  (login {DEMO_USER} / {password})")
        self.stdout.write(f"  MCP URL:   {mcp_url}")
        self.stdout.write(f"  Token:     {token}")
        self.stdout.write(f"\n  export {ENV_VAR}={token}\n")
        for snippet in client_snippets(mcp_url):
            self.stdout.write(f"  # {snippet.client} ({snippet.where})")
            for line in snippet.text.splitlines():
                self.stdout.write(f"    {line}")
            self.stdout.write("")

    def _owner(self, state: dict[str, Any]) -> str:
        user_model = get_user_model()
        user = user_model.objects.filter(username=DEMO_USER).first()
        password = state.get("password") or secrets.token_urlsafe(12)
        if user is None:
            user = user_model.objects.create_superuser(DEMO_USER, "owner@example.com", password)
        elif not user.check_password(password):
            user.set_password(password)
            user.save(update_fields=["password"])
        return password

    def _workspace(self) -> Workspace:
        workspace = Workspace.objects.filter(slug=DEMO_WORKSPACE).first()
        owner = get_user_model().objects.get(username=DEMO_USER)
        if workspace is None:
            workspace = workspace_create(slug=DEMO_WORKSPACE, name="Acme platform team", owner=owner)
        membership_add(workspace=workspace, user=owner)
        projects = {p.slug: p for p in Project.objects.filter(workspace=workspace)}
        for slug, name, data_class, description in DEMO_PROJECTS:
            if slug not in projects:
                projects[slug] = project_create(
                    workspace=workspace, slug=slug, name=name, data_class=data_class, description=description
                )
        if not Fact.objects.filter(workspace=workspace).exists():
            for project_slug, kind, text, source, actor, item_class in DEMO_ITEMS:
                fact_create(
                    project=projects[project_slug],
                    kind=kind,
                    text=text,
                    source=source,
                    actor=actor,
                    data_class=item_class,
                )
        return workspace

    def _token(self, workspace: Workspace, state: dict[str, Any]) -> str:
        existing = state.get("token")
        if existing:
            connection = connection_for_token(existing)
            if connection is not None and connection.workspace_id == workspace.pk:
                return str(existing)
        issued = token_issue(
            workspace=workspace,
            actor="demo-agent",
            zone="claude",
            role=Connection.Role.CONTRIBUTOR,
            data_classes=[DataClass.PUBLIC, DataClass.INTERNAL],
            label="bootstrap_demo",
        )
        return issued.token
