"""Indexes for bulk import: the text digest it looks items up by (memory.models.text_digest),
backfilled for the rows already there; and no single-column indexes on workspace and project,
which the composite indexes lead with, so each inserted row maintains two indexes fewer."""

import hashlib
import importlib

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# Adding a column rebuilds memory_fact on SQLite and drops the full-text triggers: as in 0006.
_restore_sqlite_fulltext = importlib.import_module(
    "memory.migrations.0006_fact_origin"
)._restore_sqlite_fulltext
_BATCH = 2_000
_SINGLE_COLUMN_INDEXES = (
    ("memory_fact_project_id_14cf67b3", "project_id"),
    ("memory_fact_workspace_id_6933276f", "workspace_id"),
)


def _digest(text: str) -> int:
    # Frozen copy of memory.models.text_digest: a migration must not change when the model does.
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big", signed=True)


def backfill(apps, schema_editor):
    Fact = apps.get_model("memory", "Fact")
    last = 0
    while True:
        rows = list(Fact.objects.filter(pk__gt=last).order_by("pk").values_list("pk", "text")[:_BATCH])
        if not rows:
            return
        Fact.objects.bulk_update(
            [Fact(pk=pk, text_digest=_digest(text)) for pk, text in rows], ["text_digest"], batch_size=_BATCH
        )
        last = rows[-1][0]


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0009_embedding"),
        ("workspaces", "0003_workspace_deletion"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="fact",
            name="text_digest",
            field=models.BigIntegerField(default=0, editable=False),
        ),
        migrations.RunPython(_restore_sqlite_fulltext, migrations.RunPython.noop),
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=True),
        migrations.AddIndex(
            model_name="fact",
            index=models.Index(fields=["project", "text_digest"], name="fact_project_text_digest"),
        ),
        # Only the indexes go: on SQLite an AlterField would rebuild the table and lose the
        # full-text triggers (0002), and the index names are the same on both databases.
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    f"DROP INDEX IF EXISTS {index}", f"CREATE INDEX {index} ON memory_fact ({column})"
                )
                for index, column in _SINGLE_COLUMN_INDEXES
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="fact",
                    name="project",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="facts",
                        to="workspaces.project",
                    ),
                ),
                migrations.AlterField(
                    model_name="fact",
                    name="workspace",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="facts",
                        to="workspaces.workspace",
                    ),
                ),
            ],
        ),
    ]
