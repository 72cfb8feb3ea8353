"""Per-credential limits on every agent call (MCP tools and REST): a rate and a concurrency.

A credential may start at most UNFORGETTER["CREDENTIAL_CALLS_PER_SECOND"] calls a second (a
one-second fixed window in the Django cache: shared by every process when CACHE_URL is Redis) and
have at most UNFORGETTER["CREDENTIAL_CONCURRENCY"] calls in flight in one serving process (a
counter in memory, so a killed process never leaks a slot). Over either limit the call is refused
with `rate_limited` and `retry_after` before any work is done, so one noisy token cannot take
the serving processes from every other tenant. 0 switches a limit off.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings

from workspaces.exceptions import RateLimited
from workspaces.throttle import window_hit

_lock = threading.Lock()
_in_flight: Counter[int] = Counter()
# Refusals since the process started, by limit, for the metrics endpoint.
refusals: Counter[str] = Counter()


def _limit(name: str) -> int:
    return int(settings.UNFORGETTER.get(name) or 0)


def credential_rate_check(connection_id: int) -> None:
    """Count one call of the credential; RateLimited when it is over its calls per second."""
    per_second = _limit("CREDENTIAL_CALLS_PER_SECOND")
    if per_second <= 0:
        return
    wait = window_hit(f"calls:{connection_id}", limit=per_second, window_seconds=1)
    if wait is not None:
        refusals["rate"] += 1
        raise RateLimited(
            f"This credential may start {per_second} calls a second; retry in {wait} s.", retry_after=wait
        )


@contextmanager
def credential_slot(connection_id: int) -> Iterator[None]:
    """Hold one of the credential's concurrent call slots in this process for the block."""
    limit = _limit("CREDENTIAL_CONCURRENCY")
    with _lock:
        if 0 < limit <= _in_flight[connection_id]:
            refusals["concurrency"] += 1
            raise RateLimited(
                f"This credential already has {limit} calls in progress; retry when one has finished.",
                retry_after=1,
            )
        _in_flight[connection_id] += 1
    try:
        yield
    finally:
        with _lock:
            _in_flight[connection_id] -= 1
            if _in_flight[connection_id] <= 0:
                del _in_flight[connection_id]
