"""pgvector's copy of the vectors, where PostgreSQL has the extension (memory.embeddings.pgvector).

Conditional SQL only, no change to Django's state: on SQLite, or on a PostgreSQL without the
extension (or a role that may not create it), nothing happens and the in-process index serves.
A database that already holds vectors gets the column here and is filled by
`manage.py pgvector_sync`.
"""

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

from memory.embeddings import pgvector


def install_where_available(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    pgvector.install(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0011_merge_fact_project_id_text_digest"),
    ]

    operations = [
        # The reverse keeps the column: derived data, harmless to the earlier schema.
        migrations.RunPython(install_where_available, migrations.RunPython.noop, elidable=False),
    ]
