"""pgvector where PostgreSQL has it, the in-process index where not: through the MCP SDK client.

The semantic retrieval tests (test_semantic_retrieval.py) run on both vector stores; these pin
what is particular to pgvector (opt-in: PGVECTOR on here): that no process then holds a project's
vectors, that every vector has its copy (with PGVECTOR off too), that a database which had vectors
before the extension is filled by `manage.py pgvector_sync`, and that without the extension
everything falls back cleanly.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.test import override_settings

from memory import embeddings
from memory.embeddings import pgvector
from memory.embeddings.index import indexes
from memory.models import Embedding
from memory.services.embeddings import embeddings_refresh
from tests.conftest import LiveServer, Tenant
from tests.readpath import RecordingMCPClient, _fresh_bundle_cache, add_item, sdk_factory  # noqa: F401

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(embeddings.embedder() is None, reason="the local model's package is not installed"),
]

DEPLOYS = "The web frontend is deployed to production every Tuesday."
PARAPHRASE = "On which weekday do we ship the site to prod?"
TASK = "Ship a hotfix for the site to prod on the right weekday"


@pytest.fixture
def sdk(live: LiveServer) -> Callable[..., RecordingMCPClient]:
    return sdk_factory(live)


@pytest.fixture(autouse=True)
def pgvector_on() -> Iterator[None]:
    """PGVECTOR on (it is opt-in): whatever serves below is for want of the extension or its copy."""
    with override_settings(UNFORGETTER={**settings.UNFORGETTER, "PGVECTOR": True}):
        yield


@pytest.fixture
def needs_pgvector(live: LiveServer) -> None:
    if not pgvector.enabled():
        pytest.skip("needs PostgreSQL with the pgvector extension (0.8 or later) installed")


@pytest.fixture
def redetected() -> Iterator[None]:
    """The test changes what detection sees: look again afterwards, as the session began."""
    yield
    pgvector.forget()
    if connection.vendor == "postgresql":
        pgvector.state()


def _items(tenant: Tenant) -> str:
    platform = tenant.projects["platform"]
    for text in ["Kafka topics are named after their producer.", "Payroll questions go to the people team."]:
        add_item(platform, text)
    return add_item(platform, DEPLOYS).ref


def _search(client: RecordingMCPClient, query: str) -> list[str]:
    return [
        r["ref"] for r in client.ok("search_memory", {"project_id": "platform", "query": query})["results"]
    ]


def _copies() -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {pgvector.TABLE} WHERE {pgvector.COLUMN} IS NOT NULL")  # noqa: S608
        return int(cursor.fetchone()[0])


def _model() -> str:
    model = embeddings.embedder()
    assert model is not None
    return model.name


@pytest.mark.usefixtures("needs_pgvector")
def test_with_pgvector_searches_find_meaning_without_holding_vectors_in_process(
    tenant: Tenant, sdk, mode: str
) -> None:
    deploys = _items(tenant)
    embeddings_refresh()
    assert _copies() == Embedding.objects.count() == 3
    client = sdk(tenant.issue()[0], mode)
    assert _search(client, PARAPHRASE) == [deploys]
    bundle = client.ok("get_context", {"project_id": "platform", "task": TASK})
    assert deploys in [f["ref"] for f in bundle["facts"]]
    assert not indexes.holds(tenant.projects["platform"].pk, _model())
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = %s", [pgvector.index_name(_model())]
        )
        assert "USING hnsw" in cursor.fetchone()[0]


@pytest.mark.usefixtures("needs_pgvector")
def test_pgvector_off_keeps_the_in_process_index_and_the_copies_complete(
    tenant: Tenant, sdk, mode: str
) -> None:
    deploys = _items(tenant)
    embeddings_refresh()
    assert _copies() == Embedding.objects.count() == 3  # turning PGVECTOR on later needs no sync
    with override_settings(UNFORGETTER={**settings.UNFORGETTER, "PGVECTOR": False}):
        assert pgvector.ready()
        assert not pgvector.enabled()
        client = sdk(tenant.issue()[0], mode)
        assert _search(client, PARAPHRASE) == [deploys]
        assert indexes.holds(tenant.projects["platform"].pk, _model())


@pytest.mark.usefixtures("needs_pgvector", "redetected")
def test_pgvector_sync_fills_a_database_that_had_vectors_before_the_extension(
    tenant: Tenant, sdk, mode: str
) -> None:
    deploys = _items(tenant)
    embeddings_refresh()
    # As if the extension came after the vectors: no copies, and the column not marked ready.
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {pgvector.TABLE} SET {pgvector.COLUMN} = NULL")  # noqa: S608
        cursor.execute(f"COMMENT ON COLUMN {pgvector.TABLE}.{pgvector.COLUMN} IS NULL")
    pgvector.forget()
    assert not pgvector.enabled()
    client = sdk(tenant.issue()[0], mode)
    assert _search(client, PARAPHRASE) == [deploys]  # the in-process index serves meanwhile
    assert indexes.holds(tenant.projects["platform"].pk, _model())

    out = io.StringIO()
    call_command("pgvector_sync", stdout=out)
    assert out.getvalue().startswith("Copied 3 vectors into pgvector")
    assert _copies() == 3
    indexes.clear()
    assert pgvector.enabled()
    assert _search(client, PARAPHRASE) == [deploys]
    assert not indexes.holds(tenant.projects["platform"].pk, _model())
    call_command("pgvector_sync", stdout=out)  # again: nothing left to copy
    assert out.getvalue().splitlines()[-1].startswith("Copied 0 vectors")


@pytest.mark.usefixtures("redetected")
def test_without_the_extension_the_in_process_index_serves(
    tenant: Tenant, sdk, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pgvector, "_read_state", lambda db: pgvector.State())
    pgvector.forget()
    assert not pgvector.enabled()
    assert not pgvector.writes_copies()
    assert pgvector.install(connection) == pgvector.State()  # the migration's step: no error
    deploys = _items(tenant)
    embeddings_refresh()
    client = sdk(tenant.issue()[0], mode)
    assert _search(client, PARAPHRASE) == [deploys]
    assert indexes.holds(tenant.projects["platform"].pk, _model())


@pytest.mark.usefixtures("redetected")
def test_pgvector_sync_says_why_it_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    if connection.vendor != "postgresql":
        with pytest.raises(CommandError, match="pgvector is for PostgreSQL"):
            call_command("pgvector_sync")
        return
    monkeypatch.setattr(pgvector, "_read_state", lambda db: pgvector.State())
    with pytest.raises(CommandError, match="not installed on this PostgreSQL server"):
        call_command("pgvector_sync")
    monkeypatch.setattr(pgvector, "_read_state", lambda db: pgvector.State(version=(0, 7, 4)))
    with pytest.raises(CommandError, match=r"0\.8 or later is needed"):
        call_command("pgvector_sync")


class _RolledBack(Exception):
    """Leaves the block's changes (DDL included) undone."""


@pytest.mark.skipif(connection.vendor != "postgresql", reason="pgvector's copy is PostgreSQL's")
def test_the_copy_is_marked_ready_with_the_servers_own_parameter_binding() -> None:
    # COMMENT takes no bind parameters: with server-side binding (DB_PREPARED_STATEMENTS, the
    # default) the mark must be a literal, or a database where pgvector is available cannot even
    # be migrated. Here on a stand-in column where the extension is missing, all undone after.
    marked: list[str] = []

    def mark_and_read() -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"ALTER TABLE {pgvector.TABLE} ADD COLUMN IF NOT EXISTS {pgvector.COLUMN} bytea")
            pgvector._mark_ready(cursor)
            cursor.execute(
                "SELECT col_description(%s::regclass, attnum) FROM pg_attribute "
                "WHERE attrelid = %s::regclass AND attname = %s",
                [pgvector.TABLE, pgvector.TABLE, pgvector.COLUMN],
            )
            marked.append(cursor.fetchone()[0])
            raise _RolledBack

    with pytest.raises(_RolledBack):
        mark_and_read()
    assert marked == [pgvector.READY]
