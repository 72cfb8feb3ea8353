"""Full-text search over Fact.text, one implementation per database.

PostgreSQL: a stored generated tsvector column and a GIN index on it.
SQLite: an external-content FTS5 table kept in step with memory_fact by triggers.
The column and table are not model fields: memory.search queries them directly.
"""

from django.db import migrations

POSTGRESQL_FORWARD = [
    "ALTER TABLE memory_fact ADD COLUMN search_vector tsvector "
    "GENERATED ALWAYS AS (to_tsvector('english', text)) STORED",
    "CREATE INDEX memory_fact_search_gin ON memory_fact USING GIN (search_vector)",
]
POSTGRESQL_REVERSE = [
    "DROP INDEX IF EXISTS memory_fact_search_gin",
    "ALTER TABLE memory_fact DROP COLUMN IF EXISTS search_vector",
]

SQLITE_FORWARD = [
    "CREATE VIRTUAL TABLE memory_fact_fts USING fts5("
    "text, content='memory_fact', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE TRIGGER memory_fact_fts_insert AFTER INSERT ON memory_fact BEGIN "
    "INSERT INTO memory_fact_fts(rowid, text) VALUES (new.id, new.text); END",
    "CREATE TRIGGER memory_fact_fts_delete AFTER DELETE ON memory_fact BEGIN "
    "INSERT INTO memory_fact_fts(memory_fact_fts, rowid, text) VALUES ('delete', old.id, old.text); END",
    "CREATE TRIGGER memory_fact_fts_update AFTER UPDATE OF text ON memory_fact BEGIN "
    "INSERT INTO memory_fact_fts(memory_fact_fts, rowid, text) VALUES ('delete', old.id, old.text); "
    "INSERT INTO memory_fact_fts(rowid, text) VALUES (new.id, new.text); END",
    "INSERT INTO memory_fact_fts(memory_fact_fts) VALUES ('rebuild')",
]
SQLITE_REVERSE = [
    "DROP TRIGGER IF EXISTS memory_fact_fts_update",
    "DROP TRIGGER IF EXISTS memory_fact_fts_delete",
    "DROP TRIGGER IF EXISTS memory_fact_fts_insert",
    "DROP TABLE IF EXISTS memory_fact_fts",
]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("memory", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"postgresql": POSTGRESQL_FORWARD, "sqlite": SQLITE_FORWARD}),
            _run({"postgresql": POSTGRESQL_REVERSE, "sqlite": SQLITE_REVERSE}),
        ),
    ]
