"""Fixed-window counters in the Django cache: the one throttle every limit is built on.

Shared by every process when CACHE_URL is Redis; per process with the local-memory cache (the
embedded default has one process), and while Redis is down.
"""

from __future__ import annotations

import math
import time

from workspaces.caches import cache


def window_hit(key: str, *, limit: int, window_seconds: int) -> int | None:
    """Count one event under `key`; the seconds until the window ends when over `limit`, else None."""
    window = max(int(window_seconds), 1)
    now = time.time()
    slot = int(now // window)
    counter = f"unforgetter:throttle:{key}:{slot}"
    # add() then incr(): atomic on Redis and on the local-memory cache alike. With Redis down
    # the counters are this process's (workspaces.caches): the limit holds per process.
    cache.add(counter, 0, timeout=window)
    try:
        count = cache.incr(counter)
    except ValueError:  # the key expired between add() and incr()
        cache.set(counter, 1, timeout=window)
        count = 1
    if count > limit:
        return max(math.ceil((slot + 1) * window - now), 1)
    return None
