"""Where an MCP request's synchronous work runs: a fixed pool of request threads.

Django's ORM is synchronous, so the credential check and the tool each run in a thread. asgiref's
default for a request (a ThreadSensitiveContext) starts a new thread per request, and with it a
new database connection (a SQLite file opened and its pragmas run, or a pool checkout), and
Django's request signals add a thread hop each. Here the threads are started once per process
and kept: a pooled PostgreSQL connection goes back to the pool after every unit of work (the pool
owns connection lifetime), an unpooled one (SQLite) stays open in its thread for the next request.
A connection left unusable or inside a transaction is closed, never handed to the next request.

A call that is the only one a worker is serving may instead run as a unit on the event loop's own
thread (`on_event_loop`): no hop at all. Handing a call to a thread and its result back to the
loop are two wake-ups of a sleeping thread, 0.3-0.6 ms of a call on this project's virtual
machines, a tenth of a bundle's time (mcpbridge.direct decides which calls may).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from django.conf import settings

from workspaces.units import holding_loop, release_connections

P = ParamSpec("P")
T = TypeVar("T")

_executor: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _executor
    if _executor is None:
        _executor = ThreadPoolExecutor(
            max_workers=settings.UNFORGETTER["MCP_REQUEST_THREADS"], thread_name_prefix="mcp-request"
        )
    return _executor


def _unit(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    try:
        return fn(*args, **kwargs)
    finally:
        release_connections()


def on_event_loop(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run `fn` as a unit of work here, on the running event loop's thread, with the caller's
    context variables (a copy, as in a request thread); the loop serves nothing meanwhile.

    Django refuses database work on a thread whose event loop is running
    (SynchronousOnlyOperation: a coroutine would block the loop unawares). Here blocking it is the
    point, and it runs nothing else until `fn` returns, so the loop is marked as not running for
    the unit and marked again after it.
    """
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    context.run(holding_loop)  # what the unit waits for, it bounds (memory.embeddings)
    unit: Callable[[], T] = functools.partial(_unit, fn, *args, **kwargs)
    asyncio._set_running_loop(None)
    try:
        return context.run(unit)
    finally:
        asyncio._set_running_loop(loop)


async def in_request_thread(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run `fn` in a request thread with the caller's context variables; one executor hop."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    unit: Callable[[], T] = functools.partial(_unit, fn, *args, **kwargs)
    return await loop.run_in_executor(_pool(), context.run, unit)
