"""bench/context_trace.py: every stage it times is where it looks, and its table reads as it says."""

from __future__ import annotations

import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import context_trace  # noqa: E402


def test_every_stage_names_a_function_its_callers_look_up() -> None:
    targets = context_trace.stage_targets()
    assert len(targets) == len(context_trace.STAGES)
    for owner, name, _ in targets:
        assert callable(getattr(owner, name))


def test_the_table_gives_median_times_per_stage_in_order_of_start() -> None:
    requests: list[list[context_trace.Event]] = [
        [("credential", 1.0, 1.5, 0.4), ("rows read", 3.0, 4.0, 1.0), ("rows read", 9.0, 9.5, 0.5)],
        [("credential", 1.2, 1.6, 0.3), ("rows read", 3.2, 4.4, 0.75), ("rows read", 9.5, 10.25, 0.25)],
        [("credential", 0.8, 1.3, 0.5), ("rows read", 2.8, 3.6, 0.5), ("response sent", 11.0, 11.0, None)],
    ]
    assert context_trace._table(requests) == [
        ("credential", 3, 1.0, 1.5, 0.5, 0.4),
        ("rows read", 3, 3.0, 4.0, 1.0, 0.75),
        ("rows read (2)", 2, 9.25, 9.875, 0.625, 0.375),
        ("response sent", 1, 11.0, 11.0, 0.0, None),
    ]


def test_a_timed_stage_notes_its_thread_s_cpu_time_beside_its_wall_time(monkeypatch) -> None:
    events: list[context_trace.Event] = []
    monkeypatch.setattr(context_trace, "_current", events)
    monkeypatch.setattr(context_trace, "_arrived", time.perf_counter())

    def waits_then_works() -> int:
        time.sleep(0.05)
        return sum(i * i for i in range(200_000))

    context_trace._timed("stage", waits_then_works)()

    ((label, started, ended, cpu),) = events
    assert label == "stage"
    assert ended - started >= 50  # ms: the sleep is in its wall time
    assert cpu is not None
    assert 0 < cpu < ended - started - 40  # and not in its CPU time
