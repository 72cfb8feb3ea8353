"""RFC 9457 problem JSON for every error the REST API returns, with the MCP tools' stable codes.

Domain errors carry their own code; DRF's own refusals (no or bad credentials, no permission,
a throttle, an unparsable request) are translated to the same codes, so a script branches on
`code` whichever layer refused it.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions as drf
from rest_framework.response import Response

from workspaces.exceptions import (
    ForbiddenScope,
    InvalidRequest,
    NotFound,
    RateLimited,
    RetryLater,
    Unauthorized,
    UnforgetterError,
    problem_body,
)

# The schema of every problem body, for the OpenAPI document.
PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "RFC 9457 problem details; `code` and `action` are those of the MCP tools' errors.",
    "properties": {
        "type": {"type": "string", "format": "uri"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string", "description": "Safe to show; never internals or other tenants."},
        "code": {"type": "string", "examples": ["unauthorized", "forbidden_scope", "unknown_project"]},
        "action": {"type": "string", "description": "What the caller should do next."},
        "retry_after": {"type": "integer", "description": "rate_limited, unavailable: seconds to wait."},
    },
    "required": ["type", "title", "status", "detail", "code", "action"],
}


def _translated(exc: drf.APIException) -> UnforgetterError:
    message = str(exc.detail) if isinstance(exc.detail, str) else "The request was refused."
    if isinstance(exc, drf.NotAuthenticated | drf.AuthenticationFailed):
        return Unauthorized(message)
    if isinstance(exc, drf.PermissionDenied):
        return ForbiddenScope(message)
    if isinstance(exc, drf.Throttled):
        return RateLimited(message, retry_after=int(getattr(exc, "wait", None) or 1))
    if isinstance(exc, drf.NotFound):
        return NotFound(message)
    return InvalidRequest(message)


def problem_response(exc: UnforgetterError, *, status: int | None = None) -> Response:
    status = status or exc.http_status
    headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, RetryLater) else {}
    return Response(
        problem_body(exc, status), status=status, content_type="application/problem+json", headers=headers
    )


def problem_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Every UnforgetterError and DRF refusal as problem JSON; anything else stays a 500."""
    if isinstance(exc, UnforgetterError):
        return problem_response(exc)
    if not isinstance(exc, drf.APIException):
        return None
    response = problem_response(_translated(exc), status=exc.status_code)
    if getattr(exc, "auth_header", None):
        response["WWW-Authenticate"] = exc.auth_header  # type: ignore[attr-defined]
    return response
