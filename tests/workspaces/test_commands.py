"""The operator's CLI: each command does one thing, prints what scripts rely on, fails with a message."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.models import Fact, Kind
from tests.conftest import Tenant
from workspaces.models import Connection, Project, TrustZone, Workspace
from workspaces.selectors import connection_for_token

pytestmark = pytest.mark.django_db

TOKEN_RE = re.compile(r"^unf_[A-Za-z0-9_-]{43}$")


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_bootstrap_demo_is_idempotent(tmp_path: Path) -> None:
    state = str(tmp_path / "demo.json")
    first = json.loads(run("bootstrap_demo", "--json", "--state-file", state))
    counts = (
        Workspace.objects.count(),
        Project.objects.count(),
        Fact.objects.count(),
        Connection.objects.count(),
    )
    second = json.loads(run("bootstrap_demo", "--json", "--state-file", state))
    assert (
        Workspace.objects.count(),
        Project.objects.count(),
        Fact.objects.count(),
        Connection.objects.count(),
    ) == counts
    assert second["token"] == first["token"]
    assert second["password"] == first["password"]
    assert {"url", "mcp_url", "console_url", "username", "password", "workspace", "token", "snippets"} <= set(
        first
    )
    assert TOKEN_RE.match(first["token"])
    connection = connection_for_token(first["token"])
    assert connection is not None
    assert connection.workspace.slug == first["workspace"]
    assert Fact.objects.filter(workspace=connection.workspace).exists()


def test_bootstrap_demo_prints_how_to_connect(tmp_path: Path) -> None:
    out = run("bootstrap_demo", "--state-file", str(tmp_path / "demo.json"))
    token = json.loads((tmp_path / "demo.json").read_text())["token"]
    assert token in out
    assert "/mcp" in out


def test_bootstrap_demo_replaces_a_revoked_token(tmp_path: Path) -> None:
    state = str(tmp_path / "demo.json")
    first = json.loads(run("bootstrap_demo", "--json", "--state-file", state))
    run("revoke_token", first["token"])
    second = json.loads(run("bootstrap_demo", "--json", "--state-file", state))
    assert second["token"] != first["token"]
    assert connection_for_token(second["token"]) is not None


def test_create_workspace_and_project() -> None:
    assert "acme" in run("create_workspace", "acme", "--name", "Acme")
    workspace = Workspace.objects.get(slug="acme")
    assert workspace.name == "Acme"
    assert set(TrustZone.objects.filter(workspace=workspace).values_list("name", flat=True)) == {
        "claude",
        "chatgpt",
        "codex",
        "cursor",
        "grok-bot",
    }
    run("create_project", "acme", "billing", "--name", "Billing", "--data-class", "confidential")
    project = Project.objects.get(workspace=workspace, slug="billing")
    assert (project.name, project.data_class) == ("Billing", "confidential")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("create_workspace", "acme"), "already exists"),
        (("create_workspace", "new-one", "--owner", "nobody"), "No user 'nobody'"),
        (("create_project", "nowhere", "billing"), "No workspace 'nowhere'"),
        (("create_project", "acme", "handbook"), "already exists"),
        (("issue_token", "nowhere", "--actor", "a", "--zone", "claude"), "No workspace"),
        (("issue_token", "acme", "--actor", "a", "--zone", "nozone"), "No trust zone 'nozone'"),
        (("issue_token", "acme", "--actor", "a", "--zone", "claude", "--ttl", "soon"), "is not a duration"),
        (("issue_token", "acme", "--actor", "a", "--zone", "grok-bot", "--ttl", "30d"), "at most"),
        (
            ("issue_token", "acme", "--actor", "a", "--zone", "claude", "--data-classes", "restricted"),
            "restricted",
        ),
        (
            ("issue_token", "acme", "--actor", "a", "--zone", "claude", "--projects", "nope"),
            "No project 'nope'",
        ),
        (("revoke_token", "unf_" + "A" * 43), "No connection"),
        (("revoke_token", "999999"), "No connection"),
        (("revoke_token", "something-else"), "No connection"),
        (("import_memory", "acme", "nowhere", "/etc/hostname"), "No project 'nowhere'"),
        (("import_memory", "acme", "platform", "/no/such/file.jsonl"), "No file"),
    ],
)
def test_commands_fail_with_a_clear_message(tenant: Tenant, args: tuple[str, ...], message: str) -> None:
    with pytest.raises(CommandError, match=re.escape(message)):
        run(*args)


def test_issue_token_prints_only_the_token(tenant: Tenant) -> None:
    out = run(
        "issue_token",
        "acme",
        "--actor",
        "claude@ana",
        "--zone",
        "claude",
        "--role",
        "contributor",
        "--projects",
        "platform,handbook",
        "--data-classes",
        "public,internal",
        "--ttl",
        "12h",
        "--label",
        "laptop",
    )
    assert out.endswith("\n")
    token = out.strip()
    assert TOKEN_RE.match(token)
    assert out.count("\n") == 1
    connection = connection_for_token(token)
    assert connection is not None
    assert (connection.actor, connection.role, connection.label, connection.all_projects) == (
        "claude@ana",
        "contributor",
        "laptop",
        False,
    )
    assert sorted(connection.projects.values_list("slug", flat=True)) == ["handbook", "platform"]
    assert 11.9 * 3600 < (connection.expires_at - connection.created_at).total_seconds() <= 12 * 3600
    assert connection.token_digest
    assert token not in connection.token_digest


def test_revoke_token_by_token_and_by_id(tenant: Tenant) -> None:
    token, _ = tenant.issue()
    assert "Revoked connection" in run("revoke_token", token)
    assert connection_for_token(token) is None

    second, connection = tenant.issue()
    run("revoke_token", str(connection.pk))
    assert connection_for_token(second) is None
    # Revoking again is harmless.
    run("revoke_token", str(connection.pk))


def test_import_memory_jsonl(tenant: Tenant, tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    lines = [
        {
            "kind": "decision",
            "text": "We use PostgreSQL.",
            "source": "adr/1.md",
            "actor": "ana",
            "date": "2026-01-02",
        },
        {"kind": "thread", "text": "Who owns backups?"},
        {"text": "A plain fact.", "data_class": "confidential"},
        {"kind": "policy", "text": "Never deploy on Fridays.", "ref": "policy_fridays01"},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n")
    out = run("import_memory", "acme", "platform", str(path))
    assert "Imported 4 items into acme/platform" in out
    facts = {f.text: f for f in Fact.objects.filter(project=tenant.projects["platform"])}
    assert facts["We use PostgreSQL."].kind == Kind.DECISION
    assert facts["We use PostgreSQL."].provenance() == {
        "source": "adr/1.md",
        "date": "2026-01-02",
        "actor": "ana",
    }
    assert facts["Who owns backups?"].state == "open"
    assert facts["A plain fact."].data_class == "confidential"
    assert facts["A plain fact."].source == "items.jsonl"
    assert facts["Never deploy on Fridays."].ref == "policy_fridays01"


@pytest.mark.parametrize(
    "bad",
    [
        "{not json",
        "[1, 2]",
        '{"kind": "fact"}',
        '{"kind": "wizard", "text": "x"}',
        '{"text": "x", "colour": "red"}',
        '{"text": "x", "date": "yesterday"}',
        '{"text": "x", "ref": "' + "r" * 201 + '"}',
        '{"text": "x", "state": "open"}',
        '{"text": "x", "data_class": "secret"}',
        '{"text": "   "}',
    ],
)
def test_import_memory_names_a_bad_line_and_keeps_nothing(tenant: Tenant, tmp_path: Path, bad: str) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text('{"text": "good one"}\n{"text": "good two"}\n' + bad + "\n" + '{"text": "good three"}\n')
    with pytest.raises(CommandError, match=r"^line 3: "):
        run("import_memory", "acme", "platform", str(path))
    assert not Fact.objects.filter(project=tenant.projects["platform"]).exists()


def test_import_memory_markdown(tenant: Tenant, tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    path.write_text(
        "# Platform notes\n\nThe API runs on Django.\n\n"
        "## Decisions\n- We chose Celery for background work.\n- Redis is the broker.\n\n"
        "## Conventions\n* Tests are named by behaviour.\n\n"
        "## Security policy\n- Never commit secrets.\n\n"
        "## Open questions\n1. Should we shard the events table?\n\n"
        "## How to deploy\n1. Merge to main.\n2. Watch the canary.\n\n```\nmake deploy\n```\n"
    )
    out = run("import_memory", "acme", "platform", str(path))
    assert "Imported 7 items" in out
    kinds = {f.text: f.kind for f in Fact.objects.filter(project=tenant.projects["platform"])}
    assert kinds["The API runs on Django."] == Kind.FACT
    assert kinds["We chose Celery for background work."] == Kind.DECISION
    assert kinds["Redis is the broker."] == Kind.DECISION
    assert kinds["Tests are named by behaviour."] == Kind.CONVENTION
    assert kinds["Never commit secrets."] == Kind.POLICY
    assert kinds["Should we shard the events table?"] == Kind.THREAD
    method = next(text for text, kind in kinds.items() if kind == Kind.METHOD)
    assert method.startswith("How to deploy")
    assert "make deploy" in method
    assert "Watch the canary." in method


def test_import_memory_markdown_format_can_be_forced(tenant: Tenant, tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("## Decisions\n- Use uv for tooling.\n")
    run("import_memory", "acme", "platform", str(path), "--format", "markdown")
    assert Fact.objects.get(project=tenant.projects["platform"]).kind == Kind.DECISION
