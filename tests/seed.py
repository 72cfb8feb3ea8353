"""Thousands of pending proposals at once, stored exactly as proposal_submit stores them.

proposal_submit takes the workspace lock per proposal (a round trip or four each); tests of the
consolidator that need 5,000 pending proposals build them from the same pieces (the schema check,
the content digest, the ledger's attestation chain) and insert them in bulk under that lock.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction
from django.utils import timezone

from memory import ledger
from memory.models import Proposal, Taint
from memory.validation import change_check, content_digest
from workspaces.models import Connection, Project, Workspace


def seed_proposals(
    *, connection: Connection, project: Project, specs: list[dict[str, Any]]
) -> list[Proposal]:
    """Each spec: {op, text, target?, trust?}. Returns the stored proposals in seq order."""
    zone = connection.zone
    with transaction.atomic():
        Workspace.objects.select_for_update().filter(pk=connection.workspace_id).get()
        last = (
            Proposal.objects.filter(workspace_id=connection.workspace_id)
            .order_by("-seq")
            .values_list("seq", "attestation")
            .first()
        )
        seq, previous = last if last else (0, "")
        rows = []
        for spec in specs:
            change = change_check(op=spec["op"], text=spec["text"], target=spec.get("target"))
            claimed = spec.get("trust", "trusted")
            counted = "untrusted" if zone.is_low_trust else claimed
            taint = Taint.UNTRUSTED if counted == "untrusted" else Taint.CLEAN
            seq += 1
            proposal = Proposal(
                workspace_id=connection.workspace_id,
                project=project,
                connection=connection,
                actor=connection.actor,
                zone=zone.name,
                request_id=f"seed-{uuid.uuid4()}",
                seq=seq,
                op=change.op,
                kind=change.kind,
                target=change.target,
                text=change.text,
                supersedes=change.base if change.op == Proposal.Op.UPDATE_FACT else "",
                evidence=[{"claimed": claimed, "trust": counted, "ref": f"logs/{seq}.txt"}],
                content_digest=content_digest(project_id=project.pk, change=change),
                status=Proposal.Status.QUARANTINED if taint else Proposal.Status.QUEUED,
                taint=taint,
                created_at=timezone.now(),
            )
            proposal.attestation = previous = ledger.attest(proposal, previous)
            rows.append(proposal)
        Proposal.objects.bulk_create(rows, batch_size=1000)
    return rows
