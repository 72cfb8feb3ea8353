"""The end of a unit of work on a thread the process keeps (request threads, write-behind).

A pooled PostgreSQL connection goes back to the pool after every unit (the pool owns connection
lifetime); an unpooled one (SQLite) stays open in its thread for the next unit. A connection
left unusable or inside a transaction is closed, never handed to the next unit.
"""

from __future__ import annotations

from contextvars import ContextVar

from django.db import connections

# Set in a unit run on the event loop's own thread (mcpbridge.threads.on_event_loop): whatever it
# waits for, every request of its process waits for too.
_holds_loop: ContextVar[bool] = ContextVar("unforgetter_holds_loop", default=False)


def holds_loop() -> bool:
    """Whether the current unit of work runs on the event loop's thread (and holds it)."""
    return _holds_loop.get()


def holding_loop() -> None:
    """Mark the current context's unit as run on the event loop (a copy made for the unit)."""
    _holds_loop.set(True)


def release_connections() -> None:
    """End a unit of work: return pooled connections, keep healthy unpooled ones for the thread."""
    for conn in connections.all(initialized_only=True):
        if conn.connection is None:
            continue
        pooled = bool(conn.settings_dict.get("OPTIONS", {}).get("pool"))
        unusable = conn.errors_occurred and not conn.is_usable()
        broken = conn.in_atomic_block or not conn.get_autocommit() or unusable
        if pooled or broken:
            conn.close()
        else:
            conn.errors_occurred = False
