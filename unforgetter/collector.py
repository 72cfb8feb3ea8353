"""The serving process's garbage collector after start-up (malloc's arenas: memory.heap).

CPython's cyclic collector now and then runs a full collection that walks every tracked object.
A serving process holds a couple of hundred thousand that live as long as it does (Django, the MCP
SDK, pydantic's validators), so each full collection took 100-160 ms here and landed on whichever
request was running: a latency spike that has nothing to do with the request. Once start-up is
done, those objects are moved out of the collector's sight (`gc.freeze`, as large Django fleets
do); young collections are unchanged, and what later calls allocate is collected as before.
"""

from __future__ import annotations

import gc


def settle_after_startup() -> None:
    """Collect start-up's garbage once, then keep everything alive so far out of later collections."""
    gc.collect()
    gc.freeze()
