"""Per-credential limits on every agent call (MCP tools and REST): a rate, a concurrency, a budget.

- Rate: a credential may start UNFORGETTER["CREDENTIAL_CALLS_PER_SECOND"] calls a second (a
  one-second fixed window in the Django cache: shared by every process when CACHE_URL is Redis).
- Concurrency, per serving process (counters in memory, so a killed process never leaks a slot):
  at most CREDENTIAL_CONCURRENCY of a credential's calls run at once; further calls wait their
  turn (up to CREDENTIAL_QUEUE_SECONDS), so an agent's parallel calls all succeed, and at most
  CREDENTIAL_IN_FLIGHT may be running or waiting. One credential therefore never holds more than
  a few of a process's threads, whatever it sends: the other tenants' calls run beside it.
- Server time, per serving process: a token bucket of wall-clock milliseconds. Every call is
  charged the time it ran; a credential may spend CREDENTIAL_SERVER_MS_PER_SECOND on average, in
  bursts of up to CREDENTIAL_SERVER_MS_BURST. A call of a credential in debt waits until the debt
  is repaid (within CREDENTIAL_QUEUE_SECONDS, else it is refused). The concurrency limit bounds
  how many threads one credential holds; the budget bounds how long it holds them, so a stream
  of costly calls cannot keep the process's interpreter busy (Python runs one thread at a time:
  every other tenant's call waits for it). An agent makes a call at a time, of tens of
  milliseconds, and then thinks: it never comes near the budget. This is GitHub's secondary
  limit on CPU time per minute, kept per process (like the concurrency counters: a killed
  process leaks nothing, and a process's interpreter is what one credential must not monopolise).

Over a limit the call is refused with `rate_limited` and `retry_after` before any work is done.
An MCP call of a credential already refused for its rate this second is held on the event loop
until the second ends and then refused, without counting (see `credential_slot_async`).
0 switches a limit off. `refusals` counts refusals by limit for the metrics endpoint.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
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


class _ServerTime:
    """Token buckets of server milliseconds, one per credential, refilled as time passes."""

    def __init__(self) -> None:
        self._balance: dict[int, tuple[float, float]] = {}  # connection -> (ms, at monotonic s)

    def _refilled(self, connection_id: int, now: float, rate: int, burst: int) -> float:
        balance, at = self._balance.get(connection_id, (float(burst), now))
        return min(balance + (now - at) * rate, float(burst))

    def wait_seconds(self, connection_id: int) -> float:
        """How long the credential must wait before its next call: 0 unless it is in debt."""
        rate, burst = _limit("CREDENTIAL_SERVER_MS_PER_SECOND"), _limit("CREDENTIAL_SERVER_MS_BURST")
        if rate <= 0:
            return 0.0
        with _lock:
            balance = self._refilled(connection_id, time.monotonic(), rate, burst)
        return 0.0 if balance >= 0 else -balance / rate

    def clear(self) -> None:
        with _lock:
            self._balance.clear()

    def charge(self, connection_id: int, seconds: float) -> None:
        rate, burst = _limit("CREDENTIAL_SERVER_MS_PER_SECOND"), _limit("CREDENTIAL_SERVER_MS_BURST")
        if rate <= 0:
            return
        now = time.monotonic()
        with _lock:
            balance = self._refilled(connection_id, now, rate, burst) - seconds * 1000
            if balance >= burst:
                self._balance.pop(connection_id, None)  # full: nothing to remember
            else:
                self._balance[connection_id] = (balance, now)


server_time = _ServerTime()


def _budget_refusal(wait: float) -> RateLimited:
    refusals["server_time"] += 1
    return RateLimited(
        "This credential used its share of the server's time; retry when it is refilled.",
        retry_after=math.ceil(wait),
    )


def _budget_wait(connection_id: int, deadline: float | None) -> float:
    """Seconds to wait for the credential's budget; RateLimited when that ends past `deadline`."""
    wait = server_time.wait_seconds(connection_id)
    if wait and deadline is not None and time.monotonic() + wait > deadline:
        raise _budget_refusal(wait)
    return wait


def _queue_deadline() -> float | None:
    seconds = _limit("CREDENTIAL_QUEUE_SECONDS")
    return time.monotonic() + seconds if seconds else None


def _limit(name: str) -> int:
    return int(settings.UNFORGETTER.get(name) or 0)


# A credential this process refused for its rate is refused again, without counting, until its
# window ends (wall-clock second, as `window_hit` counts); MCP calls are held until then before
# the refusal is sent (a tarpit). A client that ignores retry_after would otherwise resend at
# once, and a flood of cheap refusals (each still authenticated and parsed) slowed other tenants
# more than the calls it was refused.
_over_rate_until: dict[int, float] = {}


def _rate_refusal(per_second: int, wait: int) -> RateLimited:
    refusals["rate"] += 1
    return RateLimited(
        f"This credential may start {per_second} calls a second; retry in {wait} s.", retry_after=wait
    )


def over_rate_clear() -> None:
    """Forget which credentials were over their rate (tests: flushed databases reuse ids)."""
    _over_rate_until.clear()


def _over_rate(connection_id: int) -> float | None:
    """Seconds left in the rate window of a credential this process found over its rate, or None.

    No I/O: MCP calls ask this on the event loop before taking a slot or a thread.
    """
    until = _over_rate_until.get(connection_id)
    if until is None:
        return None
    left = until - time.time()
    if left <= 0:
        _over_rate_until.pop(connection_id, None)
        return None
    return left


def over_rate(connection_id: int) -> bool:
    """Whether this process holds the credential's calls until its rate window ends (no I/O)."""
    return _over_rate(connection_id) is not None


def _over_rate_refusal() -> RateLimited:
    """The refusal of a call held until its credential's rate window ended."""
    return _rate_refusal(_limit("CREDENTIAL_CALLS_PER_SECOND"), 1)


def credential_rate_check(connection_id: int) -> None:
    """Count one call of the credential; RateLimited when it is over its calls per second."""
    per_second = _limit("CREDENTIAL_CALLS_PER_SECOND")
    if per_second <= 0:
        return
    wait = window_hit(f"calls:{connection_id}", limit=per_second, window_seconds=1)
    if wait is not None:
        _over_rate_until[connection_id] = math.floor(time.time()) + 1.0
        raise _rate_refusal(per_second, wait)


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


@contextmanager
def _metered(connection_id: int) -> Iterator[None]:
    """Charge the credential's budget the wall-clock time the block ran."""
    started = time.monotonic()
    try:
        yield
    finally:
        server_time.charge(connection_id, time.monotonic() - started)


def _queue_refusal() -> RateLimited:
    refusals["queue"] += 1
    return RateLimited("This credential's calls are queued behind each other for too long.", retry_after=1)


@asynccontextmanager
async def credential_slot_async(connection_id: int) -> AsyncIterator[None]:
    """Run the block as one of the credential's concurrent calls (the MCP tools, on the event loop).

    A credential already over its rate this second is held here (no thread, no slot) until the
    second ends, then refused: a client that ignores retry_after cannot flood the process.
    """
    held = _over_rate(connection_id)
    if held is not None:
        await asyncio.sleep(held)
        raise _over_rate_refusal()
    with _counted(connection_id):
        deadline = _queue_deadline()
        running = _limit("CREDENTIAL_CONCURRENCY")
        gate = None
        if running > 0:
            with _lock:
                gate = _async_gates.setdefault((connection_id, running), asyncio.Semaphore(running))
            try:
                await asyncio.wait_for(gate.acquire(), timeout=_limit("CREDENTIAL_QUEUE_SECONDS") or None)
            except TimeoutError:
                raise _queue_refusal() from None
        try:
            while wait := _budget_wait(connection_id, deadline):
                await asyncio.sleep(wait)
            with _metered(connection_id):
                yield
        finally:
            if gate is not None:
                gate.release()


@contextmanager
def credential_slot(connection_id: int) -> Iterator[None]:
    """Run the block as one of the credential's concurrent calls (REST views, in a thread)."""
    with _counted(connection_id):
        deadline = _queue_deadline()
        running = _limit("CREDENTIAL_CONCURRENCY")
        gate = None
        if running > 0:
            with _lock:
                gate = _sync_gates.setdefault((connection_id, running), threading.Semaphore(running))
            if not gate.acquire(timeout=_limit("CREDENTIAL_QUEUE_SECONDS") or None):
                raise _queue_refusal()
        try:
            while wait := _budget_wait(connection_id, deadline):
                time.sleep(wait)
            with _metered(connection_id):
                yield
        finally:
            if gate is not None:
                gate.release()
