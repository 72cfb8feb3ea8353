"""Secrets are not kept in clear: proposed over MCP, stored redacted, rejected, shown nowhere.

The ledger attests what is stored, so it still verifies; a replay of the same request is the same
content; the console, the admin, the export and the logs never show the value.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from memory.exports import workspace_export
from memory.ledger import ledger_verify
from memory.models import Proposal
from memory.services import consolidation_run
from tests.conftest import Tenant
from tests.mcp_client import MCPClient

SECRETS = {
    "password pair": ("db creds: admin / S3cr3tPassw0rd!!", "S3cr3tPassw0rd!!"),
    "access-key pair": (
        "AWS for the importer: AKIAZ7Q3K2M9P4R8T5WX / wJalrXUtnFEMIK7MDENGbPxRfiCYzq9Lw0dT8yV2",
        "wJalrXUtnFEMIK7MDENGbPxRfiCYzq9Lw0dT8yV2",
    ),
    "live token": (
        "GitHub token for CI: ghp_R7m2K9q4X8s3T5w1Z6y0B4n8C2v6D1f3H5j7",
        "R7m2K9q4X8s3T5w1Z6y0B4n8",
    ),
    "connection string": ("The app connects with postgres://app:Hx8vR2qL9zz@db.acme.dev/prod", "Hx8vR2qL9zz"),
}


@pytest.mark.parametrize("case", SECRETS, ids=list(SECRETS))
def test_a_secret_is_stored_redacted_rejected_and_shown_nowhere(
    tenant: Tenant,
    mcp_client: Callable[..., MCPClient],
    client: Client,
    tmp_path: Path,
    case: str,
) -> None:
    text, secret = SECRETS[case]
    logged: list[str] = []
    handler = _Recorder(logged)
    root = logging.getLogger()
    root.addHandler(handler)
    level = root.level
    root.setLevel(logging.DEBUG)
    try:
        _check(tenant, mcp_client, client, tmp_path, text, secret)
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    assert logged
    assert not [line for line in logged if secret in line]


class _Recorder(logging.Handler):
    def __init__(self, lines: list[str]) -> None:
        super().__init__(logging.DEBUG)
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _check(
    tenant: Tenant,
    mcp_client: Callable[..., MCPClient],
    client: Client,
    tmp_path: Path,
    text: str,
    secret: str,
) -> None:
    token, _ = tenant.issue()
    mcp = mcp_client(token)
    arguments = {
        "project_id": "platform",
        "request_id": f"secret-{uuid.uuid4()}",
        "change": {"op": "add_fact", "text": text},
        "evidence": [{"ref": "notes/setup.md", "text": f"From the setup notes: {text}", "trust": "trusted"}],
    }
    receipt = mcp.ok("propose_memory", arguments)
    replay = mcp.ok("propose_memory", arguments)
    assert replay["duplicate_request"] is True
    assert "NOT stored" not in replay["warnings"][0]["message"]  # the same content, as stored

    consolidation_run(workspace_id=tenant.workspace.pk, wait=True)
    proposal = Proposal.objects.get(ref=receipt["proposal_id"])
    assert (proposal.status, proposal.reason) == (Proposal.Status.REJECTED, Proposal.Reason.SECRET)
    assert "⟦redacted secret: " in proposal.text
    stored = Proposal.objects.filter(pk=proposal.pk).values_list(
        "text", "evidence", "reason_detail", "signals"
    )
    assert secret not in repr(list(stored))
    assert ledger_verify(workspace=tenant.workspace).ok

    client.force_login(tenant.owner)
    page = client.get(reverse("console:proposal", args=["acme", proposal.seq])).content.decode()
    assert "redacted secret" in page
    assert secret not in page
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    admin = client.get(f"/admin/memory/proposal/{proposal.pk}/change/")
    assert admin.status_code == 200
    assert secret not in admin.content.decode()
    exported = workspace_export(workspace=tenant.workspace, output=tmp_path / "export")
    files = [exported] if exported.is_file() else [p for p in exported.rglob("*") if p.is_file()]
    assert files
    assert all(secret.encode() not in f.read_bytes() for f in files)
