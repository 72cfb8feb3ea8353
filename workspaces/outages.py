"""A database outage answered as what it is: a retryable `unavailable`, never a 500.

PostgreSQL restarting, a full connection pool or a SQLite file that cannot be opened surface as
Django's OperationalError or InterfaceError (a bug is any other exception, and stays a 500).
Every surface translates them the same way: the MCP tools into an `unavailable` tool error, the
MCP endpoint's authentication (mcpbridge.asgi) and every Django view (this middleware, and the
500 handler for what fails outside a view) into HTTP 503 with `Retry-After`, as problem JSON for
machine clients and a short page for people. The log gets one warning line per refusal, without
a traceback: an outage is an operator's event, not a bug to debug from a stack.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.template.loader import render_to_string
from django.views import defaults

from workspaces.exceptions import Unavailable, problem_body

logger = logging.getLogger(__name__)

OUTAGE_ERRORS = (OperationalError, InterfaceError)
# What a refused caller is told to wait: about the time PostgreSQL takes to restart.
RETRY_AFTER_SECONDS = 5
# Paths whose callers are programs: they get problem JSON, everyone else a page.
_MACHINE_PATHS = ("/api/", "/oauth/", "/.well-known/", "/readyz", "/healthz", "/metrics")


def is_outage(exc: BaseException | None) -> bool:
    return isinstance(exc, OUTAGE_ERRORS)


def unavailable(surface: str, exc: BaseException) -> Unavailable:
    """The error to answer for `exc`, logged once as a warning (no traceback, no SQL)."""
    logger.warning("database unavailable (%s): %s", surface, type(exc).__name__)
    return Unavailable(
        "The server cannot reach its database right now.",
        retry_after=RETRY_AFTER_SECONDS,
    )


def outage_response(request: HttpRequest, exc: BaseException) -> HttpResponse:
    error = unavailable(request.path, exc)
    response: HttpResponse
    if request.path.startswith(_MACHINE_PATHS) or "html" not in request.headers.get("Accept", ""):
        response = JsonResponse(
            problem_body(error), status=error.http_status, content_type="application/problem+json"
        )
    else:
        page = render_to_string("503.html", {"retry_after": error.retry_after})
        response = HttpResponse(page, status=error.http_status)
    response["Retry-After"] = str(error.retry_after)
    return response


class DatabaseOutageMiddleware:
    """The innermost middleware: a view that met an outage answers 503 through every other one."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        return outage_response(request, exception) if is_outage(exception) else None


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: an outage met outside a view (a middleware reading the session) is still a 503."""
    exc = sys.exc_info()[1]
    if is_outage(exc):
        assert exc is not None
        return outage_response(request, exc)
    return defaults.server_error(request)
