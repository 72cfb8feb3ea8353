"""The one error hierarchy. Services raise these; each edge translates them.

Every error has a stable `code` (the agent-facing codes of the MCP reference), a `message` safe to
show to the caller (never internals, never another tenant's existence) and an `action`: what the
caller should do next. Memory's own errors (cursors, protected targets, replays, review states)
are in `memory.exceptions`, in this same hierarchy.
"""

from __future__ import annotations

from typing import Any, NotRequired

from typing_extensions import TypedDict  # pydantic reads it (output schemas) before 3.12


class ErrorBody(TypedDict):
    """`structuredContent.error` of a failed tool call (and of problem JSON), and a warning's body."""

    code: str
    message: str
    action: str
    # Seconds to wait before retrying (rate_limited and unavailable only).
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

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled with its own action, if it was given one (memory.forked_ahead hands errors over).
        return (self.__class__, (self.message,), dict(self.__dict__))


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


class RetryLater(UnforgetterError):
    """A refusal that passes: `retry_after` says how many seconds to wait (also the HTTP Retry-After)."""

    action = "Wait retry_after seconds, then retry."

    def __init__(self, message: str, *, action: str | None = None, retry_after: int = 1) -> None:
        super().__init__(message, action=action)
        self.retry_after = max(int(retry_after), 1)

    def as_dict(self) -> ErrorBody:
        return {**super().as_dict(), "retry_after": self.retry_after}


class RateLimited(RetryLater):
    """A per-credential or per-address limit was reached."""

    code = "rate_limited"
    http_status = 429


class Unavailable(RetryLater):
    """The server cannot reach its database: retry later (a proposal's request_id makes it safe)."""

    code = "unavailable"
    action = "Wait retry_after seconds, then send the same call again (a request_id makes a retry safe)."
    http_status = 503


PROBLEM_TYPE = "https://unforgetter.com/docs/errors#{code}"


def problem_body(exc: UnforgetterError, status: int | None = None) -> dict[str, object]:
    """`exc` as RFC 9457 problem JSON (the REST API's errors and every HTTP 503)."""
    status = status or exc.http_status
    body: dict[str, object] = {
        "type": PROBLEM_TYPE.format(code=exc.code),
        "title": exc.code.replace("_", " "),
        "status": status,
        "detail": exc.message,
        "code": exc.code,
        "action": exc.action,
    }
    if isinstance(exc, RetryLater):
        body["retry_after"] = exc.retry_after
    return body


class NotFound(UnforgetterError):
    """An owner-facing lookup that failed, or an object of another workspace (never told apart)."""

    code = "not_found"
    action = "Check the identifier."
    http_status = 404
