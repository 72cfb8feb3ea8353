"""Read ahead: the next values of an iterator made in a background thread while this one works.

An import parses, checks and screens one batch (pure Python) while the database inserts the one
before it (SQLite's steps and PostgreSQL's COPY give up the GIL while they run), so the two
overlap instead of taking turns.

Errors keep their place: an exception raised by the iterator is raised here, to the consumer,
where the value it was making would have been handed over, so work on the values before it goes
on exactly as if the iterator ran in line. The producer must not touch the database: a thread
has its own connection, outside the consumer's transaction.
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

# How long a producer waits for room before checking whether the consumer has gone.
_POLL_SECONDS = 0.05
_END = object()


def read_ahead(source: Iterator[T], *, depth: int = 1) -> Iterator[T]:
    """The values of `source`, each made up to `depth` values before the consumer asks for it.

    Leaving the loop early (an exception, a `break`) stops the producer and closes `source` in
    its own thread before this generator finishes.
    """
    ready: queue.Queue[tuple[object, BaseException | None]] = queue.Queue(maxsize=depth)
    stopped = threading.Event()

    def hand_over(value: object, error: BaseException | None) -> bool:
        while not stopped.is_set():
            try:
                ready.put((value, error), timeout=_POLL_SECONDS)
            except queue.Full:
                continue
            return True
        return False

    def produce() -> None:
        try:
            for value in source:
                if not hand_over(value, None):
                    return
        except BaseException as exc:  # handed to the consumer, raised there
            hand_over(None, exc)
            return
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()
        hand_over(_END, None)

    thread = threading.Thread(target=produce, name="read-ahead", daemon=True)
    with _prompt_switches():
        thread.start()
        try:
            while True:
                value, error = ready.get()
                if error is not None:
                    raise error
                if value is _END:
                    return
                yield value  # type: ignore[misc]
        finally:
            stopped.set()
            thread.join()


# How long a thread that has given up the GIL (for a database call) may wait to get it back
# from a producer that is busy: the interpreter's 5 ms would let the producer have the GIL
# for 5 ms after every inserted row, so the insert would crawl while the producer runs.
_SWITCH_SECONDS = 0.0002


@contextmanager
def _prompt_switches() -> Iterator[None]:
    previous = sys.getswitchinterval()
    sys.setswitchinterval(min(previous, _SWITCH_SECONDS))
    try:
        yield
    finally:
        sys.setswitchinterval(previous)
