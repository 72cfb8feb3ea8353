"""The Django cache, falling back to this process's memory while a shared cache (Redis) is down.

With CACHE_URL pointing at Redis the bundle cache, the per-credential rate, the login lockouts
and the registration throttle are shared by every process. When Redis is unreachable (restarting,
a closed port) a request must still be answered: each call then goes to a cache in this process's
memory, so bundles are cached per process and every limit counts per process until Redis answers
again (the embedded default, one process with a local-memory cache, behaves the same always). A
warning is logged once per outage, and Redis is not asked again for a few seconds, so an outage
costs the requests no connection attempts. Only connection failures fall back: a missing counter
(`incr` raising ValueError) is the cache's normal answer and passes through.

Large values (compiled bundles, ~17 KB pickled) are kept compressed, in either cache: a worker's
local cache holds up to 2,000 of them, 33 MB as plain pickles and about a quarter of that
compressed, and unpacking one costs tens of microseconds against the milliseconds of a call.
"""

from __future__ import annotations

import logging
import pickle
import sys
import threading
import time
import zlib
from typing import Any

from django.core.cache import cache as shared
from django.core.cache.backends.locmem import LocMemCache

logger = logging.getLogger(__name__)
# How long the shared cache is left alone after a failure before it is tried again.
RETRY_SHARED_AFTER_SECONDS = 5.0
# Values whose pickle is at least this long are stored compressed (see _packed).
PACK_MIN_BYTES = 1024


def _unreachable() -> tuple[type[BaseException], ...]:
    """Connection failures of the shared cache: redis-py's own errors, or the socket's.

    redis-py is not imported here: loading it costs a serving process 5 MB, and with the default
    local-memory cache nothing needs it. Django's Redis backend imports it before its first
    command, so by the time a RedisError can be raised the module is loaded and found here.
    """
    redis_exceptions = sys.modules.get("redis.exceptions")
    if redis_exceptions is None:
        return (OSError,)
    return (redis_exceptions.RedisError, OSError)


class _Packed(bytes):
    """A cached value kept as its compressed pickle (the caches pickle this bytes object as is)."""


def _packed(value: Any) -> Any:
    """What is stored for a value: large ones compressed; numbers, text and None as they are
    (`incr` adds to the stored counters)."""
    if value is None or isinstance(value, int | float | str | bytes):
        return value
    data = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    if len(data) < PACK_MIN_BYTES:
        return value
    return _Packed(zlib.compress(data, 1))


def _unpacked(value: Any) -> Any:
    if isinstance(value, _Packed):
        return pickle.loads(zlib.decompress(value))  # noqa: S301 - our own value, as the cache's pickles
    return value


class FallbackCache:
    """The operations the server uses, each tried on the shared cache, else on the local one."""

    def __init__(self) -> None:
        self.local = LocMemCache("unforgetter-fallback", {"OPTIONS": {"MAX_ENTRIES": 2000}})
        self._lock = threading.Lock()
        self._down_until = 0.0

    def _run(self, operation: str, *args: Any, **kwargs: Any) -> Any:
        if time.monotonic() >= self._down_until:
            try:
                result = getattr(shared, operation)(*args, **kwargs)
            except _unreachable() as exc:
                self._went_down(exc)
            else:
                if self._down_until:
                    self.reset()
                    logger.warning("shared cache reachable again: caching and limits shared again")
                return result
        return getattr(self.local, operation)(*args, **kwargs)

    def _went_down(self, exc: BaseException) -> None:
        with self._lock:
            first = self._down_until == 0.0
            self._down_until = time.monotonic() + RETRY_SHARED_AFTER_SECONDS
        if first:
            logger.warning(
                "shared cache unreachable (%s): caching and counting limits in this process's memory",
                type(exc).__name__,
            )

    def reset(self) -> None:
        """Forget an outage: the shared cache is asked on the next call."""
        with self._lock:
            self._down_until = 0.0

    def get(self, key: str, default: Any = None) -> Any:
        return _unpacked(self._run("get", key, default))

    def set(self, key: str, value: Any, timeout: int | None = None) -> None:
        self._run("set", key, _packed(value), timeout=timeout)

    def add(self, key: str, value: Any, timeout: int | None = None) -> bool:
        return bool(self._run("add", key, _packed(value), timeout=timeout))

    def incr(self, key: str, delta: int = 1) -> int:
        return int(self._run("incr", key, delta))

    def delete(self, key: str) -> None:
        self._run("delete", key)

    def clear(self) -> None:
        self.local.clear()
        self._run("clear")


cache = FallbackCache()
