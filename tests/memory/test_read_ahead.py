"""Read ahead (memory.read_ahead): the same values and errors, in the same places, as in line."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from memory.read_ahead import read_ahead


def test_values_come_in_order_and_the_iterator_runs_in_another_thread() -> None:
    threads: set[str] = set()

    def made() -> Iterator[int]:
        for value in range(50):
            threads.add(threading.current_thread().name)
            yield value

    assert list(read_ahead(made(), depth=2)) == list(range(50))
    assert threads == {"read-ahead"}


def test_an_error_is_raised_after_the_values_before_it() -> None:
    def made() -> Iterator[int]:
        yield 1
        yield 2
        raise ValueError("line 3: bad")

    got: list[int] = []

    def consume() -> None:
        for value in read_ahead(made()):
            got.append(value)

    with pytest.raises(ValueError, match="line 3: bad"):
        consume()
    assert got == [1, 2]


def test_leaving_early_stops_the_producer_and_closes_the_iterator() -> None:
    closed = threading.Event()

    def made() -> Iterator[int]:
        try:
            yield from range(1_000_000)
        finally:
            closed.set()

    def consume() -> None:
        for value in read_ahead(made()):
            if value == 3:
                raise RuntimeError("the consumer failed")

    with pytest.raises(RuntimeError):
        consume()
    assert closed.is_set()
    assert not any(t.name == "read-ahead" for t in threading.enumerate())
