"""Workspace export: readable Markdown plus a manifest that opens without Unforgetter."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.services import fact_create
from tests.conftest import Tenant


@pytest.fixture
def remembered(tenant: Tenant) -> Tenant:
    platform = tenant.projects["platform"]
    fact_create(
        project=platform, kind="decision", text="We deploy blue-green.", actor="maria", source="adr/12.md"
    )
    fact_create(project=platform, kind="policy", text="Never deploy on Fridays.", actor="owner")
    fact_create(
        project=tenant.projects["payroll"], kind="fact", text="Bands reviewed in January.", actor="owner"
    )
    return tenant


def test_export_directory_is_readable_markdown_with_a_verifiable_manifest(
    remembered: Tenant, tmp_path: Path
) -> None:
    out = tmp_path / "export"
    call_command("export_workspace", "acme", str(out))

    memory_md = (out / "projects/platform/memory.md").read_text()
    assert "## Decisions" in memory_md
    assert "## Policies" in memory_md
    assert "We deploy blue-green." in memory_md
    assert "source: adr/12.md" in memory_md
    manifest = json.loads((out / "manifest.json").read_text())
    for name, digest in manifest["files"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest
    refs = {item["ref"] for item in manifest["items"]}
    assert len(refs) == 3
    lines = (out / "projects/platform/items.jsonl").read_text().splitlines()
    assert {json.loads(line)["kind"] for line in lines} == {"decision", "policy"}


def test_export_zip_round_trips_through_import(remembered: Tenant, tmp_path: Path) -> None:
    archive = tmp_path / "acme.zip"
    call_command("export_workspace", "acme", str(archive))
    with zipfile.ZipFile(archive) as opened:
        jsonl = opened.read("acme/projects/platform/items.jsonl")
    # Re-importing into a fresh project keeps every text (refs are regenerated).
    from workspaces.services import project_create

    project_create(workspace=remembered.workspace, slug="restored")
    clean = tmp_path / "clean.jsonl"
    clean.write_text(
        "".join(
            json.dumps({k: v for k, v in json.loads(line).items() if k != "ref"}) + "\n"
            for line in jsonl.decode().splitlines()
        )
    )
    call_command("import_memory", "acme", "restored", str(clean))
    from memory.models import Fact

    assert set(Fact.objects.filter(project__slug="restored").values_list("text", flat=True)) == {
        "We deploy blue-green.",
        "Never deploy on Fridays.",
    }


def test_export_refuses_a_non_empty_directory(remembered: Tenant, tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(CommandError, match="not empty"):
        call_command("export_workspace", "acme", str(tmp_path))
