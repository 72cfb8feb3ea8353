"""The MCP SDK's per-message OpenTelemetry span: opted out unless MCP_TRACE_SPANS asks for it."""

from __future__ import annotations

from django.conf import settings
from django.test import override_settings
from mcp.server._otel import OpenTelemetryMiddleware

from mcpbridge.server import build_server


def _traced() -> bool:
    return any(isinstance(m, OpenTelemetryMiddleware) for m in build_server().middleware)


def test_no_span_per_message_by_default() -> None:
    assert not _traced()
    # The SDK's own request-state middleware is kept: only the span is dropped.
    assert build_server().middleware


def test_a_deployment_collecting_traces_keeps_the_span() -> None:
    with override_settings(UNFORGETTER={**settings.UNFORGETTER, "MCP_TRACE_SPANS": True}):
        assert _traced()
