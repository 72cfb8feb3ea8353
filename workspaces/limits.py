"""Per-credential limits on every agent call (MCP tools and REST): a rate and a concurrency.

- Rate: a credential may start UNFORGETTER["CREDENTIAL_CALLS_PER_SECOND"] calls a second (a
  one-second fixed window in the Django cache: shared by every process when CACHE_URL is Redis).
- Concurrency, per serving process (counters in memory, so a killed process never leaks a slot):
  at most CREDENTIAL_CONCURRENCY of a credential's calls run at once; further calls wait their
  turn (up to CREDENTIAL_QUEUE_SECONDS), so an agent's parallel calls all succeed, and at most
  CREDENTIAL_IN_FLIGHT may be running or waiting. One credential therefore never holds more than
  a few of a process's threads, whatever it sends: the other tenants' calls run beside it.

Over a limit the call is refused with `rate_limited` and `retry_after` before any work is done.
0 switches a limit off. `refusals` counts refusals by limit for the metrics endpoint.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

from django.conf import settings

from workspaces.exceptions import RateLimited
from workspaces.throttle import window_hit

_lock = threading.Lock()
_in_flight: Counter[int] = Counter()
_async_gates: dict[tuple[int, int], asyncio.Semaphore] = {}
_sync_gates: dict[tuple[int, int], threading.Semaphore] = {}
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
def _counted(connection_id: int) -> Iterator[None]:
    limit = _limit("CREDENTIAL_IN_FLIGHT")
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


def _queue_refusal() -> RateLimited:
    refusals["queue"] += 1
    return RateLimited("This credential's calls are queued behind each other for too long.", retry_after=1)


@asynccontextmanager
async def credential_slot_async(connection_id: int) -> AsyncIterator[None]:
    """Run the block as one of the credential's concurrent calls (the MCP tools, on the event loop)."""
    with _counted(connection_id):
        running = _limit("CREDENTIAL_CONCURRENCY")
        if running <= 0:
            yield
            return
        with _lock:
            gate = _async_gates.setdefault((connection_id, running), asyncio.Semaphore(running))
        try:
            await asyncio.wait_for(gate.acquire(), timeout=_limit("CREDENTIAL_QUEUE_SECONDS") or None)
        except TimeoutError:
            raise _queue_refusal() from None
        try:
            yield
        finally:
            gate.release()


@contextmanager
def credential_slot(connection_id: int) -> Iterator[None]:
    """Run the block as one of the credential's concurrent calls (REST views, in a thread)."""
    with _counted(connection_id):
        running = _limit("CREDENTIAL_CONCURRENCY")
        if running <= 0:
            yield
            return
        with _lock:
            gate = _sync_gates.setdefault((connection_id, running), threading.Semaphore(running))
        if not gate.acquire(timeout=_limit("CREDENTIAL_QUEUE_SECONDS") or None):
            raise _queue_refusal()
        try:
            yield
        finally:
            gate.release()
