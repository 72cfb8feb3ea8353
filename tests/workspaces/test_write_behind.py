"""Rows queued during calls whose server answers first, written together a moment later."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest

from workspaces.after_answer import collected
from workspaces.write_behind import WriteBehind, flush_all


class Recorder:
    """A write function that notes each list of rows it is given, and the thread it ran on."""

    def __init__(self, *, fail_first: bool = False) -> None:
        self.lists: list[list[Any]] = []
        self.threads: list[str] = []
        self.written = threading.Event()
        self._fail = fail_first

    def __call__(self, rows: list[Any]) -> None:
        if self._fail:
            self._fail = False
            raise RuntimeError("database went away")
        self.lists.append(list(rows))
        self.threads.append(threading.current_thread().name)
        self.written.set()


def test_a_row_is_written_at_once_where_the_server_does_not_defer() -> None:
    recorder = Recorder()
    queue = WriteBehind(recorder, name="test-at-once", delay=60)
    queue.add("read 1")
    assert recorder.lists == [["read 1"]]
    assert recorder.threads == [threading.current_thread().name]


def test_rows_queued_during_calls_are_written_together_by_the_queues_thread() -> None:
    recorder = Recorder()
    queue = WriteBehind(recorder, name="test-together", delay=0.2)
    for row in ("read 1", "read 2", "read 3"):
        with collected():  # a call on the direct path
            queue.add(row)
    assert recorder.lists == []  # nothing is written during the calls

    assert recorder.written.wait(timeout=10)
    assert recorder.lists == [["read 1", "read 2", "read 3"]]
    assert recorder.threads == ["test-together"]


def test_flush_writes_what_is_queued_now() -> None:
    recorder = Recorder()
    queue = WriteBehind(recorder, name="test-flush", delay=60)
    with collected():
        queue.add("read 1")
        queue.add("read 2")
    flush_all()  # as a server's shutdown does
    assert recorder.lists == [["read 1", "read 2"]]
    queue.flush()  # nothing left
    assert recorder.lists == [["read 1", "read 2"]]


def test_a_failed_write_is_logged_and_later_rows_are_still_written(caplog: pytest.LogCaptureFixture) -> None:
    recorder = Recorder(fail_first=True)
    queue = WriteBehind(recorder, name="test-failure", delay=60)
    with collected():
        queue.add("lost")
    with caplog.at_level(logging.ERROR, logger="workspaces.write_behind"):
        queue.flush()
    assert "writing 1 queued row(s) of test-failure failed" in caplog.text
    with collected():
        queue.add("read 2")
    queue.flush()
    assert recorder.lists == [["read 2"]]


def test_a_server_stopping_writes_what_its_queues_hold() -> None:
    from unforgetter.asgi import Router

    recorder = Recorder()
    queue = WriteBehind(recorder, name="test-lifespan", delay=600)
    messages = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    sent: list[str] = []

    async def receive() -> dict[str, str]:
        message = next(messages)
        if message["type"] == "lifespan.shutdown":
            with collected():  # a call answered just before the server is told to stop
                queue.add("read 1")
            assert recorder.lists == []
        return message

    async def send(message: dict[str, Any]) -> None:
        sent.append(message["type"])

    scope: Any = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}}
    asyncio.run(Router()(scope, receive, send))  # type: ignore[arg-type]

    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert recorder.lists == [["read 1"]]
