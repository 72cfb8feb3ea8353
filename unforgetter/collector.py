"""The serving process's memory housekeeping: the garbage collector after start-up, malloc's arenas.

CPython's cyclic collector now and then runs a full collection that walks every tracked object.
A serving process holds a couple of hundred thousand that live as long as it does (Django, the MCP
SDK, pydantic's validators), so each full collection took 100-160 ms here and landed on whichever
request was running: a latency spike that has nothing to do with the request. Once start-up is
done, those objects are moved out of the collector's sight (`gc.freeze`, as large Django fleets
do); young collections are unchanged, and what later calls allocate is collected as before.

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
import gc
import os

MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # glibc's malloc.h


def settle_after_startup() -> None:
    """Collect start-up's garbage once, then keep everything alive so far out of later collections."""
    gc.collect()
    gc.freeze()


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Cap glibc's malloc arenas (before the process starts its threads); False where it cannot.

    Nothing is changed when MALLOC_ARENA_MAX is set (glibc already applied it) or the C library
    is not glibc.
    """
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c")).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(_M_ARENA_MAX, arenas))
