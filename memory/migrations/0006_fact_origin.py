"""Fact.origin: an imported item's id in the tool it came from (memory/imports.py).

On SQLite, adding a column rebuilds memory_fact, which drops the triggers that keep the FTS5
index in step (0002); they are created again and the index rebuilt, so search keeps working.
"""

import importlib

from django.conf import settings
from django.db import migrations, models

_fulltext = importlib.import_module("memory.migrations.0002_fact_fulltext_index")


def _restore_sqlite_fulltext(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    for statement in _fulltext.SQLITE_REVERSE[:3]:  # the triggers, if any survived
        schema_editor.execute(statement)
    for statement in _fulltext.SQLITE_FORWARD[1:]:  # the triggers again, then a rebuild
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0005_proposal_ref_unique"),
        ("workspaces", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="fact",
            name="origin",
            field=models.CharField(
                blank=True, default="", help_text="Its id in the tool it was imported from.", max_length=200
            ),
        ),
        migrations.AddIndex(
            model_name="fact",
            index=models.Index(fields=["project", "origin"], name="fact_project_origin"),
        ),
        migrations.RunPython(_restore_sqlite_fulltext, migrations.RunPython.noop),
    ]
