"""Handing memory freed after building an in-process index back to the operating system.

Building a project's word or vector index allocates several times what the index keeps (rows
read from the database, token arrays, numpy's sort of the pairs). glibc keeps most of that freed
memory mapped in the process (100+ MB at 100,000 items), so a web worker's resident size would
stay at its build-time peak; `malloc_trim` returns it. Elsewhere (other C libraries) it does
nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


def release_freed_memory() -> None:
    """Return the heap's free pages to the operating system, where the C library can."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
