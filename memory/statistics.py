"""Planner statistics after a bulk write, at once rather than when autovacuum gets round to it.

A bulk load (an import, an embedding backfill) leaves PostgreSQL planning the next queries for a
table as it was before, or on a new database for an empty one, and autovacuum may be slow or off:
an exact scan where an index walk was due. SQLite plans from its indexes alone: nothing to do.

The refresh samples fewer rows than PostgreSQL's own ANALYZE (300 per unit of statistics target:
30,000 by default), which took 0.5-1.0 s at a million items, a sixth of each import's time at that
size. What a bulk load must not leave stale is coarse: how many rows a project, state and kind
hold, and that ids, refs and digests are unique. 3,000 rows tell that in 40 ms; autovacuum's
ANALYZE later refines the statistics at the table's full target.
"""

from __future__ import annotations

from django.db import connection, transaction

# default_statistics_target for the refresh: 300 rows sampled per unit.
SAMPLE_TARGET = 10


def statistics_refresh(*tables: str) -> None:
    """ANALYZE these tables on PostgreSQL (names from the models' `db_table`, never user input),
    sampling SAMPLE_TARGET x 300 rows of each."""
    if connection.vendor != "postgresql":
        return
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL default_statistics_target = {SAMPLE_TARGET:d}")
        for table in tables:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")
