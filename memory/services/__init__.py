"""Writes of memory, the only code that changes its rows, one module per concern:

- facts: owner and import writes of canonical items
- publishing: publication cycles and context-bundle records
- proposals: the agent write path (submit, consolidate, review)
"""

from memory.services.facts import default_state, fact_build, fact_create, facts_bulk_create, project_touch
from memory.services.owner_edits import fact_owner_create, fact_owner_edit
from memory.services.proposals import proposal_approve, proposal_reject
from memory.services.publishing import context_request_record, publication_bootstrap, publication_record

__all__ = [
    "context_request_record",
    "default_state",
    "fact_build",
    "fact_create",
    "fact_owner_create",
    "fact_owner_edit",
    "facts_bulk_create",
    "project_touch",
    "proposal_approve",
    "proposal_reject",
    "publication_bootstrap",
    "publication_record",
]
