"""The end of a unit of work on a thread the process keeps (request threads, write-behind).

A pooled PostgreSQL connection goes back to the pool after every unit (the pool owns connection
lifetime); an unpooled one (SQLite) stays open in its thread for the next unit. A connection
left unusable or inside a transaction is closed, never handed to the next unit.
"""

from __future__ import annotations

from django.db import connections


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
