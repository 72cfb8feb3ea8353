"""Errors of memory: search cursors, protected targets, replays and review states.

They belong to the one hierarchy (`workspaces.exceptions.UnforgetterError`), each with its stable
agent-facing code.
"""

from __future__ import annotations

from workspaces.exceptions import UnforgetterError


class InvalidCursor(UnforgetterError):
    code = "invalid_cursor"
    action = "Restart the search without a cursor."


class ProtectedTarget(UnforgetterError):
    """A change aimed at a goal, policy, permission or identity: owners edit those, agents never."""

    code = "protected_target"
    action = "Do not retry. Surface the change to the workspace owner instead."
    http_status = 403
    MESSAGE = "Goals, policies, permissions and identities are edited by the workspace owner only."

    def __init__(self, message: str = MESSAGE, *, action: str | None = None) -> None:
        super().__init__(message, action=action)


class DuplicateRequest(UnforgetterError):
    """Not raised: a replay is a success; its `as_dict()` is the warning the replay carries."""

    code = "duplicate_request"
    action = "Treat as success; the original result is returned."
    http_status = 200


class ProposalStateError(UnforgetterError):
    """A review action that does not fit the proposal's current status."""

    code = "invalid_state"
    action = "Reload the proposal: it has moved on since you looked at it."
    http_status = 409


class ProposalValidating(ProposalStateError):
    """An approval of a quarantined proposal: the consolidator has not validated it yet."""

    action = "Approve it once the consolidator has validated it (normally seconds), or reject it."
