"""Group commit: writes that arrive while a batch is written go together, failures stay their own."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from memory.services.group_commit import GroupCommit


def _burst(group: GroupCommit[str], items: list[str]) -> list[BaseException]:
    errors: list[BaseException] = []

    def call(item: str) -> None:
        try:
            group.write(1, [item])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(item,)) for item in items]
    for thread in threads:
        thread.start()
        time.sleep(0.01)  # arrival order is the order written
    for thread in threads:
        thread.join(timeout=10)
    return errors


def test_writes_arriving_during_a_write_are_committed_together_in_order() -> None:
    batches: list[list[str]] = []
    release = threading.Event()

    def write(key: int, items: Sequence[str]) -> None:
        if not batches:
            release.wait(timeout=10)  # the first write is slow: the others queue behind it
        batches.append(list(items))

    group = GroupCommit(write)
    timer = threading.Timer(0.3, release.set)
    timer.start()
    assert _burst(group, ["a", "b", "c", "d"]) == []
    timer.join()
    assert batches == [["a"], ["b", "c", "d"]]


def test_a_failed_batch_is_retried_member_by_member_and_only_the_culprit_fails() -> None:
    written: list[list[str]] = []
    release = threading.Event()

    def write(key: int, items: Sequence[str]) -> None:
        if not written and items == ["a"]:
            release.wait(timeout=10)
        if "bad" in items:
            raise ValueError("refused")
        written.append(list(items))

    group = GroupCommit(write)
    timer = threading.Timer(0.3, release.set)
    timer.start()
    errors = _burst(group, ["a", "b", "bad", "c"])
    timer.join()
    assert [str(e) for e in errors] == ["refused"]
    assert written[0] == ["a"]
    assert sorted(item for batch in written[1:] for item in batch) == ["b", "c"]
