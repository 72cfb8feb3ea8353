"""Errors of the memory write path, in the one hierarchy (workspaces.exceptions)."""

from __future__ import annotations

from workspaces.exceptions import UnforgetterError


class ProposalStateError(UnforgetterError):
    """A review action that does not fit the proposal's current status."""

    code = "invalid_state"
    action = "Reload the proposal: it has moved on since you looked at it."
    http_status = 409
