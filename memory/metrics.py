"""Prometheus metrics: call latency by tool, where direct calls ran, refusals by limit,
proposals by status, lag, and whether the shared embedder answers.

Latency and refusals are counted in each serving process (scrape each worker, or set
PROMETHEUS_MULTIPROC_DIR to aggregate them, prometheus_client's multi-process mode); proposals
by status and the consolidation lag are read from the database at scrape time, so every worker
reports the same fleet-wide values.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from memory.embeddings import shared_embedder_answers
from memory.health import consolidation_lag_seconds, proposals_by_status
from workspaces.limits import refusals

CALL_SECONDS = Histogram(
    "unforgetter_tool_call_seconds",
    "Time to answer one agent call, by tool (MCP) or endpoint (REST), refusals included.",
    ["tool"],
    buckets=(0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)

# Where the unit of a directly answered MCP call ran (mcpbridge.direct): `event_loop` for a read
# that was the only request of its worker, else `request_thread`.
CALLS_RUN = Counter(
    "unforgetter_mcp_calls_run",
    "MCP tool calls answered directly, by tool and where their work ran (event_loop or request_thread).",
    ["tool", "ran_on"],
)


class _FleetCollector(Collector):
    """Values read at scrape time: the database's, and this process's refusal counts."""

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        refused = CounterMetricFamily(
            "unforgetter_rate_limited", "Calls refused with rate_limited, by limit.", labels=["limit"]
        )
        for limit in ("rate", "concurrency", "queue"):
            refused.add_metric([limit], refusals[limit])
        yield refused
        answers = shared_embedder_answers()
        if answers is not None:  # only where this process leaves its model to the shared embedder
            yield GaugeMetricFamily(
                "unforgetter_shared_embedder_up",
                "1 while the machine's shared embedder answers this process, else 0 (calls rank by words).",
                value=int(answers),
            )
        try:
            counts = proposals_by_status()
            lag = consolidation_lag_seconds()
        except Exception:  # the database is down: readiness says so; the scrape still answers
            return
        by_status = GaugeMetricFamily("unforgetter_proposals", "Proposals by status.", labels=["status"])
        for status, count in counts.items():
            by_status.add_metric([status], count)
        yield by_status
        yield GaugeMetricFamily(
            "unforgetter_consolidation_lag_seconds",
            "How long the oldest pending proposal has waited.",
            value=lag,
        )


def metrics_text() -> bytes:
    """The exposition text of every metric."""
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    else:
        registry.register(CALL_SECONDS)
        registry.register(CALLS_RUN)
    registry.register(_FleetCollector())
    return generate_latest(registry)
