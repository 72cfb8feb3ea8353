"""Rows that record reads, written a moment after the answers that made them, many per statement.

A served bundle's audit record (memory.services.publishing) was one INSERT run in a request thread
right after its answer (workspaces.after_answer): about 0.4 ms of CPU and a statement per call,
which an agent asking again at once met on its next call, competing with it for the GIL and the
cores (bench/ab.py, PostgreSQL: get_context's p50 0.86 ms lower without any after-answer work,
0.1-0.6 ms lower with the record written here, SQLite unchanged). Here a call
only queues its row; a thread of the process writes what gathered over DELAY_SECONDS in one
statement, then returns its database connection (`release_connections`).

Only where a server answers first and owes such work afterwards (`after_answer.deferring`): a
command, a test calling a service, the SDK's path write the row at once, as before. What may be
lost: the rows of the last DELAY_SECONDS of a process killed outright (kill -9), as a worker
killed between an answer and its after-answer work lost that work; a server stopped as servers
are (its lifespan's shutdown) writes what it holds first (`flush_all`). A write that fails is
logged and its rows dropped: they record reads, never memory or a proposal.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from workspaces.after_answer import deferring
from workspaces.units import release_connections

logger = logging.getLogger(__name__)

T = TypeVar("T")

# How long the first row queued waits for others before they are written together.
DELAY_SECONDS = 0.1

_all: list[WriteBehind[Any]] = []
_all_lock = threading.Lock()


class WriteBehind(Generic[T]):
    """Rows queued by calls (`add`) and written by `write`, a list at a time, on a thread of its own."""

    def __init__(self, write: Callable[[list[T]], None], *, name: str, delay: float = DELAY_SECONDS) -> None:
        self.write = write
        self._name = name
        self.delay = delay
        self._lock = threading.Lock()  # the queue
        self._writing = threading.Lock()  # held while rows taken from it are written
        self._rows: list[T] = []
        self._queued = threading.Event()
        self._hurry = threading.Event()
        self._thread: threading.Thread | None = None
        with _all_lock:
            _all.append(self)

    def add(self, row: T) -> None:
        """Write `row` a moment after the answer where the server defers such work, else now."""
        if not deferring():
            self.write([row])
            return
        with self._lock:
            self._rows.append(row)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
        self._queued.set()

    def flush(self) -> None:
        """Write every row queued so far, now, on the calling thread; once rows taken before it
        (by the queue's own thread) are written too."""
        with self._writing:
            with self._lock:
                rows, self._rows = self._rows, []
            if not rows:
                return
            try:
                self.write(rows)
            except Exception:
                logger.exception("writing %d queued row(s) of %s failed", len(rows), self._name)

    def _run(self) -> None:
        while True:
            self._queued.wait()
            # Rows queued meanwhile go in the same statement; a `flush_all` meanwhile (which
            # wrote them) cuts the wait short.
            self._hurry.clear()
            self._hurry.wait(self.delay)
            self._queued.clear()
            try:
                self.flush()
            finally:
                release_connections()  # of this thread: a pooled one goes back to its pool


def flush_all() -> None:
    """Write what every write-behind queue holds (a server's shutdown, tests)."""
    with _all_lock:
        queues = list(_all)
    for queue in queues:
        queue.flush()
        queue._hurry.set()  # its thread's wait is for rows already written


atexit.register(flush_all)
