"""Writes of memory, the only code that changes its rows, one module per concern:

- facts: owner and import writes of canonical items
- publishing: publication cycles, heartbeats and context-bundle records
- tenancy: opening and erasing a workspace, with its memory
- proposals, consolidation, decisions: the agent write path (submit; decide exactly once; owners decide)
"""

from memory.services.consolidation import (
    ConsolidationReport,
    consolidation_run,
    proposal_consolidate,
    workspaces_pending,
)
from memory.services.decisions import Decisions, proposal_approve, proposal_reject, proposals_decide
from memory.services.facts import (
    FactRow,
    fact_build,
    fact_create,
    fact_row,
    fact_rows_insert,
    project_touch,
)
from memory.services.owner_edits import fact_owner_create, fact_owner_edit
from memory.services.proposals import (
    ProposedChange,
    Submitted,
    proposal_first_read,
    proposal_submit,
    proposals_submit,
    submitted_status,
)
from memory.services.publishing import (
    context_request_record,
    publication_bootstrap,
    publication_heartbeat,
    publication_record,
)
from memory.services.tenancy import workspace_erase, workspace_open

__all__ = [
    "ConsolidationReport",
    "Decisions",
    "FactRow",
    "ProposedChange",
    "Submitted",
    "consolidation_run",
    "context_request_record",
    "fact_build",
    "fact_create",
    "fact_owner_create",
    "fact_owner_edit",
    "fact_row",
    "fact_rows_insert",
    "project_touch",
    "proposal_approve",
    "proposal_consolidate",
    "proposal_first_read",
    "proposal_reject",
    "proposal_submit",
    "proposals_decide",
    "proposals_submit",
    "publication_bootstrap",
    "publication_heartbeat",
    "publication_record",
    "submitted_status",
    "workspace_erase",
    "workspace_open",
    "workspaces_pending",
]
