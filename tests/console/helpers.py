"""Proposals made the way agents make them: through the real write path, never by inserting rows.

`make_proposal` submits with `proposal_submit` on a real contributor Connection, then takes the
proposal as far as the requested status with the real consolidator and review services, and
checks it got there (a proposal the consolidator rejects, e.g. for an injection signal, fails
loudly instead of silently becoming something the test did not ask for).
"""

from __future__ import annotations

import itertools
from typing import Any

from django.test import Client

from memory.models import Proposal
from memory.services import consolidation_run, proposal_reject, proposal_submit
from workspaces.models import Connection, DataClass, Membership, Project, Workspace
from workspaces.selectors import agent_scope
from workspaces.services import token_issue

UNTRUSTED_EVIDENCE = [{"ref": "https://status.example.com/incidents/42", "trust": "untrusted"}]
TRUSTED_EVIDENCE = [{"ref": "adr/0012-blue-green.md", "trust": "trusted"}]

_request_ids = itertools.count(1)


def agent(workspace: Workspace, *, actor: str = "grok-bot@team", zone: str = "grok-bot") -> Connection:
    """A contributor credential of `actor` in `zone` (reused if it already exists), as
    `tenant.issue` makes one; it may write to public and internal projects."""
    existing = Connection.objects.filter(
        workspace=workspace,
        actor=actor,
        zone__name=zone,
        role=Connection.Role.CONTRIBUTOR,
        revoked_at__isnull=True,
    ).first()
    if existing is not None:
        return existing
    return token_issue(
        workspace=workspace,
        actor=actor,
        zone=zone,
        role=Connection.Role.CONTRIBUTOR,
        data_classes=[DataClass.PUBLIC, DataClass.INTERNAL],
    ).connection


def consolidate(workspace: Workspace) -> None:
    """Run the real consolidator over everything pending in the workspace (as its worker would)."""
    consolidation_run(workspace_id=workspace.pk, wait=True)


def make_proposal(
    project: Project,
    *,
    op: str = Proposal.Op.ADD_FACT,
    text: str = "The staging database is rebuilt every Sunday at 02:00 UTC.",
    status: str = Proposal.Status.QUARANTINED,
    actor: str = "grok-bot@team",
    zone: str = "grok-bot",
    target: str = "",
    kind: str | None = None,
    evidence: list[dict[str, Any]] | None = None,
    connection: Connection | None = None,
    note: str = "Not supported by the evidence.",
) -> Proposal:
    """Submit a proposal as an agent would and take it to `status`:

    - quarantined: submitted tainted (the default: the low-trust grok-bot zone, untrusted
      evidence) and not consolidated yet: it is still being validated;
    - queued: submitted clean (pass zone="claude" and trusted evidence), not consolidated;
    - awaiting_review: quarantined (or, with `review_every_proposal`, clean), then consolidated;
    - published: queued, then consolidated;
    - rejected: submitted, then rejected by the workspace's owner with `note`.

    Consolidation runs over the whole workspace, as the real worker does: proposals made earlier
    and still quarantined or queued are consolidated too. Make those last.
    """
    workspace = project.workspace
    connection = connection or agent(workspace, actor=actor, zone=zone)
    submitted = proposal_submit(
        scope=agent_scope(connection),
        project_id=project.slug,
        request_id=f"req-{next(_request_ids):06d}",
        op=op,
        text=text,
        evidence=evidence if evidence is not None else UNTRUSTED_EVIDENCE,
        target=target or None,
        kind=kind,
    )
    proposal = submitted.proposal
    if status in (Proposal.Status.AWAITING_REVIEW, Proposal.Status.PUBLISHED):
        consolidate(workspace)
    elif status == Proposal.Status.REJECTED:
        owner = Membership.objects.filter(workspace=workspace, role=Membership.Role.OWNER).first()
        assert owner is not None
        proposal_reject(proposal=proposal, reviewer=owner.user, note=note)
    proposal.refresh_from_db()
    assert proposal.status == status, (
        f"asked for a {status} proposal; the write path made it {proposal.status} "
        f"({proposal.reason}: {proposal.reason_detail})"
    )
    return proposal


def signed_in(client: Client, user: Any) -> Client:
    client.force_login(user)
    return client


def trusted_proposal(project: Project, text: str, status: str) -> Proposal:
    """A proposal from the high-trust claude zone with trusted evidence, taken to `status`."""
    return make_proposal(
        project, text=text, zone="claude", actor="claude@alice", evidence=TRUSTED_EVIDENCE, status=status
    )
