"""The serving process caps glibc's malloc arenas (memory.heap.limit_malloc_arenas)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from memory.heap import MALLOC_ARENAS, limit_malloc_arenas

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's malloc only"
)

# Eight threads allocating at once, then malloc_info's count of heaps (one per arena).
_ARENAS_USED = """
import ctypes, sys, threading
from memory.heap import limit_malloc_arenas
print(limit_malloc_arenas())
barrier = threading.Barrier(8)
def work():
    kept = [bytearray(4096) for _ in range(64)]
    barrier.wait()
    kept += [bytearray(4096) for _ in range(64)]
    barrier.wait()
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
out = libc.fopen(sys.argv[1].encode(), b"w")
libc.malloc_info(0, out)
libc.fclose(out)
"""


def _arenas(tmp_path: Path, **env: str) -> tuple[str, int]:
    report = tmp_path / "malloc.xml"
    environment = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"} | env
    done = subprocess.run(
        [sys.executable, "-c", _ARENAS_USED, str(report)],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    return done.stdout.strip(), report.read_text().count("<heap nr=")


def test_threads_share_at_most_two_arenas(tmp_path: Path) -> None:
    applied, heaps = _arenas(tmp_path)
    assert applied == "True"
    assert 1 <= heaps <= MALLOC_ARENAS


def test_malloc_arena_max_in_the_environment_wins(tmp_path: Path) -> None:
    applied, heaps = _arenas(tmp_path, MALLOC_ARENA_MAX="3")
    assert applied == "False"
    assert heaps <= 3


def test_the_cap_is_left_alone_when_the_environment_sets_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_malloc_arenas() is False
