"""The cloud agents' snapshot prefetch: the documented commands, run by a shell against a live server."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memory.services import fact_create
from tests.conftest import Tenant
from workspaces.snippets import snapshot_commands

pytestmark = pytest.mark.slow


def _run(script: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {"PATH": os.environ["PATH"], "HOME": str(cwd), **env}
    return subprocess.run(
        ["bash", "-c", script], cwd=cwd, env=environment, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("tool", ["curl", "python"])
def test_the_snapshot_command_writes_markdown_with_provenance_and_json(
    tenant: Tenant, live: Any, tmp_path: Path, tool: str
) -> None:
    platform = tenant.projects["platform"]
    fact_create(
        project=platform, kind="policy", text="Never deploy on Fridays.", actor="ana", source="adr/7.md"
    )
    fact_create(project=platform, kind="decision", text="Webhooks retry three times.", actor="maria")
    fact_create(project=tenant.projects["payroll"], kind="fact", text="Salary bands are secret.", actor="ana")
    token, _ = tenant.issue()
    script = snapshot_commands(live.url, "platform")[tool]

    done = _run(script, tmp_path, UNFORGETTER_TOKEN=token, UNFORGETTER_TASK="webhook retries")
    assert done.returncode == 0, done.stderr
    markdown = (tmp_path / ".unforgetter/context.md").read_text()
    assert markdown.startswith("# Platform: context from Unforgetter")
    assert "task: webhook retries" in markdown
    assert "- Never deploy on Fridays." in markdown
    assert "source adr/7.md" in markdown
    assert "· maria" in markdown
    assert "Salary bands" not in markdown
    bundle = json.loads((tmp_path / ".unforgetter/context.json").read_text())
    assert bundle["task"] == "webhook retries"
    assert [p["text"] for p in bundle["policies"]] == ["Never deploy on Fridays."]
    assert all(ref in markdown for ref in (item["ref"] for item in bundle["facts"]))


@pytest.mark.parametrize("tool", ["curl", "python"])
def test_a_bad_token_fails_the_step_and_writes_no_snapshot(
    tenant: Tenant, live: Any, tmp_path: Path, tool: str
) -> None:
    done = _run(snapshot_commands(live.url, "platform")[tool], tmp_path, UNFORGETTER_TOKEN="unf_" + "x" * 43)
    assert done.returncode != 0
    assert not (tmp_path / ".unforgetter/context.md").exists()
