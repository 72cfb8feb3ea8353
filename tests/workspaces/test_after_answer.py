"""Work owed after an answer: collected where a server collects it, else done at once."""

from __future__ import annotations

import logging

import pytest

from workspaces.after_answer import after_answer, collected, run_collected


def test_work_is_done_at_once_where_nothing_collects_it() -> None:
    done: list[str] = []
    after_answer(lambda: done.append("recorded"))
    assert done == ["recorded"]


def test_collected_work_waits_until_it_is_run_in_order() -> None:
    done: list[str] = []
    with collected() as owed:
        after_answer(lambda: done.append("first"))
        after_answer(lambda: done.append("second"))
    assert done == []
    after_answer(lambda: done.append("outside"))  # the collection ended with its block
    run_collected(owed)
    assert done == ["outside", "first", "second"]


def test_a_failure_is_logged_and_the_rest_still_runs(caplog: pytest.LogCaptureFixture) -> None:
    done: list[str] = []

    def failing() -> None:
        raise RuntimeError("database went away")

    with collected() as owed:
        after_answer(failing)
        after_answer(lambda: done.append("kept"))
    with caplog.at_level(logging.ERROR, logger="workspaces.after_answer"):
        run_collected(owed)
    assert done == ["kept"]
    assert "work owed after an answer failed" in caplog.text
    assert "database went away" in caplog.text
