"""Proposals as the write path stores them (the real submit path lives in another module).

Rows are created with realistic fields: a per-workspace seq, a content digest, an attestation.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.db.models import Max
from django.test import Client

from memory.models import Proposal, Taint
from workspaces.models import Connection, Project


def make_proposal(
    project: Project,
    *,
    op: str = Proposal.Op.ADD_FACT,
    text: str = "The staging database is rebuilt every Sunday at 02:00 UTC.",
    status: str = Proposal.Status.QUARANTINED,
    taint: int = Taint.UNTRUSTED,
    actor: str = "grok-bot@team",
    zone: str = "grok-bot",
    target: str = "",
    supersedes: str = "",
    evidence: list[dict[str, Any]] | None = None,
    connection: Connection | None = None,
    reason: str = "",
) -> Proposal:
    workspace = project.workspace
    seq = (Proposal.objects.filter(workspace=workspace).aggregate(m=Max("seq"))["m"] or 0) + 1
    return Proposal.objects.create(
        workspace=workspace,
        project=project,
        connection=connection,
        actor=actor,
        zone=zone,
        request_id=f"req-{seq}",
        seq=seq,
        op=op,
        target=target,
        text=text,
        supersedes=supersedes,
        evidence=evidence
        if evidence is not None
        else [{"ref": "https://status.example.com/incidents/42", "trust": "untrusted"}],
        content_digest=hashlib.sha256(f"{op}|{target}|{text}".encode()).hexdigest(),
        status=status,
        reason=reason,
        taint=taint,
        attestation="0" * 64,
    )


def signed_in(client: Client, user: Any) -> Client:
    client.force_login(user)
    return client
