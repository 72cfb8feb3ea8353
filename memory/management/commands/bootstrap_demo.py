from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from memory.services.demo import demo_bootstrap
from workspaces.snippets import ENV_VAR, client_snippets


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
        access = demo_bootstrap(password=state.get("password"), token=state.get("token"))
        state.update({"password": access.password, "token": access.token})
        state_file.parent.mkdir(parents=True, exist_ok=True)
        state_file.write_text(json.dumps(state))
        state_file.chmod(0o600)

        mcp_url = settings.MCP_RESOURCE_URL
        info = {
            "url": settings.PUBLIC_URL,
            "mcp_url": mcp_url,
            "console_url": f"{settings.PUBLIC_URL}/console/",
            "username": access.username,
            "password": access.password,
            "workspace": access.workspace.slug,
            "token": access.token,
            "snippets": {s.client: s.text for s in client_snippets(mcp_url)},
        }
        if options["json"]:
            self.stdout.write(json.dumps(info, indent=2))
            return
        self.stdout.write(self.style.SUCCESS("Unforgetter demo is ready."))
        self.stdout.write(
            f"  Console:   {info['console_url']}  (login {access.username} / {access.password})"
        )
        self.stdout.write(f"  MCP URL:   {mcp_url}")
        self.stdout.write(f"  Token:     {access.token}")
        self.stdout.write(f"\n  export {ENV_VAR}={access.token}\n")
        for snippet in client_snippets(mcp_url):
            self.stdout.write(f"  # {snippet.client} ({snippet.where})")
            for line in snippet.text.splitlines():
                self.stdout.write(f"    {line}")
            self.stdout.write("")
