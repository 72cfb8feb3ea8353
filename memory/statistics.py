"""Planner statistics after a bulk write, at once rather than when autovacuum gets round to it.

A bulk load (an import, an embedding backfill) leaves PostgreSQL planning the next queries for a
table as it was before, or on a new database for an empty one, and autovacuum may be slow or off:
an exact scan where an index walk was due. SQLite plans from its indexes alone: nothing to do.
"""

from __future__ import annotations

from django.db import connection


def statistics_refresh(*tables: str) -> None:
    """ANALYZE these tables on PostgreSQL (names from the models' `db_table`, never user input)."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")
