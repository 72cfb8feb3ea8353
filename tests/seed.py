"""Thousands of pending proposals at once, through the agent write path itself.

`proposal_submit` takes the workspace lock once per proposal; tests of the consolidator that need
5,000 pending proposals submit them with `proposals_submit`, the same checks, taint and
attestation with one locked insert for all, so the seed cannot drift from what agents store.
"""

from __future__ import annotations

import uuid
from typing import Any

from memory.models import Proposal
from memory.services import ProposedChange, proposals_submit
from workspaces.models import Connection, Project
from workspaces.selectors import agent_scope


def seed_proposals(
    *, connection: Connection, project: Project, specs: list[dict[str, Any]]
) -> list[Proposal]:
    """Each spec: {op, text, target?, trust?}. Returns the stored proposals in seq order."""
    changes = [
        ProposedChange(
            request_id=f"seed-{uuid.uuid4()}",
            op=spec["op"],
            text=spec["text"],
            target=spec.get("target"),
            evidence=[{"ref": f"logs/{n}.txt", "trust": spec.get("trust", "trusted")}],
        )
        for n, spec in enumerate(specs, start=1)
    ]
    submitted = proposals_submit(scope=agent_scope(connection), project_id=project.slug, changes=changes)
    return [s.proposal for s in submitted]
