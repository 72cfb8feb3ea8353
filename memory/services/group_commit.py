"""Group commit: inserts that concurrent requests of one process make are committed together.

Every proposal of a workspace is inserted under one lock (the workspace row on PostgreSQL, the
database's write lock on SQLite), because its seq and the ledger's previous attestation are read
under it. With many agents proposing at once each request waited for the lock, took it for a
transaction of four statements and a commit, and gave it up; on SQLite a waiting writer sleeps
in the busy handler for up to 100 ms at a time. Here the requests of one process that arrive
while a batch is being written wait in memory and are then written by one of them, in one
transaction, in arrival order: one lock, one commit for all of them.

A batch that fails is retried member by member, so one request's error (a replay stored by
another process meanwhile: IntegrityError) is raised to that request alone. A caller already
inside a transaction writes alone, in it: its writes must share its transaction's fate.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from django.db import connection

T = TypeVar("T")


@dataclass
class _Batch(Generic[T]):
    items: list[T] = field(default_factory=list)
    members: int = 0
    done: bool = False
    failed: BaseException | None = None


class GroupCommit(Generic[T]):
    """Writes `items` of one key (a workspace) with `write(key, items)`, batching concurrent calls."""

    def __init__(self, write: Callable[[int, Sequence[T]], None]) -> None:
        self._write = write
        self._cond = threading.Condition()
        self._open: dict[int, _Batch[T]] = {}
        self._writing: set[int] = set()

    def write(self, key: int, items: Sequence[T], *, before_retry: Callable[[], None] | None = None) -> None:
        """Write `items` now or with the batch they joined; returns once they are committed.

        `before_retry` resets the caller's items if its batch failed and they are written alone.
        """
        if connection.in_atomic_block:
            self._write(key, items)
            return
        with self._cond:
            batch = self._open.setdefault(key, _Batch())
            batch.items.extend(items)
            batch.members += 1
            while key in self._writing and not batch.done:
                self._cond.wait()
            leads = not batch.done
            if leads:  # nobody is writing this key: this caller writes the batch it joined
                self._writing.add(key)
                del self._open[key]
        if leads:
            try:
                self._write(key, batch.items)
            except BaseException as exc:
                batch.failed = exc
            finally:
                with self._cond:
                    batch.done = True
                    self._writing.discard(key)
                    self._cond.notify_all()
        if batch.failed is None:
            return
        if batch.members == 1:
            raise batch.failed
        if before_retry is not None:
            before_retry()
        self._write(key, items)
