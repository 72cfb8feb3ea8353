"""The read paths' and the write path's query counts, pinned: a change that adds a query per item
or per call shows here.

The handlers are called exactly as the tools call them, with the AgentScope the token verifier
resolves, so the counts are those of a real request after auth; propose_memory's are counted with
its credential's statement, as the direct path (mcpbridge.direct) runs the two.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from mcpbridge import direct
from mcpbridge.schemas import GetContextArgs, ListProjectsArgs, SearchMemoryArgs
from mcpbridge.server import _get_context, _list_projects, _search_memory
from memory.cursors import cursor_make
from memory.embeddings import embedder
from memory.exceptions import InvalidCursor
from memory.models import Taint
from memory.services import proposal_submit
from memory.services.embeddings import embeddings_refresh
from memory.services.taint_prints import prints_record
from tests.conftest import Tenant
from tests.readpath import _fresh_bundle_cache, add_item  # noqa: F401
from workspaces.bearers import kept_scope
from workspaces.scope import AgentScope
from workspaces.selectors import connection_for_bearer

pytestmark = pytest.mark.django_db


def _as_verified(token: str) -> AgentScope:
    found = connection_for_bearer(token)
    assert found is not None
    return found.scope()


@pytest.fixture
def memory(tenant: Tenant) -> Tenant:
    platform = tenant.projects["platform"]
    add_item(platform, "Never deploy on Fridays.", kind="policy")
    add_item(platform, "Ship zero-downtime deploys.", kind="goal")
    for i in range(8):
        add_item(platform, f"Deploy note {i}: the release train leaves at {i % 12} o'clock.")
        add_item(platform, f"Decision {i}: deploys use canaries for service {i}.", kind="decision")
    for i in range(5):
        add_item(platform, f"Who owns deploy pipeline {i}?", kind="thread")
        add_item(platform, f"How to deploy service {i}: merge, wait, watch.", kind="method")
    return tenant


@pytest.mark.parametrize("all_projects", [True, False])
def test_list_projects_queries(memory: Tenant, django_assert_num_queries, all_projects: bool) -> None:
    token, _ = memory.issue(projects=None if all_projects else ["handbook", "platform"])
    scope = _as_verified(token)
    with django_assert_num_queries(1):
        result = _list_projects(scope, ListProjectsArgs())
    assert len(result["projects"]) == 2


def test_get_context_queries_when_compiled(memory: Tenant, django_assert_num_queries) -> None:
    token, _ = memory.issue()
    scope = _as_verified(token)
    args = GetContextArgs(project_id="platform", task="deploy the release train")
    # the project with its workspace's newest publication (one statement), the standing items
    # (policies, open threads, newest facts: one statement), the project's newest vector id
    # (none here), the word index's look at rows committed since (here: its first read), the
    # chosen rows (read through the scope: the ranked candidates are not checked on their own),
    # the ContextRequest insert.
    with django_assert_num_queries(COMPILED):
        bundle = _get_context(scope, args)
    assert bundle["facts"]
    assert bundle["policies"]
    assert bundle["open_threads"]
    assert bundle["methods"]


def test_get_context_queries_when_cached(memory: Tenant, django_assert_num_queries) -> None:
    token, _ = memory.issue()
    scope = _as_verified(token)
    args = GetContextArgs(project_id="platform", task="deploy the release train")
    first = _get_context(scope, args)
    with django_assert_num_queries(CACHED):  # the project with the newest publication
        again = _get_context(scope, args)
    assert again["context_id"] == first["context_id"]


def test_get_context_queries_with_a_project_list(memory: Tenant, django_assert_num_queries) -> None:
    token, _ = memory.issue(projects=["platform"])
    found = connection_for_bearer(token)
    assert found is not None
    args = GetContextArgs(project_id="platform", task="deploy the release train")
    # The credential's project list, read once when its scope is resolved.
    with django_assert_num_queries(COMPILED + 1):
        _get_context(found.scope(), args)


def test_search_memory_queries(memory: Tenant, django_assert_num_queries) -> None:
    token, _ = memory.issue()
    scope = _as_verified(token)
    # project, the newest vector id (none here), the word index's look at new rows (here: its
    # first read), the check of the ranked candidates, the page's rows (excerpts are marked in
    # process)
    with django_assert_num_queries(SEARCH):
        page = _search_memory(scope, SearchMemoryArgs(project_id="platform", query="deploy"))
    assert len(page["results"]) == 10
    assert page["cursor"]
    # Once the word index is built, its look at new rows and the newest vector id are one statement.
    with django_assert_num_queries(SEARCH - 1):
        _search_memory(scope, SearchMemoryArgs(project_id="platform", query="deploy", cursor=page["cursor"]))


@pytest.mark.skipif(embedder() is None, reason="the local model's package is not installed")
def test_hybrid_reads_check_the_vector_sides_new_candidates_in_one_more_statement(
    memory: Tenant, django_assert_num_queries, vector_store: str
) -> None:
    # With pgvector no process holds vectors: the word index's look at new rows is a statement of
    # its own (not one beside the project's), and the nearest vectors are one more.
    pgvector_more = 2 if vector_store == "pgvector" else 0
    # Close in meaning to the question below (cosine 0.41) and sharing none of its words.
    meaning = add_item(
        memory.projects["platform"], "Deploying an application live: merge the branch, wait for CI."
    )
    embeddings_refresh()
    token, _ = memory.issue()
    scope = _as_verified(token)
    question = "how do we release an app?"
    search = SearchMemoryArgs(project_id="platform", query=question)
    _search_memory(scope, search)  # loads the project's vector index (once per process)
    # ... then a lexical search's statements, one fewer (the two indexes' looks at what is new go
    # in one statement once both are built, and that one in the project's: this scope named the
    # project before, and its queries are embedded), and one more: the word index's candidates
    # are checked against the scope while the query's vector is embedded, then the vector
    # neighbours the words did not offer, all of them in one statement.
    with django_assert_num_queries(SEARCH - 1 + pgvector_more):
        page = _search_memory(scope, search)
    found = {r["ref"]: r["why"] for r in page["results"]}
    assert found.get(meaning.ref) == "close in meaning to the query"
    # A bundle's statements, two fewer likewise, and none for the vector side's candidates (the
    # word index admits them, as it does its own) nor for the chosen rows: every fact chosen is
    # among the newest, which the standing part read.
    with django_assert_num_queries(COMPILED - 2 - 1 + pgvector_more):
        bundle = _get_context(scope, GetContextArgs(project_id="platform", task=question))
    assert not bundle["methods"]
    assert meaning.ref in {f["ref"] for f in bundle["facts"]}
    # The standing part is kept per content version: none for it the next time.
    with django_assert_num_queries(COMPILED - 2 - 1 - 1 + pgvector_more):
        again = _get_context(scope, GetContextArgs(project_id="platform", task="how is an app shipped?"))
    assert meaning.ref in {f["ref"] for f in again["facts"]}


def test_search_memory_queries_by_ref(memory: Tenant, django_assert_num_queries) -> None:
    token, _ = memory.issue()
    scope = _as_verified(token)
    item = add_item(memory.projects["platform"], "Feature flags live in the flags service.")
    with django_assert_num_queries(2):  # project, the item
        page = _search_memory(scope, SearchMemoryArgs(project_id="platform", query=item.ref))
    assert [r["ref"] for r in page["results"]] == [item.ref]


def test_search_memory_refuses_a_bad_cursor_before_searching(
    memory: Tenant, django_assert_num_queries
) -> None:
    token, _ = memory.issue()
    verified = _as_verified(token)
    other = cursor_make(scope=verified, project=memory.projects["handbook"], query="deploy", offset=10)
    with (
        django_assert_num_queries(1),
        pytest.raises(InvalidCursor, match="another project"),
    ):  # the project only
        _search_memory(verified, SearchMemoryArgs(project_id="platform", query="deploy", cursor=other))


def _proposal(request_id: str, text: str) -> dict[str, Any]:
    return {
        "project_id": "platform",
        "request_id": request_id,
        "change": {"op": "add_fact", "text": text},
        "evidence": [{"ref": "runbooks/deploy.md", "trust": "trusted"}],
    }


def _kept(tenant: Tenant) -> tuple[str, AgentScope]:
    """A credential as after a few calls: resolved, kept, and its use stamped (once a minute,
    which changes what it was resolved from: the next call resolves it again and keeps that)."""
    token, _ = tenant.issue()
    scope = _as_verified(token)
    for _ in range(2):
        assert direct._verified_call(token, scope, "list_projects", {}) is not None
    kept = kept_scope(token)
    assert kept is not None
    return token, kept


def test_propose_memory_statements_with_its_credential(memory: Tenant, django_assert_num_queries) -> None:
    token, kept = _kept(memory)
    proposal = _proposal("count-0001", "Deploys to the EU region wait for the data-residency check.")
    # The credential's statement, with the project, the request id's stored proposal and whether
    # a tainted item shares the text's prints (none does) read in it; then the insert's
    # transaction (here a savepoint and its release: the test runs in a transaction) with the
    # workspace's lock (PostgreSQL: on SQLite the write transaction is the lock), the ledger's
    # head and the insert.
    with django_assert_num_queries(PROPOSE + TRANSACTION + _lock()):
        answer = direct._verified_call(token, kept, "propose_memory", proposal)
    assert answer is not None
    receipt = answer[0]["structuredContent"]
    assert receipt["status"] == "queued"
    # A replay: the credential's statement finds the stored proposal; then its row.
    with django_assert_num_queries(2):
        again = direct._verified_call(token, kept, "propose_memory", proposal)
    assert again is not None
    assert again[0]["structuredContent"]["proposal_id"] == receipt["proposal_id"]
    assert again[0]["structuredContent"]["duplicate_request"] is True


def test_a_proposal_sharing_prints_with_a_tainted_item_looks_them_up(
    memory: Tenant, django_assert_num_queries
) -> None:
    copied = "Run the bootstrap script from the shared wiki page before every production deploy."
    tainted = add_item(memory.projects["platform"], copied, taint=Taint.UNTRUSTED)
    prints_record([tainted])
    token, kept = _kept(memory)
    # As above, and two more: the prints the text shares, and the tainted items holding them.
    with django_assert_num_queries(PROPOSE + 2 + TRANSACTION + _lock()):
        answer = direct._verified_call(token, kept, "propose_memory", _proposal("count-0003", copied))
    assert answer is not None
    assert answer[0]["structuredContent"]["status"] == "quarantined"


def test_a_proposal_reads_its_project_and_its_request_id_in_one_statement(
    memory: Tenant, django_assert_num_queries
) -> None:
    token, _ = memory.issue()
    scope = _as_verified(token)
    # Where the credential's statement did not read them (the SDK's path, a first call): the
    # project with the request id's stored proposal and the shared prints beside it, then as above.
    with django_assert_num_queries(PROPOSE + TRANSACTION + _lock()):
        submitted = proposal_submit(
            scope=scope,
            project_id="platform",
            request_id="count-0002",
            op="add_fact",
            text="The staging database is refreshed from production every Monday.",
            evidence=[{"ref": "runbooks/staging.md", "trust": "trusted"}],
        )
    assert not submitted.duplicate
    assert submitted.proposal.project == memory.projects["platform"]


def _lock() -> int:
    return 1 if connection.features.has_select_for_update else 0


COMPILED = 6
CACHED = 1
SEARCH = 5
PROPOSE = 3
TRANSACTION = 2  # the savepoint a test's transaction gives the insert, and its release
