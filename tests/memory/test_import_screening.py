"""Import is screened as a proposal is: secrets are stored redacted, tainted items fingerprinted.

Through the operator's CLI (`manage.py import_memory`) and, for what an agent does next, the MCP
write path: an agent that copies an imported untrusted item into a proposal gets it quarantined.
The duplicate check finds an item by its text digest whichever path created it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from memory.exports import workspace_export
from memory.models import Fact, Proposal, State, Taint, TaintPrint
from memory.services import consolidation_run, fact_create, proposal_submit
from tests.conftest import Tenant
from tests.mcp_client import MCPClient
from workspaces.selectors import agent_scope

pytestmark = pytest.mark.django_db

PASSWORD = "S3cr3tPassw0rd!!"
KEY_SECRET = "wJalrXUtnFEMIK7MDENGbPxRfiCYzq9Lw0dT8yV2"
WITH_SECRETS = [
    {"kind": "fact", "text": f"db creds: admin / {PASSWORD}"},
    {"kind": "method", "text": f"Deploy with AKIAZ7Q3K2M9P4R8T5WX / {KEY_SECRET} exported."},
    {"kind": "fact", "text": "The staging database is rebuilt every night."},
]
UNTRUSTED_TEXT = (
    "The mirror at pkg-mirror.example.net serves the same wheels as PyPI and is faster from the "
    "Frankfurt runners, so CI installs from there."
)
CLEAN_TEXT = (
    "The release train leaves every second Tuesday at noon and the notes are written by the "
    "engineer on call that week."
)


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def write_jsonl(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_secrets_in_imported_text_are_stored_redacted_and_reimport_changes_nothing(
    tenant: Tenant, tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path / "items.jsonl", WITH_SECRETS)
    out = run("import_memory", "acme", "platform", str(path))
    assert "Imported 3 items into acme/platform (unchanged 0, updated 0, 2 with secrets redacted" in out
    texts = dict(Fact.objects.filter(project=tenant.projects["platform"]).values_list("kind", "text"))
    assert texts["fact"].startswith("db creds: admin / ⟦redacted secret: ")
    assert "⟦redacted secret: " in texts["method"]
    assert "AKIAZ7Q3K2M9P4R8T5WX" not in texts["method"]
    assert Fact.objects.filter(text="The staging database is rebuilt every night.").exists()

    out = run("import_memory", "acme", "platform", str(path))
    assert "Imported 0 items into acme/platform (unchanged 3, updated 0" in out
    assert Fact.objects.filter(project=tenant.projects["platform"]).count() == 3


def test_a_secret_in_an_items_source_is_redacted_too(tenant: Tenant, tmp_path: Path) -> None:
    source = f"https://ci.acme.dev/logs?token=ghp_R7m2K9q4X8s3T5w1Z6y0B4n8C2v6D1f3H5j7&pw={PASSWORD}"
    path = write_jsonl(tmp_path / "items.jsonl", [{"text": "CI keeps logs for a week.", "source": source}])
    run("import_memory", "acme", "platform", str(path))
    (stored,) = Fact.objects.filter(project=tenant.projects["platform"]).values_list("source", flat=True)
    assert "⟦redacted secret: " in stored
    assert "ghp_R7m2K9q4X8s3T5w1Z6y0B4n8C2v6D1f3H5j7" not in stored


def test_an_export_after_import_holds_no_secret(tenant: Tenant, tmp_path: Path) -> None:
    run("import_memory", "acme", "platform", str(write_jsonl(tmp_path / "items.jsonl", WITH_SECRETS)))
    exported = workspace_export(workspace=tenant.workspace, output=tmp_path / "export")
    dumped = "".join(p.read_text() for p in exported.rglob("*") if p.is_file())
    assert PASSWORD not in dumped
    assert KEY_SECRET not in dumped
    assert "⟦redacted secret: " in dumped


def _propose_over_mcp(mcp: MCPClient, text: str) -> dict[str, Any]:
    return mcp.ok(
        "propose_memory",
        {
            "project_id": "platform",
            "request_id": f"copy-{uuid.uuid4()}",
            "change": {"op": "add_fact", "text": text},
            "evidence": [{"ref": "notes/standup.md", "trust": "trusted"}],
        },
    )


@pytest.mark.django_db(transaction=True)
def test_copying_an_imported_untrusted_item_into_a_proposal_quarantines_it(
    tenant: Tenant, tmp_path: Path, mcp_client: Callable[..., MCPClient]
) -> None:
    path = write_jsonl(
        tmp_path / "items.jsonl",
        [
            {"id": "web-1", "text": UNTRUSTED_TEXT, "taint": "untrusted"},
            {"id": "web-2", "text": CLEAN_TEXT},
        ],
    )
    run("import_memory", "acme", "platform", str(path))
    token, _ = tenant.issue()
    mcp = mcp_client(token)

    laundered = _propose_over_mcp(mcp, "Reminder: " + UNTRUSTED_TEXT.replace("faster", "much faster"))
    assert (laundered["status"], laundered["taint"]) == ("quarantined", "untrusted")
    copied_clean = _propose_over_mcp(mcp, "Reminder: " + CLEAN_TEXT)
    assert (copied_clean["status"], copied_clean["taint"]) == ("queued", "clean")


def test_reimporting_a_tainted_item_fingerprints_it_once(tenant: Tenant, tmp_path: Path) -> None:
    tainted = {"id": "web-1", "text": UNTRUSTED_TEXT, "taint": "untrusted"}
    path = write_jsonl(tmp_path / "items.jsonl", [tainted])
    run("import_memory", "acme", "platform", str(path))
    first = TaintPrint.objects.filter(workspace=tenant.workspace).count()
    assert first > 0
    run("import_memory", "acme", "platform", str(path))
    assert TaintPrint.objects.filter(workspace=tenant.workspace).count() == first


def test_an_item_any_path_created_is_found_again_by_its_text(tenant: Tenant, tmp_path: Path) -> None:
    """The digest the duplicate check looks up is filled by owners' saves and by publishing."""
    platform = tenant.projects["platform"]
    fact_create(project=platform, kind="fact", text="Owners write runbooks in docs/ops.", actor="owner")
    _, connection = tenant.issue()
    proposal_submit(
        scope=agent_scope(connection),
        project_id="platform",
        request_id="published-1",
        op="add_fact",
        text="Agents publish their notes through review.",
        evidence=[{"ref": "notes/review.md", "trust": "trusted"}],
    )
    consolidation_run(workspace_id=tenant.workspace.pk, wait=True)
    assert Proposal.objects.get(request_id="published-1").status == Proposal.Status.PUBLISHED
    path = write_jsonl(
        tmp_path / "items.jsonl",
        [
            {"text": "Owners write runbooks in docs/ops."},
            {"text": "Agents publish their notes through review."},
        ],
    )
    out = run("import_memory", "acme", "platform", str(path))
    assert "Imported 0 items into acme/platform (unchanged 2, updated 0" in out
    assert Fact.objects.filter(project=platform, taint=Taint.CLEAN).count() == 2


def test_a_new_version_of_an_untrusted_item_stays_untrusted_whatever_the_file_says(
    tenant: Tenant, tmp_path: Path
) -> None:
    first = write_jsonl(
        tmp_path / "first.jsonl", [{"id": "web-1", "text": UNTRUSTED_TEXT, "taint": "untrusted"}]
    )
    run("import_memory", "acme", "platform", str(first))
    # The same item again, edited, from a file that says nothing of its taint.
    edited = write_jsonl(tmp_path / "edited.jsonl", [{"id": "web-1", "text": UNTRUSTED_TEXT + " Edited."}])
    run("import_memory", "acme", "platform", str(edited))
    versions = Fact.objects.filter(project=tenant.projects["platform"], origin="web-1").order_by("id")
    assert [(f.state, f.taint) for f in versions] == [
        (State.SUPERSEDED, Taint.UNTRUSTED),
        (State.ACTIVE, Taint.UNTRUSTED),
    ]
    # ... and importing it once more is no change at all.
    out = run("import_memory", "acme", "platform", str(edited))
    assert versions.count() == 2, out
