"""fact_project_origin holds only the rows that have an origin.

Most rows have none (every item of a CLAUDE.md or AGENTS.md, every line of a JSONL file without
ids), yet each took an entry that every import paid for and no lookup could ask for: the import's
only query on it asks for set origins (memory.imports), and now says `origin > ''` so that SQLite
and PostgreSQL alike can use the partial index.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0014_fact_foreign_key_indexes_partial"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="fact", name="fact_project_origin"),
        migrations.AddIndex(
            model_name="fact",
            index=models.Index(
                condition=models.Q(("origin__gt", "")), fields=["project", "origin"], name="fact_project_origin"
            ),
        ),
    ]
