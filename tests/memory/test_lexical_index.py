"""The in-process word index: fresh on the next call, safe against stale entries, bounded in memory."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pytest

from memory import lexical_index, search
from memory.lexical_index import lexical_indexes, words
from memory.models import Fact, State
from tests.conftest import LiveServer, Tenant
from tests.readpath import RecordingMCPClient, _fresh_bundle_cache, add_item, sdk_factory  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sdk(live: LiveServer) -> Callable[..., RecordingMCPClient]:
    return sdk_factory(live)


def _refs(client: RecordingMCPClient, query: str) -> list[str]:
    return [
        r["ref"] for r in client.ok("search_memory", {"project_id": "platform", "query": query})["results"]
    ]


def test_words_are_stemmed_casefolded_and_split_like_a_reader_would() -> None:
    assert words("Deploys, DEPLOYED; deployment_pipeline café-Crème") == [
        "deploy",
        "deploy",
        "deploy",
        "pipelin",
        "cafe",
        "creme",
    ]


def test_joined_identifiers_are_indexed_whole_beside_their_parts() -> None:
    assert lexical_index.compounds("Ask session-gateway-EU or retry_limit; café-Crème, not e.g. a - b") == [
        "session-gateway-eu",
        "retry_limit",
        "cafe-creme",
    ]
    assert lexical_index.compounds("No identifier here.") == []
    assert lexical_index.compound_words("invoice-workers") == ["invoice-work"]  # stemmed as a word


def test_a_question_naming_an_identifier_finds_the_item_naming_it_first(tenant: Tenant, sdk) -> None:
    platform = tenant.projects["platform"]
    for text in [
        "The session gateway in eu retries calls twice.",
        "session-gateway-us retries calls 3 times.",
        "eu calls to the gateway session retry once.",
    ]:
        add_item(platform, text)
    named = add_item(platform, "session-gateway-eu times out after 5 seconds; no retries.")
    token, _ = tenant.issue()
    # The first holds every word of the question, the named item all but one: by their parts
    # alone the first came first.
    assert _refs(sdk(token), "How does session-gateway-eu retry calls?")[0] == named.ref


def test_stems_of_words_of_letters_are_remembered_and_of_one_off_tokens_are_not() -> None:
    lexical_index._stems.clear()
    assert words("deploying sha3f9a2c v2.14 PAY-4312 deployments") == [
        "deploy",
        "sha3f9a2c",
        "v2",
        "14",
        "pay",
        "4312",
        "deploy",
    ]
    assert set(lexical_index._stems) == {"deploying", "pay", "deployments"}
    assert words("deploying sha3f9a2c") == ["deploy", "sha3f9a2c"]  # the same, remembered or not


def test_the_views_of_every_credential_keep_term_weights_within_one_bound(monkeypatch) -> None:
    monkeypatch.setattr(lexical_index, "MIN_KEPT_POSTING", 10)
    monkeypatch.setattr(lexical_index, "MAX_KEPT_POSTINGS", 120)
    classes = ["public", "internal", "confidential"]
    rows = [
        (i, "fact", classes[i % 3], "active", f"deploy train {i % 4} waits for canary review {i}")
        for i in range(1, 91)
    ]
    index = lexical_index._built(iter(rows))
    query = words("deploy train canary review waits")
    for visible in (["public"], ["public", "internal"], classes, ["internal"]):
        index.rank(query, classes=visible, states=["active"], kinds=None, limit=5)
    views = list(index._views.values())
    kept = [sum(len(weights) for _, weights in view.terms.values()) for view in views]
    assert len(views) == 4
    assert kept[0] > 0
    assert sum(kept) <= 120  # each view kept up to the bound of its own
    assert index._kept.postings == sum(kept)


def test_an_item_published_after_the_index_was_built_is_found_on_the_next_call(tenant: Tenant, sdk) -> None:
    platform = tenant.projects["platform"]
    add_item(platform, "Kafka partitions are rebalanced nightly.")
    client = sdk(tenant.issue()[0])
    assert len(_refs(client, "kafka")) == 1
    later = add_item(platform, "Kafka consumers commit offsets every second.").ref
    assert later in _refs(client, "kafka consumers")


def test_a_row_committed_below_the_watermark_is_found_once_the_project_is_counted_whole(
    tenant: Tenant, sdk, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A transaction that took its id before others committed, and committed after the index
    # looked: its id is below every row the index has seen.
    platform = tenant.projects["platform"]
    freed = add_item(platform, "A note whose id is given back.")
    add_item(platform, "Kafka partitions are rebalanced nightly.")
    freed_id = freed.pk
    freed.delete()
    monkeypatch.setattr(lexical_index, "FULL_CHECK_SECONDS", 3600.0)
    client = sdk(tenant.issue()[0])
    assert _refs(client, "kafka")
    late = Fact.objects.create(
        id=freed_id,
        workspace=platform.workspace,
        project=platform,
        text="Zookeeper was retired in the spring.",
        data_class=platform.data_class,
        actor="owner",
    )
    assert _refs(client, "zookeeper") == []  # not yet counted whole: the index has not seen it
    monkeypatch.setattr(lexical_index, "FULL_CHECK_SECONDS", 0.0)
    assert _refs(client, "zookeeper") == [late.ref]


def test_a_superseded_item_is_never_served_and_leaves_the_candidates(tenant: Tenant, sdk) -> None:
    platform = tenant.projects["platform"]
    old = add_item(platform, "Billing retries webhooks three times.")
    client = sdk(tenant.issue()[0])
    assert _refs(client, "billing webhooks") == [old.ref]
    # Moved on in place, as a consolidator's conditional update does: the index still holds it.
    Fact.objects.filter(pk=old.pk).update(state=State.SUPERSEDED)
    assert _refs(client, "billing webhooks") == []
    index = lexical_indexes.get(platform.pk)
    assert bool(index.dead[list(index.ids).index(old.pk)])


def test_processes_keep_only_as_many_indexed_items_as_the_budget_allows(
    tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lexical_index, "MAX_CACHED_ROWS", 3)
    for name in ("platform", "handbook"):
        for i in range(2):
            add_item(tenant.projects[name], f"Note {i} of {name}.")
    platform = lexical_indexes.get(tenant.projects["platform"].pk)
    lexical_indexes.get(tenant.projects["handbook"].pk)
    # Four items in two projects exceed three: the least recently used project was let go.
    assert lexical_indexes.get(tenant.projects["platform"].pk) is not platform


def test_a_views_kept_word_frequencies_rank_as_the_rows_would_without_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts = [
        "deploy the billing service",
        "deploy the search service",
        "billing retries webhooks",
        "deploy billing on tuesdays",
        "search reindexes nightly",
    ]
    rows = [(i + 1, "fact", "internal", State.ACTIVE, text) for i, text in enumerate(texts)]
    query = words("deploy billing service")

    def ranked(keep: int, *, dead: list[int], without: list[str]) -> list[tuple[int, float]]:
        monkeypatch.setattr(lexical_index, "MAX_KEPT_POSTINGS", keep)
        index = lexical_index._built(iter(rows))
        view = partial(index.rank, query, classes=["internal"], states=[State.ACTIVE], kinds=None, limit=10)
        view()  # a first ranking keeps the words' frequencies (when allowed)
        index.mark_dead(dead)
        return [(h.fact_id, h.score) for h in view(without=words(" ".join(without)))]

    monkeypatch.setattr(lexical_index, "MIN_KEPT_POSTING", 1)
    for dead, without in [([], []), ([1], []), ([], ["tuesdays"]), ([2], ["search"])]:
        kept = ranked(1_000, dead=dead, without=without)
        assert kept == ranked(0, dead=dead, without=without)
        assert kept
        assert not set(dead) & {i for i, _ in kept}


@pytest.mark.parametrize(
    "ids", [[1, 2, 3, 4, 5], [1, 2, 3, 9, 5]], ids=["ascending", "committed-out-of-order"]
)
def test_the_index_admits_the_items_a_ranking_would_let_through(ids: list[int]) -> None:
    rows = [
        (ids[0], "fact", "internal", State.ACTIVE, "deploy the billing service"),
        (ids[1], "method", "internal", State.ACTIVE, "how to deploy billing"),
        (ids[2], "fact", "confidential", State.ACTIVE, "billing keys rotate"),
    ]
    later = [
        (ids[3], "decision", "internal", State.ACTIVE, "billing deploys on tuesdays"),
        (ids[4], "fact", "internal", State.ACTIVE, "search reindexes nightly"),
    ]
    # A block indexed after the first, as rows committed since are.
    index = lexical_index._extended(lexical_index._built(iter(rows)), later)
    assert index.ascending == (ids == sorted(ids))
    index.mark_dead([ids[4]])
    admitted = partial(index.admitted, [*reversed(ids), 7, 0, 10], states=[State.ACTIVE])
    # Not held (7, 0, 10), dead, of another class or kind: not admitted; the rest with their kinds.
    assert admitted(classes=["internal"], kinds=None) == {
        ids[0]: "fact",
        ids[1]: "method",
        ids[3]: "decision",
    }
    assert admitted(classes=["internal", "confidential"], kinds=["fact"]) == {ids[0]: "fact", ids[2]: "fact"}
    assert admitted(classes=["internal"], kinds=None) == {
        h.fact_id: h.kind
        for h in index.rank(
            words("billing deploy"), classes=["internal"], states=[State.ACTIVE], kinds=None, limit=9
        )
    }
    assert index.admitted([], classes=["internal"], states=[State.ACTIVE], kinds=None) == {}


@pytest.mark.parametrize("ids", [[1, 2, 3, 4], [1, 2, 9, 4]], ids=["ascending", "committed-out-of-order"])
def test_the_index_tells_what_the_text_of_each_item_it_holds_tells(ids: list[int]) -> None:
    texts = [
        "Deploy the billing service!",
        "deploy billing service",  # the same telling words: case, stop words, punctuation aside
        "The ingest worker retries 5 times.",
        "The ingest worker retries 6 times.",  # another number
    ]
    rows = [(i, "fact", "internal", State.ACTIVE, text) for i, text in zip(ids, texts, strict=True)]
    index = lexical_index._extended(lexical_index._built(iter(rows[:2])), rows[2:])
    told = index.told_of([*reversed(ids), 7, 0])
    assert told == {
        i: lexical_index.telling(lexical_index.split_words(t)) for i, t in zip(ids, texts, strict=True)
    }
    assert told[ids[0]] == told[ids[1]]
    assert told[ids[0]][1] == 0  # no word holding a digit
    assert 0 != told[ids[2]][1] != told[ids[3]][1]  # their words holding a digit differ
    assert index.told_of([]) == {}


def test_the_items_a_query_names_are_those_holding_a_telling_identifier_few_of_the_callers_hold() -> None:
    rows = [
        (1, "fact", "internal", State.ACTIVE, "settlement-service-uk is owned by the ember team."),
        (2, "fact", "internal", State.ACTIVE, "An alert pages on-call when settlement-service-uk fails."),
        (3, "fact", "confidential", State.ACTIVE, "settlement-service-uk keys rotate monthly."),
        (4, "fact", "internal", State.ACTIVE, "An alert pages on-call when settlement-daemon-uk fails."),
        (5, "fact", "internal", State.ACTIVE, "settlement-service-uk times out after 3 seconds."),
        (6, "fact", "internal", State.ACTIVE, "The ember team is on-call this week; e-mail them."),
        (7, "fact", "internal", State.ACTIVE, "Release notes go out by e-mail."),
        (8, "fact", "internal", State.ACTIVE, "The deploy freeze starts on Friday."),
    ]
    index = lexical_index._built(iter(rows))
    index.mark_dead([5])

    def named(query: str, classes: list[str], most: int) -> set[int]:
        identifiers = lexical_index.compound_words(query)
        query_words = [w for term in search.keywords(query) for w in words(term)] + identifiers
        return index.named(
            identifiers, query_words, classes=classes, states=[State.ACTIVE], kinds=None, most=most
        )

    about = "Tell me about settlement-service-uk"
    # Held by the caller's current rows alone: not another class's, not a dead row.
    assert named(about, ["internal"], most=2) == {1, 2}
    assert named(about, ["internal", "confidential"], most=3) == {1, 2, 3}
    # An identifier more of the caller's items hold than `most` names none of them.
    assert named(about, ["internal", "confidential"], most=2) == set()
    # Nor where another word of the query is held by fewer of them: "page" by two rows.
    page = "Find who to page about settlement-service-uk"
    assert named(page, ["internal"], most=2) == {1, 2}
    assert named(page, ["internal", "confidential"], most=3) == set()
    assert named("the on-call rota", ["internal"], most=3) == {2, 4, 6}
    # Each identifier on its own: "on-call" (three rows) names none past `most`, nor where
    # "service" (two rows) tells more.
    assert named("settlement-service-uk and its on-call rota", ["internal"], most=3) == {1, 2}
    assert named("settlement-service-uk and its on-call rota", ["internal"], most=2) == {1, 2}
    # Named only where no other word of the query is held by fewer of the caller's rows.
    assert named("Resend the e-mail", ["internal"], most=9) == {6, 7}
    assert named("Draft the e-mail about the deploy freeze", ["internal"], most=9) == set()
    assert named("no identifier here", ["internal"], most=9) == set()
