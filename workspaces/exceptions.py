"""The one error hierarchy. Services raise these; each edge translates them.

Every error has a stable `code` (the agent-facing codes of the MCP reference), a `message` safe to
show to the caller (never internals, never another tenant's existence) and an `action`: what the
caller should do next. Memory's own errors (cursors, protected targets, replays, review states)
are in `memory.exceptions`, in this same hierarchy.
"""

from __future__ import annotations

from typing import NotRequired

from typing_extensions import TypedDict  # pydantic reads it (output schemas) before 3.12


class ErrorBody(TypedDict):
    """`structuredContent.error` of a failed tool call (and of problem JSON), and a warning's body."""

    code: str
    message: str
    action: str
    # Seconds to wait before retrying (rate_limited only).
    retry_after: NotRequired[int]


class UnforgetterError(Exception):
    code = "error"
    action = "Do not retry with the same arguments."
    http_status = 400

    def __init__(self, message: str, *, action: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if action is not None:
            self.action = action

    def as_dict(self) -> ErrorBody:
        return {"code": self.code, "message": self.message, "action": self.action}


class InvalidRequest(UnforgetterError):
    code = "invalid_request"
    action = "Fix the arguments as the message says and call again."


class Unauthorized(UnforgetterError):
    code = "unauthorized"
    action = "Stop. A new token must be issued by the owner; there is no self-service refresh."
    http_status = 401


class ForbiddenScope(UnforgetterError):
    code = "forbidden_scope"
    action = "Call list_projects and select an allowed project. Do not retry with the same id."
    http_status = 403


class UnknownProject(UnforgetterError):
    code = "unknown_project"
    action = "Call list_projects. The catalogue is authoritative."
    http_status = 404


class RateLimited(UnforgetterError):
    """A limit was reached; `retry_after` says how many seconds to wait (also the HTTP Retry-After)."""

    code = "rate_limited"
    action = "Wait retry_after seconds, then retry."
    http_status = 429

    def __init__(self, message: str, *, action: str | None = None, retry_after: int = 1) -> None:
        super().__init__(message, action=action)
        self.retry_after = max(int(retry_after), 1)

    def as_dict(self) -> ErrorBody:
        return {**super().as_dict(), "retry_after": self.retry_after}


class NotFound(UnforgetterError):
    """An owner-facing lookup that failed, or an object of another workspace (never told apart)."""

    code = "not_found"
    action = "Check the identifier."
    http_status = 404
