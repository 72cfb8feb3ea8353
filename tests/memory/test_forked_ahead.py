"""Read ahead in a forked child (memory.forked_ahead): the same values and errors, in the same
places, as in line; the values are made in another process, and leaving early ends it."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

import pytest

from memory.forked_ahead import forked_ahead
from workspaces.exceptions import InvalidRequest


def test_values_come_in_order_and_are_made_in_another_process() -> None:
    def made() -> Iterator[tuple[int, int]]:
        for value in range(50):
            yield value, os.getpid()

    got = list(forked_ahead(made(), depth=2))

    assert [value for value, _ in got] == list(range(50))
    assert {pid for _, pid in got} - {os.getpid()} == {got[0][1]}  # one child, not this process


def test_an_error_is_raised_after_the_values_before_it_with_its_own_action() -> None:
    def made() -> Iterator[int]:
        yield 1
        yield 2
        raise InvalidRequest("line 3: bad", action="Fix line 3.")

    got: list[int] = []

    def consume() -> None:
        for value in forked_ahead(made()):
            got.append(value)

    with pytest.raises(InvalidRequest, match="line 3: bad") as raised:
        consume()
    assert got == [1, 2]
    assert raised.value.action == "Fix line 3."


def test_an_error_that_cannot_be_pickled_arrives_by_name() -> None:
    class Local(Exception):  # a class defined in a function cannot be rebuilt by name
        pass

    def made() -> Iterator[int]:
        yield 1
        raise Local("not picklable")

    with pytest.raises(RuntimeError, match="Local: not picklable"):
        list(forked_ahead(made()))


def test_leaving_early_ends_the_child() -> None:
    pids: list[int] = []

    def made() -> Iterator[int]:
        yield os.getpid()
        yield from range(1_000_000)

    def consume() -> None:
        for value in forked_ahead(made()):
            if not pids:
                pids.append(value)
            elif value == 3:
                raise RuntimeError("the consumer failed")

    with pytest.raises(RuntimeError, match="the consumer failed"):
        consume()
    with pytest.raises(ProcessLookupError):
        os.kill(pids[0], 0)  # killed and reaped: no such process any more
    assert threading.active_count() >= 1  # the parent goes on


def test_a_child_that_dies_is_an_error_not_a_short_import() -> None:
    def made() -> Iterator[int]:
        yield 1
        os._exit(3)  # as a child killed mid-way would

    with pytest.raises(RuntimeError, match="ended without its values"):
        list(forked_ahead(made()))


def test_an_import_batch_crosses_the_pipe_whole() -> None:
    from datetime import date

    from memory.imports import _Prepared
    from memory.readers import Incoming
    from memory.services import FactRow

    item = Incoming("line 1", "fact", " Deploys go through the release train. ", source_date=date(2026, 1, 2))
    row = FactRow("fact", "Deploys go through the release train.", "active", "internal", "", None, "a", "")
    prepared = _Prepared([(item, row)], [123], 1)

    (got,) = list(forked_ahead(iter([prepared])))

    assert got == prepared
    assert isinstance(got.items[0][0], Incoming)
    assert isinstance(got.items[0][1], FactRow)
