"""Work a call owes but its answer need not wait for: run once the answer is on its way.

A new bundle is kept in the bundle cache, which changes nothing the agent is sent (its audit
record, a ContextRequest row, is queued for a write-behind thread instead: workspaces.write_behind,
which asks `deferring()`). Like Starlette's background tasks, a server that
answers a call itself (mcpbridge.direct) collects such work while the call runs (`collected`) and
runs it right after writing the response (`run_collected`), in a request thread. Anywhere else
(the SDK's path, a management command, a test calling a service) `after_answer` runs the work at
once, as before.

What the work may lose: an answer already sent cannot report its failure, so a failure is logged
(never raised), and a worker killed in the millisecond between the answer and the work loses
the work. Only records of reads are deferred this way, never memory or a proposal.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

logger = logging.getLogger(__name__)

Work = Callable[[], None]
_collecting: ContextVar[list[Work] | None] = ContextVar("after_answer", default=None)


def after_answer(work: Work) -> None:
    """Run `work` once the answer is sent, where the server collects such work; else now."""
    collecting = _collecting.get()
    if collecting is None:
        work()
    else:
        collecting.append(work)


def deferring() -> bool:
    """Whether work `after_answer` is given now runs after the answer (not at once)."""
    return _collecting.get() is not None


@contextmanager
def collected() -> Iterator[list[Work]]:
    """Collect the work `after_answer` is given inside this block (into the list yielded)."""
    work: list[Work] = []
    token = _collecting.set(work)
    try:
        yield work
    finally:
        _collecting.reset(token)


def run_collected(work: list[Work]) -> None:
    """Run collected work in order; a failure is logged and the rest still runs."""
    for item in work:
        try:
            item()
        except Exception:
            logger.exception("work owed after an answer failed")
