"""The foreign keys of memory_fact that are empty on most rows get partial indexes, and PostgreSQL's
LIKE index on `ref` goes.

`supersedes`, `proposal` and `edited_by` are NULL on every row an import inserts, yet each full
index took an entry per row. Their lookups (`= id`, `IN (...)`: deletes, reverse relations) only
ask for set values, which a `WHERE ... IS NOT NULL` index answers on SQLite and PostgreSQL alike.

The old indexes are dropped by name rather than through AlterField, which on SQLite would copy the
whole table once per field. Nothing matches refs by pattern, so the `varchar_pattern_ops` index
PostgreSQL was given for the unique `ref` only cost every insert a random-position entry.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

# (column, Django's name for its old index); the names are derived from the table and column.
_FOREIGN_KEY_INDEXES = (
    ("edited_by_id", "memory_fact_edited_by_id_6b81db42"),
    ("proposal_id", "memory_fact_proposal_id_bc3fe303"),
    ("supersedes_id", "memory_fact_supersedes_id_24e314e2"),
)
_REF_LIKE_INDEX = "memory_fact_ref_0f9bee62_like"


def _ref_like_index_drop(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f'DROP INDEX IF EXISTS "{_REF_LIKE_INDEX}"')


def _ref_like_index_create(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS "{_REF_LIKE_INDEX}" ON "memory_fact" ("ref" varchar_pattern_ops)'
        )


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0013_merge_pgvector_fulltext_drop"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="fact",
                    name="edited_by",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.AlterField(
                    model_name="fact",
                    name="proposal",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="facts",
                        to="memory.proposal",
                    ),
                ),
                migrations.AlterField(
                    model_name="fact",
                    name="supersedes",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="superseded_by",
                        to="memory.fact",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{name}"',
                    reverse_sql=f'CREATE INDEX "{name}" ON "memory_fact" ("{column}")',
                )
                for column, name in _FOREIGN_KEY_INDEXES
            ],
        ),
        migrations.AddIndex(
            model_name="fact",
            index=models.Index(
                condition=models.Q(("supersedes__isnull", False)),
                fields=["supersedes"],
                name="fact_supersedes",
            ),
        ),
        migrations.AddIndex(
            model_name="fact",
            index=models.Index(
                condition=models.Q(("proposal__isnull", False)), fields=["proposal"], name="fact_proposal"
            ),
        ),
        migrations.AddIndex(
            model_name="fact",
            index=models.Index(
                condition=models.Q(("edited_by__isnull", False)), fields=["edited_by"], name="fact_edited_by"
            ),
        ),
        migrations.RunPython(_ref_like_index_drop, _ref_like_index_create),
    ]
