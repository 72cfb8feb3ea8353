"""The limits and shapes of a proposal, each stated once.

The MCP argument models (mcpbridge.schemas), the tool descriptions, the write service and the
consolidator all read these; a limit changed here changes everywhere at once. Which states fit
which kind is the model's (`Kind.live_state`, `Kind.states`); what a ref looks like is
`memory.refs`.
"""

from __future__ import annotations

import re

from memory.models import Kind, Proposal

MAX_TEXT = 8_000
MAX_EVIDENCE_ITEMS = 20
MAX_EVIDENCE_TEXT = 4_000
MAX_EVIDENCE_REF = 500
MAX_CITATIONS = 64

REQUEST_ID_MIN, REQUEST_ID_MAX = 8, 128
REQUEST_ID_CHARS = "A-Za-z0-9._:-"
REQUEST_ID_RE = re.compile(rf"^[{REQUEST_ID_CHARS}]{{{REQUEST_ID_MIN},{REQUEST_ID_MAX}}}$")
REQUEST_ID_HELP = f"{REQUEST_ID_MIN}-{REQUEST_ID_MAX} characters of A-Z a-z 0-9 . _ : -"

# The kinds agents may add and change; methods are owners' instructions, and protected kinds
# (Kind.protected) are owners' alone.
AGENT_KINDS = (Kind.FACT, Kind.DECISION, Kind.CONVENTION)
UPDATABLE_KINDS = frozenset(AGENT_KINDS)
RETRACTABLE_KINDS = frozenset({*AGENT_KINDS, Kind.THREAD})
# Ops that apply to an existing item, named by `target`.
TARGETED_OPS = frozenset({Proposal.Op.UPDATE_FACT, Proposal.Op.CLOSE_THREAD, Proposal.Op.REJECT})
