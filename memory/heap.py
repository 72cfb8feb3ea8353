"""Handing memory freed after building an in-process index back to the operating system.

Building a project's word or vector index allocates several times what the index keeps (rows
read from the database, token arrays, numpy's sort of the pairs). glibc keeps most of that freed
memory mapped in the process (100+ MB at 100,000 items), so a web worker's resident size would
stay at its build-time peak; `malloc_trim` returns it. Elsewhere (other C libraries) it does
nothing.

Calls free memory too, in smaller pieces: each compiles a bundle, reads rows and scores, and glibc
returns to the system only the free space at the top of its heap. After a few hundred calls at
1M items a worker held 10-15 MB of freed pages inside its heap. A serving process therefore also
trims every TRIM_EVERY_SECONDS on a thread of its own (`trim_periodically`): a trim took 0.6 ms at
that size, and holds each malloc arena only while it walks it.

glibc's malloc gives each new thread that allocates while the others hold theirs an arena of its
own, up to 8 per core (16 here): a worker's request threads (MCP_REQUEST_THREADS) each end up
with one, and each arena keeps the memory its thread freed for itself. At 100,000 items that was
25-30 MB of a worker's resident memory after a few hundred concurrent calls. Two arenas (one per
core of this machine kind) keep that down with no measurable cost; MALLOC_ARENA_MAX in the
environment, read by glibc itself, still wins.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import threading
from collections.abc import Callable

TRIM_EVERY_SECONDS = 5.0
MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # glibc's malloc.h


@functools.cache
def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c"))
    except OSError:
        return None


def _malloc_trim() -> Callable[[int], int] | None:
    trim: Callable[[int], int] | None = getattr(_libc(), "malloc_trim", None)
    return trim


def release_freed_memory() -> None:
    """Return the heap's free pages to the operating system, where the C library can."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


_trimming: threading.Event | None = None
_trimming_lock = threading.Lock()


def trim_periodically(every: float = TRIM_EVERY_SECONDS) -> None:
    """Return freed heap pages every `every` seconds from a daemon thread, once per process."""
    global _trimming
    with _trimming_lock:
        if _trimming is not None or _malloc_trim() is None:
            return
        stop = _trimming = threading.Event()

    def run() -> None:
        while not stop.wait(every):
            release_freed_memory()

    threading.Thread(target=run, name="heap-trim", daemon=True).start()


def trim_periodically_stop() -> None:
    """Stop the thread started by trim_periodically (a later call starts a new one)."""
    global _trimming
    with _trimming_lock:
        if _trimming is not None:
            _trimming.set()
            _trimming = None


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Cap glibc's malloc arenas (before the process starts its threads); False where it cannot.

    Nothing is changed when MALLOC_ARENA_MAX is set (glibc already applied it) or the C library
    is not glibc.
    """
    mallopt = getattr(_libc(), "mallopt", None)
    if "MALLOC_ARENA_MAX" in os.environ or mallopt is None:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(_M_ARENA_MAX, arenas))
