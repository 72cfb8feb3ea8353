"""bench/ab.py: its turns give both sides the same calls, the side going first alternating, and
its summary pairs them call by call."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import ab  # noqa: E402


def test_turns_give_each_side_every_call_in_blocks_the_first_side_alternating() -> None:
    assert list(ab.turns(5, 2)) == [
        ab.Turn(0, 0, 2),
        ab.Turn(1, 0, 2),
        ab.Turn(1, 2, 2),
        ab.Turn(0, 2, 2),
        ab.Turn(0, 4, 1),
        ab.Turn(1, 4, 1),
    ]
    for side in (0, 1):
        calls = [t for t in ab.turns(803, 40) if t.side == side]
        assert sum(t.count for t in calls) == 803
        assert [t.at for t in calls] == list(range(0, 803, 40))


def test_the_summary_pairs_the_sides_call_by_call() -> None:
    a = [5.0, 6.0, 7.0, 100.0]
    b = [5.5, 5.0, 7.25, 101.0]
    found = ab.summary(a, b)
    assert (found.a_p50, found.b_p50) == (6.5, 6.375)
    assert (found.a_p95, found.b_p95) == (100.0, 101.0)
    assert found.paired == 0.375  # the median of 0.5, -1.0, 0.25, 1.0
    assert found.calls == 4
    with pytest.raises(ValueError, match="same number"):
        ab.summary(a, b[:3])
