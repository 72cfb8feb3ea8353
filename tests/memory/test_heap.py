"""The serving process's heap trimmer (memory.heap.trim_periodically)."""

from __future__ import annotations

import threading
import time

import pytest

from memory import heap

pytestmark = pytest.mark.skipif(heap._malloc_trim() is None, reason="needs glibc's malloc_trim")


def _trimmers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "heap-trim"]


def test_one_trimmer_per_process_trims_until_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    trimmed = threading.Event()
    monkeypatch.setattr(heap, "release_freed_memory", trimmed.set)
    heap.trim_periodically(every=0.01)
    heap.trim_periodically(every=0.01)
    try:
        assert len(_trimmers()) == 1
        assert trimmed.wait(5)
    finally:
        heap.trim_periodically_stop()
    deadline = time.monotonic() + 5
    while _trimmers() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _trimmers()
