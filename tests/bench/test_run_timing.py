"""bench/run.py times calls with the client's own garbage collector held off, and puts it back."""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import run  # noqa: E402


class _Client:
    """Answers at once, noting whether the collector was on during each call."""

    def __init__(self) -> None:
        self.collecting: list[bool] = []

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.collecting.append(gc.isenabled())
        return {}


def test_no_timed_call_runs_with_the_client_collector_on_and_it_is_on_again_after() -> None:
    client = _Client()
    assert gc.isenabled()
    latency = run.timed(client, "list_projects", [{}] * 5)  # type: ignore[arg-type]
    assert client.collecting == [False] * 5
    assert len(latency.samples) == 5
    assert gc.isenabled()


def test_a_collector_switched_off_before_stays_off() -> None:
    gc.disable()
    try:
        with run.client_collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
