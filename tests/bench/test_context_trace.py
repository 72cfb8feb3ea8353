"""bench/context_trace.py: every stage it times is where it looks, and its table reads as it says."""

from __future__ import annotations

import sys
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
    requests = [
        [("credential", 1.0, 1.5), ("rows read", 3.0, 4.0), ("rows read", 9.0, 9.5)],
        [("credential", 1.2, 1.6), ("rows read", 3.2, 4.4), ("rows read", 9.5, 10.25)],
        [("credential", 0.8, 1.3), ("rows read", 2.8, 3.6)],
    ]
    assert context_trace._table(requests) == [
        ("credential", 3, 1.0, 1.5, 0.5),
        ("rows read", 3, 3.0, 4.0, 1.0),
        ("rows read (2)", 2, 9.25, 9.875, 0.625),
    ]
