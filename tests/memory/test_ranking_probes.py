"""The word index's and the vector index's freshness probes, run as one statement."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.embeddings import embedder
from memory.embeddings.index import VectorIndex, indexes
from memory.lexical_index import PROBE_LIMIT_MIN, _count_above_sql, lexical_indexes, words
from memory.retrieval import ranking_indexes
from memory.services.embeddings import embeddings_refresh
from tests.conftest import Tenant
from tests.readpath import add_item

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(embedder() is None, reason="the local model's package is not installed"),
]


@pytest.fixture
def project_id(tenant: Tenant) -> int:
    platform = tenant.projects["platform"]
    for i in range(5):
        add_item(platform, f"Deploy note {i}: the release train leaves at {i} o'clock.")
    embeddings_refresh()
    ranking_indexes(platform.pk)  # both indexes built (and kept by this process)
    return platform.pk


def test_with_nothing_new_both_indexes_are_kept_by_one_statement(project_id: int) -> None:
    model = embedder()
    assert model is not None
    words_before, vectors_before = lexical_indexes.get(project_id), indexes.get(project_id, model.name)
    with CaptureQueriesContext(connection) as statements:
        found_words, found_vectors = ranking_indexes(project_id)
    assert len(statements) == 1
    assert found_words is words_before
    assert found_vectors is vectors_before


def test_an_item_and_its_vector_added_since_are_in_both(tenant: Tenant, project_id: int) -> None:
    added = add_item(tenant.projects["platform"], "Invoice worker retries five times with backoff.")
    embeddings_refresh()
    found_words, found_vectors = ranking_indexes(project_id)
    assert isinstance(found_vectors, VectorIndex)
    assert added.pk in found_vectors.ids.tolist()
    hits = found_words.rank(
        words("invoice retries"), classes=["internal"], states=["active"], kinds=None, limit=5
    )
    assert added.pk in [hit.fact_id for hit in hits]


def test_a_count_taken_before_the_index_moved_is_not_trusted(tenant: Tenant, project_id: int) -> None:
    probe = lexical_indexes.probe(project_id)
    assert probe is not None
    add_item(tenant.projects["platform"], "Canary deploys wait ten minutes.")
    lexical_indexes.get(project_id)  # another call indexes the new row: the index has moved
    with CaptureQueriesContext(connection) as statements:
        lexical_indexes.get(project_id, probed=(probe, probe.expected))
    assert len(statements) == 1  # counted anew, not taken from the stale probe
    probe = lexical_indexes.probe(project_id)
    assert probe is not None
    with CaptureQueriesContext(connection) as statements:
        lexical_indexes.get(project_id, probed=(probe, probe.expected))
    assert not statements  # a count of the index as it stands is used as it is


def test_more_rows_added_than_the_probe_counts_are_all_indexed(tenant: Tenant, project_id: int) -> None:
    # PostgreSQL's count stops at a limit written into its statement (PROBE_LIMIT_MIN at least):
    # a count that stops there still says "more than expected", and every new row is read.
    platform = tenant.projects["platform"]
    texts = [f"Queue shard {i} drains into the ledger." for i in range(PROBE_LIMIT_MIN + 6)]
    added = [add_item(platform, text).pk for text in texts]
    found_words, _ = ranking_indexes(project_id)
    query = words("queue shard ledger")
    hits = found_words.rank(query, classes=["internal"], states=["active"], kinds=None, limit=500)
    assert set(added) <= {hit.fact_id for hit in hits}


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's count has a limit")
@pytest.mark.parametrize(("cap", "limit"), [(1, PROBE_LIMIT_MIN), (PROBE_LIMIT_MIN + 1, 2 * PROBE_LIMIT_MIN)])
def test_the_count_s_limit_is_part_of_its_statement_not_a_parameter(cap: int, limit: int) -> None:
    # A bound LIMIT made the server plan a prepared probe on every execution (its generic plan
    # assumed a tenth of the table); a few literal limits keep it prepared once.
    sql, params = _count_above_sql(7, 1000, cap=cap)
    assert f"LIMIT {limit})" in sql
    assert params == [7, 1000, 7]
    assert sql.count("%s") == len(params)
