"""Semantic retrieval, fused with the lexical ranking: through the MCP SDK client, with the real
local model (all-MiniLM-L6-v2 from its package; loaded once per test process, a few texts each).

Vectors are written the way the worker writes them (`embeddings_refresh`), never on a request.
"""

from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np
import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import override_settings

from memory import embeddings, retrieval, search
from memory.embeddings import query_vectors
from memory.lexical_index import Hit, lexical_indexes
from memory.models import Embedding, Fact, State
from memory.services import publication_record
from memory.services.embeddings import embeddings_missing, embeddings_prune, embeddings_refresh
from memory.worker import ConsolidatorLoop
from tests.conftest import LiveServer, Tenant
from tests.readpath import RecordingMCPClient, _fresh_bundle_cache, add_item, all_items, sdk_factory  # noqa: F401

pytestmark = [
    pytest.mark.django_db(transaction=True),
    # Each test on PostgreSQL's pgvector where it is installed, and on the in-process index.
    pytest.mark.usefixtures("vector_store"),
    pytest.mark.skipif(embeddings.embedder() is None, reason="the local model's package is not installed"),
]

DEPLOYS = "The web frontend is deployed to production every Tuesday."
# No word in common with DEPLOYS: only its meaning can find it.
PARAPHRASE = "On which weekday do we ship the site to prod?"


@pytest.fixture
def sdk(live: LiveServer) -> Callable[..., RecordingMCPClient]:
    return sdk_factory(live)


def _distractors(tenant: Tenant, project: str = "platform") -> None:
    for text in [
        "Kafka topics are named after their producer.",
        "Payroll questions go to the people team.",
        "The staging database is reset every night.",
        "Feature flags live in the flags service.",
    ]:
        add_item(tenant.projects[project], text)


def _search(client: RecordingMCPClient, query: str, project: str = "platform") -> list[dict]:
    return client.ok("search_memory", {"project_id": project, "query": query})["results"]


def test_a_paraphrase_finds_the_fact_through_its_meaning(tenant: Tenant, sdk, mode: str) -> None:
    _distractors(tenant)
    deploys = add_item(tenant.projects["platform"], DEPLOYS)
    token, _ = tenant.issue()
    client = sdk(token, mode)
    assert _search(client, PARAPHRASE) == []  # no vectors yet: no word of the question occurs

    embeddings_refresh()
    results = _search(client, PARAPHRASE)
    assert results[0]["ref"] == deploys.ref
    assert results[0]["why"] == "close in meaning to the query"
    both = _search(client, "when is the web frontend deployed to production")
    assert both[0]["ref"] == deploys.ref
    assert both[0]["why"] == "matches words of the query and is close in meaning"


def test_the_item_a_question_clearly_names_comes_before_a_closer_meaning(
    tenant: Tenant, sdk, mode: str
) -> None:
    _distractors(tenant)
    named = add_item(tenant.projects["platform"], "Audit logs kept: 400 days in cold storage.")
    # Fewer of the question's words, and closer to its meaning: fused by rank alone, the two tie
    # (first by words and second by meaning, or the other way round) and the newer one came first.
    closer = add_item(tenant.projects["platform"], "Logs of every audit are retained for a bit over a year.")
    embeddings_refresh()
    client = sdk(tenant.issue()[0], mode)
    results = _search(client, "How long are audit logs kept?")
    assert [r["ref"] for r in results[:2]] == [named.ref, closer.ref]
    assert results[0]["why"] == "matches words of the query and is close in meaning"


def test_a_question_naming_a_joined_identifier_finds_its_item_first(tenant: Tenant, sdk, mode: str) -> None:
    # bench/quality.py's generated corpus: nine keywords, three of them the service's name. Counted
    # apart, the question was too long to name one item: fused by rank, the other services'
    # retry facts (its words "jobs", "risk", "bridge", "ca", and close in meaning) came first.
    platform = tenant.projects["platform"]
    named = add_item(platform, "risk-bridge-ca caches jobs in Redis with a TTL of 30 minutes.")
    add_item(
        platform, "risk-bridge-ca is deployed to production every Wednesday through the Jenkins pipeline."
    )
    for service, times in [("risk-collector-ca", 6), ("catalog-bridge-ca", 3), ("risk-adapter-ca", 4)]:
        add_item(
            platform,
            f"{service} retries failed jobs {times} times with exponential backoff starting at 250 ms.",
        )
    embeddings_refresh()
    client = sdk(tenant.issue()[0], mode)
    question = "How long can the copy of jobs kept in memory by risk-bridge-ca be out of date?"
    assert _search(client, question)[0]["ref"] == named.ref


def test_a_joined_identifier_counts_as_one_keyword_of_a_question() -> None:
    def sized(query: str) -> bool:
        return retrieval.question_sized(query, search.keywords(query))

    assert sized("How long can the copy of jobs kept in memory by risk-bridge-ca be out of date?")
    assert sized(
        "Is the out-of-date cache of risk_bridge_ca and auth-svc stale for user-42 tokens or not yet?"
    )
    assert not sized("one two three four five six seven eight nine")
    assert not sized(
        "alpha-beta gamma-delta epsilon-zeta eta-theta iota-kappa lambda-mu nu-xi omicron-pi rho-sigma"
    )


def test_the_bundle_holds_the_facts_of_the_service_a_task_names_first(tenant: Tenant, sdk, mode: str) -> None:
    # bench/quality.py's generated corpus: fused by rank alone, other services' alert facts (on
    # the lexical side for "page", and close in meaning) filled the bundle before the named
    # service's owner fact, which neither side ranked first.
    platform = tenant.projects["platform"]
    owner = add_item(
        platform, "settlement-service-uk is owned by the ember team; escalations go to ember on-call."
    )
    add_item(platform, "settlement-service-uk retries failed messages 9 times with exponential backoff.")
    for prefix in ["settlement", "payout", "ledger", "refund", "wallet", "billing", "invoice", "tax"]:
        for suffix in ["daemon", "worker", "gateway", "indexer", "monitor", "backend", "service", "api"]:
            service = f"{prefix}-{suffix}-{'eu' if suffix == 'service' else 'uk'}"
            add_item(
                platform,
                f"An alert pages on-call when the error rate of {service} exceeds 5% for five minutes.",
            )
            add_item(platform, f"{service} is written in Go and built with Bazel.")
    embeddings_refresh()
    bundle = sdk(tenant.issue()[0], mode).ok(
        "get_context",
        {"project_id": "platform", "task": "Find who to page about an incident in settlement-service-uk"},
    )
    facts = [f["ref"] for f in bundle["facts"]]
    assert owner.ref in facts[:2], [f["text"] for f in bundle["facts"]]


def test_fusion_puts_the_items_a_query_names_first_ranked_among_themselves() -> None:
    def hit(fact_id: int, score: float) -> Hit:
        return Hit(fact_id, score, "fact")

    words = [hit(1, 3.0), hit(2, 2.9), hit(3, 2.0)]
    meaning = [hit(4, 0.9), hit(2, 0.8), hit(5, 0.7)]
    for fusion in (retrieval.fuse, retrieval.fuse_scores):
        assert fusion(words, meaning)[0].fact_id == 2
        named = fusion(words, meaning, named={1, 3})
        assert [r.fact_id for r in named] == [1, 3, 2, 4, 5]
        # Scored above every other: a bundle orders its facts by these scores.
        assert named[1].score > named[2].score
        assert fusion(words, meaning, named={9}) == fusion(words, meaning)


def test_fusion_keeps_a_clear_word_winner_first_and_only_a_clear_one() -> None:
    def hit(fact_id: int, score: float) -> Hit:
        return Hit(fact_id, score, "fact")

    meaning = [hit(2, 0.9), hit(1, 0.8)]
    # Tied by rank, the newer (higher id) would come first.
    assert [r.fact_id for r in retrieval.fuse([hit(1, 3.0), hit(2, 2.9)], meaning, lead=True)] == [2, 1]
    clear = retrieval.fuse([hit(1, 3.0), hit(2, 2.0)], meaning, lead=True)
    assert [r.fact_id for r in clear] == [1, 2]
    assert clear[0].score == clear[1].score  # scored as the fused first is
    # A query too long to name one item (a passage) is fused by rank alone.
    assert [r.fact_id for r in retrieval.fuse([hit(1, 3.0), hit(2, 2.0)], meaning)] == [2, 1]
    # Further down both rankings, a clear lead still comes first.
    others = [hit(i, 0.7) for i in range(10, 20)]
    far = retrieval.fuse([hit(5, 4.0), hit(6, 1.0)], [*others, hit(6, 0.5), hit(5, 0.4)], lead=True)
    assert far[0].fact_id == 5
    # A lone word match has no lead over anything: tied by rank, the newer comes first.
    assert [r.fact_id for r in retrieval.fuse([hit(1, 3.0)], [hit(2, 0.9)], lead=True)] == [2, 1]


def test_fusion_by_scores_weighs_how_far_ahead_each_side_puts_an_item() -> None:
    def hit(fact_id: int, score: float) -> Hit:
        return Hit(fact_id, score, "fact")

    # 1 matches every word, 3 a few of them; 2 is far the closest in meaning, 3 barely close.
    words, meaning = [hit(1, 9.0), hit(3, 2.0)], [hit(2, 0.95), hit(3, 0.40)]
    # By rank, 3 (second on both sides) comes before either side's first.
    assert retrieval.fuse(words, meaning)[0].fact_id == 3
    by_scores = retrieval.fuse_scores(words, meaning)
    assert [r.fact_id for r in by_scores] == [1, 2, 3]
    word_share = retrieval.SCORE_FUSION_WORDS
    assert [r.score for r in by_scores] == pytest.approx(
        [word_share, 1 - word_share, word_share * 2 / 9 + (1 - word_share) * 0.05 / 0.60]
    )
    assert [(r.lexical, r.semantic) for r in by_scores] == [(True, False), (False, True), (True, True)]
    # A clear word winner stays first, scored as the fused first is; without a meaning, the words.
    led = retrieval.fuse_scores([hit(3, 2.0), hit(1, 1.0)], [hit(1, 0.95), hit(3, 0.36)], lead=True)
    assert [r.fact_id for r in led] == [3, 1]
    assert [r.fact_id for r in retrieval.fuse_scores(words, [])] == [1, 3]


class _Designed:
    """A stand-in model whose vectors are chosen per text (a unit vector along an axis else)."""

    name = "test-designed"

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self._vectors = vectors

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = np.zeros((len(texts), 8), dtype=np.float32)
        for row, text in zip(rows, texts, strict=True):
            row[:] = self._vectors.get(text, [0, 0, 0, 0, 0, 0, 0, 1])
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_a_question_is_ranked_by_how_strongly_each_side_matches(
    tenant: Tenant, sdk, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    question = "Which region hosts the ledger database?"
    every_word = "The ledger database is hosted in the eu-west region."
    closest = "Account balances are stored in Frankfurt."  # no word of the question
    weak = "The region list is in the wiki."  # one word, and only a little alike
    model = _Designed(
        {
            question: [1, 0, 0, 0, 0, 0, 0, 0],
            every_word: [0, 1, 0, 0, 0, 0, 0, 0],  # not alike at all: found by its words alone
            closest: [0.9, 0.436, 0, 0, 0, 0, 0, 0],  # cosine 0.9
            weak: [0.5, 0, 0.866, 0, 0, 0, 0, 0],  # cosine 0.5
        }
    )
    monkeypatch.setattr(embeddings, "_build", lambda *_: model)
    monkeypatch.setattr(embeddings, "_configured", {})
    query_vectors.clear()
    _distractors(tenant)
    platform = tenant.projects["platform"]
    refs = {text: add_item(platform, text).ref for text in (every_word, closest, weak)}
    with override_settings(UNFORGETTER={**settings.UNFORGETTER, "EMBEDDER": "designed"}):
        embeddings_refresh()
        results = _search(sdk(tenant.issue()[0], mode), question)
    # By rank alone, the item second on both sides came before the meaning's far closest one.
    assert [r["ref"] for r in results][:3] == [refs[every_word], refs[closest], refs[weak]]
    assert [r["why"] for r in results][:3] == [
        "matches words of the query",
        "close in meaning to the query",
        "matches words of the query and is close in meaning",
    ]
    query_vectors.clear()


def test_items_without_a_vector_are_still_found_by_their_words(tenant: Tenant, sdk, mode: str) -> None:
    _distractors(tenant)
    embeddings_refresh()
    late = add_item(tenant.projects["platform"], "Invoices are archived to cold storage after a year.")
    token, _ = tenant.issue()
    results = _search(sdk(token, mode), "when are invoices archived?")
    assert [r["ref"] for r in results][:1] == [late.ref]
    assert results[0]["why"] == "matches words of the query"


def test_the_vector_side_keeps_the_scope(tenant: Tenant, other_tenant: Tenant, sdk, mode: str) -> None:
    _distractors(tenant)
    mine = add_item(tenant.projects["platform"], DEPLOYS)
    # The same meaning everywhere the credential must not reach: another project, a data class
    # it does not hold, restricted, no longer current, another workspace.
    elsewhere = [
        add_item(tenant.projects["handbook"], DEPLOYS),
        add_item(tenant.projects["platform"], DEPLOYS + " (confidential)", data_class="confidential"),
        add_item(tenant.projects["platform"], DEPLOYS + " (restricted)", data_class="restricted"),
        add_item(
            tenant.projects["platform"], "The web frontend used to deploy on Mondays.", state="retracted"
        ),
        add_item(other_tenant.projects["platform"], DEPLOYS),
    ]
    embeddings_refresh()
    token, _ = tenant.issue()
    client = sdk(token, mode)
    assert [r["ref"] for r in _search(client, PARAPHRASE)] == [mine.ref]
    handbook = _search(client, PARAPHRASE, project="handbook")
    assert len(handbook) == 1
    assert handbook[0]["ref"] != mine.ref
    # A bundle's ranking does not check its candidates row by row: the word index admits the
    # vector side's by what it knows of them, and the chosen rows are read through the scope.
    bundle = client.ok("get_context", {"project_id": "platform", "task": PARAPHRASE})
    served = {item["ref"] for item in all_items(bundle)} | {p["ref"] for p in bundle["pointers"]}
    assert mine.ref in {f["ref"] for f in bundle["facts"]}
    assert not served & {item.ref for item in elsewhere}


def test_a_bundle_leaves_out_an_item_retired_since_it_was_indexed(tenant: Tenant, sdk, mode: str) -> None:
    _distractors(tenant)
    platform = tenant.projects["platform"]
    deploys = add_item(platform, DEPLOYS)
    embeddings_refresh()
    client = sdk(tenant.issue()[0], mode)

    def bundle_refs(task: str) -> set[str]:
        bundle = client.ok("get_context", {"project_id": "platform", "task": task})
        return {item["ref"] for item in all_items(bundle)} | {p["ref"] for p in bundle["pointers"]}

    assert deploys.ref in bundle_refs("Ship the site to prod on the right weekday")
    # Superseded in place, as a consolidator's conditional update does, with its publication:
    # both indexes still hold the item, as they read it.
    Fact.objects.filter(pk=deploys.pk).update(state=State.SUPERSEDED)
    publication_record(workspace=tenant.workspace, published_count=1, changed=True)
    assert deploys.ref not in bundle_refs("When does the web frontend go to production?")
    index = lexical_indexes.get(platform.pk)
    assert bool(index.dead[list(index.ids).index(deploys.pk)])  # no longer offered
    # A word index read afresh never held it; the vector side still does, and is not admitted.
    lexical_indexes.clear()
    assert deploys.ref not in bundle_refs("Which weekday is the frontend deployed to production?")
    assert deploys.pk not in lexical_indexes.get(platform.pk).ids


def test_pages_of_a_hybrid_ranking_walk_every_item_once(tenant: Tenant, sdk, mode: str) -> None:
    refs = {
        add_item(
            tenant.projects["platform"], f"Release {i}: the web frontend was deployed to production."
        ).ref
        for i in range(14)
    }
    embeddings_refresh()
    token, _ = tenant.issue()
    client = sdk(token, mode)
    first = client.ok("search_memory", {"project_id": "platform", "query": "frontend deploys"})
    second = client.ok(
        "search_memory", {"project_id": "platform", "query": "frontend deploys", "cursor": first["cursor"]}
    )
    seen = [r["ref"] for r in first["results"] + second["results"]]
    assert len(seen) == len(set(seen)) == 14
    assert set(seen) == refs
    assert "cursor" not in second


def test_the_bundle_holds_the_fact_a_paraphrased_task_is_about(tenant: Tenant, sdk, mode: str) -> None:
    for i in range(45):
        add_item(tenant.projects["platform"], f"Routine note {i}: the nightly report ran on time.")
    deploys = add_item(tenant.projects["platform"], DEPLOYS)
    # Newer than the fact, and more of them than a bundle holds: recency alone would not reach it.
    for i in range(45):
        add_item(tenant.projects["platform"], f"Routine note {45 + i}: the nightly report ran on time.")
    embeddings_refresh()
    token, _ = tenant.issue()
    bundle = sdk(token, mode).ok(
        "get_context",
        {"project_id": "platform", "task": "Ship a hotfix for the site to prod on the right weekday"},
    )
    assert deploys.ref in [f["ref"] for f in bundle["facts"]]


def test_the_same_fact_twice_takes_one_slot_in_a_bundle(tenant: Tenant, sdk, mode: str) -> None:
    platform = tenant.projects["platform"]
    add_item(platform, "The invoice worker retries failed payments 5 times.")
    add_item(platform, "Invoice worker retries failed payments 5 times.")  # the same words
    add_item(platform, "The invoice worker retries a failed payment 5 times.")  # the same meaning
    different = add_item(platform, "The invoice worker retries failed payments 6 times.")  # not the same
    other = add_item(platform, "Invoices are archived after a year.")
    embeddings_refresh()
    token, _ = tenant.issue()
    bundle = sdk(token, mode).ok("get_context", {"project_id": "platform", "task": "invoice worker retries"})
    texts = [f["text"] for f in bundle["facts"]]
    assert len([t for t in texts if "5 times" in t]) == 1, texts
    refs = [f["ref"] for f in bundle["facts"]]
    assert different.ref in refs
    assert other.ref in refs
    assert len(texts) == 3


class _Hashed:
    """A stand-in second model: deterministic vectors from the words, under its own name."""

    name = "test-hashed-words"

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in zip(rows, texts, strict=True):
            for word in text.casefold().split():
                row[hash(word) % 64] += 1.0
        return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


def _deploys_embedded(tenant: Tenant) -> tuple[Fact, embeddings.Embedder]:
    """DEPLOYS among the distractors, every item embedded by the local model; and that model."""
    _distractors(tenant)
    deploys = add_item(tenant.projects["platform"], DEPLOYS)
    embeddings_refresh()
    local = embeddings.embedder()
    assert local is not None
    return deploys, local


def test_a_model_change_re_embeds_without_mixing_or_losing_vectors(
    tenant: Tenant, sdk, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    deploys, local = _deploys_embedded(tenant)
    assert Embedding.objects.filter(model=local.name).count() == 5

    monkeypatch.setattr(embeddings, "_build", lambda *_: _Hashed())
    with override_settings(UNFORGETTER={**settings.UNFORGETTER, "EMBEDDER": "test"}):
        assert embeddings_missing() == 5
        # Until the new model's vectors are written the old ones are kept, never compared with
        # the new model's queries: the paraphrase is not found, the words still are.
        token, _ = tenant.issue()
        client = sdk(token, mode)
        assert _search(client, PARAPHRASE) == []
        assert _search(client, "frontend deployed")[0]["ref"] == deploys.ref
        assert Embedding.objects.filter(model=local.name).count() == 5

        report = embeddings_refresh()
        assert (report.embedded, report.complete) == (5, True)
        assert embeddings_prune() == 5
        assert set(Embedding.objects.values_list("model", flat=True)) == {_Hashed.name}
        assert _search(client, "frontend deployed")[0]["ref"] == deploys.ref
    query_vectors.clear()


class _Down:
    """The configured model's name, but its endpoint does not answer (an embeddings server down)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.asked = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.asked += 1
        raise ConnectionError("connection refused")


def test_when_the_embedder_fails_calls_are_answered_by_their_words(
    tenant: Tenant, sdk, mode: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    deploys, local = _deploys_embedded(tenant)
    down = _Down(local.name)  # its vectors are stored: the vector side would be asked
    monkeypatch.setattr(embeddings, "_build", lambda *_: down)
    monkeypatch.setattr(embeddings, "_configured", {})  # built anew, not an earlier test's
    monkeypatch.setattr(retrieval, "_failures_logged", {})  # nor logged by one a moment ago
    query_vectors.clear()
    with override_settings(UNFORGETTER={**settings.UNFORGETTER, "EMBEDDER": "down"}):
        client = sdk(tenant.issue()[0], mode)
        results = _search(client, "when is the web frontend deployed to production")
        assert results[0]["ref"] == deploys.ref
        assert results[0]["why"] == "matches words of the query"
        # Only its meaning could find the paraphrase: nothing is found, and nothing fails.
        assert _search(client, PARAPHRASE) == []
        bundle = client.ok("get_context", {"project_id": "platform", "task": "Move the frontend deploy day"})
        assert deploys.ref in {f["ref"] for f in bundle["facts"]}
    # Asked once: after a failure it rests (RESTING_SECONDS), so an endpoint that hangs holds one
    # call for its timeout, not each; then it is asked again.
    assert down.asked == 1
    failures = [r for r in caplog.records if r.name == "memory.retrieval" and "failed" in r.getMessage()]
    assert len(failures) == 1  # once a minute, not once a call
    assert "ConnectionError" in failures[0].getMessage()
    assert failures[0].exc_info is None
    monkeypatch.setattr(embeddings, "RESTING_SECONDS", 0.0)
    with override_settings(UNFORGETTER={**settings.UNFORGETTER, "EMBEDDER": "down"}):
        assert _search(client, "what day is the web frontend deployed")[0]["ref"] == deploys.ref
    assert down.asked >= 2  # asked again once its rest is over
    query_vectors.clear()


def test_the_worker_embeds_new_items_off_the_request_path(tenant: Tenant) -> None:
    item = add_item(tenant.projects["platform"], DEPLOYS)
    loop = ConsolidatorLoop()
    loop.run_once()
    assert Embedding.objects.filter(fact=item).count() == 1
    later = add_item(tenant.projects["platform"], "Kafka topics are named after their producer.")
    loop.run_once()
    assert Embedding.objects.filter(fact=later).count() == 1
    assert Embedding.objects.count() == 2


def test_embed_backfill_embeds_every_item_without_a_vector(tenant: Tenant) -> None:
    _distractors(tenant)
    embeddings_refresh(limit=2)
    assert embeddings_missing() == 2
    out = io.StringIO()
    call_command("embed_backfill", stdout=out)
    assert embeddings_missing() == 0
    assert out.getvalue().startswith("Embedded 2 items with all-MiniLM-L6-v2")
    call_command("embed_backfill", stdout=out)
    assert Embedding.objects.count() == 4


def test_embed_backfill_with_a_limit_embeds_that_many_and_keeps_the_rest_for_later(tenant: Tenant) -> None:
    _distractors(tenant)
    out = io.StringIO()
    call_command("embed_backfill", "--limit", "3", stdout=out)
    assert (Embedding.objects.count(), embeddings_missing()) == (3, 1)
    assert out.getvalue().startswith("Embedded 3 items with all-MiniLM-L6-v2")
    call_command("embed_backfill", stdout=out)
    assert (Embedding.objects.count(), embeddings_missing()) == (4, 0)
    with pytest.raises(CommandError, match="positive"):
        call_command("embed_backfill", "--limit", "0")


def _analyses_of(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT analyze_count FROM pg_stat_user_tables WHERE relname = %s", [table])
        return int(cursor.fetchone()[0])


@pytest.mark.skipif(connection.vendor != "postgresql", reason="planner statistics are PostgreSQL's")
def test_embed_backfill_refreshes_the_planner_statistics_of_the_vectors(tenant: Tenant) -> None:
    _distractors(tenant)
    table = Embedding._meta.db_table
    before = _analyses_of(table)
    call_command("embed_backfill", stdout=io.StringIO())
    assert embeddings_missing() == 0
    assert _analyses_of(table) == before + 1


@pytest.mark.skipif(embeddings.embedder() is None, reason="the local model's package is not installed")
def test_a_query_vector_prefetched_for_a_call_is_embedded_once() -> None:
    found = embeddings.embedder()
    assert found is not None
    model: embeddings.Embedder = found
    calls: list[list[str]] = []

    class Counting:
        name = model.name

        def embed(self, texts: list[str]) -> np.ndarray:
            calls.append(texts)
            return model.embed(texts)

    counting = Counting()
    query_vectors.clear()
    query_vectors.prefetch(counting, "ship a service to production")
    query_vectors.prefetch(counting, "ship a service to production")  # already under way
    vector = query_vectors.get(counting, "ship a service to production")
    assert calls == [["ship a service to production"]]
    assert np.allclose(vector, model.embed(["ship a service to production"])[0], atol=1e-6)
    assert query_vectors.get(counting, "ship a service to production") is vector
