"""Drop the database's full-text index over Fact.text (added by 0002), on both databases.

Nothing queries it any more: agents' searches and the console's every-word filter match words
in process (memory.lexical_index, memory.word_filter). Keeping it cost most of an import's time:
an FTS5 trigger per row on SQLite, a generated tsvector and its GIN entries on PostgreSQL.
Reversing restores it as 0002 made it, rebuilt from the rows.
"""

from importlib import import_module

from django.db import migrations

# 0002's statements, run the other way round (its module name is not an identifier).
_added = import_module("memory.migrations.0002_fact_fulltext_index")


class Migration(migrations.Migration):
    dependencies = [("memory", "0011_merge_fact_project_id_text_digest")]

    operations = [
        migrations.RunPython(
            _added._run({"postgresql": _added.POSTGRESQL_REVERSE, "sqlite": _added.SQLITE_REVERSE}),
            _added._run({"postgresql": _added.POSTGRESQL_FORWARD, "sqlite": _added.SQLITE_FORWARD}),
        ),
    ]
