"""Fixed-window counters in the Django cache: the one throttle every limit is built on.

Shared by every process when CACHE_URL is Redis; per process with the local-memory cache (the
embedded default has one process).
"""

from __future__ import annotations

import logging
import math
import time

from django.core.cache import cache

logger = logging.getLogger(__name__)


def window_hit(key: str, *, limit: int, window_seconds: int) -> int | None:
    """Count one event under `key`; the seconds until the window ends when over `limit`, else None."""
    window = max(int(window_seconds), 1)
    now = time.time()
    slot = int(now // window)
    counter = f"unforgetter:throttle:{key}:{slot}"
    # add() then incr(): atomic on Redis and on the local-memory cache alike.
    try:
        cache.add(counter, 0, timeout=window)
        try:
            count = cache.incr(counter)
        except ValueError:  # the key expired between add() and incr()
            cache.set(counter, 1, timeout=window)
            count = 1
    except Exception:
        # A shared cache that is down (Redis restarting) must not fail every call: the limit is
        # not counted until it is back.
        logger.warning("throttle counters unavailable: %s not counted", key.split(":", 1)[0])
        return None
    if count > limit:
        return max(math.ceil((slot + 1) * window - now), 1)
    return None
