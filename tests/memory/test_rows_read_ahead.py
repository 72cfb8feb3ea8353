"""get_context reads ahead, while the task's vector is being embedded, the rows the words choose."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache

from memory import lexical_index, retrieval, selectors
from memory.context import compile as compiling
from memory.context import context_for_agent, context_named, duplicates, standing_parts_clear
from memory.context import serve as serving
from memory.embeddings import embedder
from memory.items import COLUMNS
from memory.lexical_index import Hit, lexical_indexes, split_words
from memory.models import Fact
from memory.services import publication_record
from memory.services.embeddings import embeddings_refresh
from tests.conftest import Tenant
from tests.readpath import add_item
from workspaces.exceptions import ForbiddenScope
from workspaces.selectors import agent_scope, project_for_agent

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(embedder() is None, reason="the local model's package is not installed"),
]

TASK = "move the release train of the deploy pipeline"
READ = selectors._agent_rows_read
NEAREST = retrieval._semantic


@pytest.fixture
def project_memory(tenant: Tenant) -> Tenant:
    platform = tenant.projects["platform"]
    for i in range(30):
        add_item(platform, f"Deploy note {i}: the release train leaves at {i % 12} o'clock.")
        add_item(platform, f"Pipeline {i} runs the canary before it deploys.", kind="decision")
    for i in range(4):
        add_item(platform, f"How to move release train {i}: merge, wait, watch.", kind="method")
    # Rows are kept per content version: read ahead only into those.
    publication_record(workspace=tenant.workspace, published_count=1, changed=True)
    embeddings_refresh()
    return tenant


def _bundle(tenant: Tenant, monkeypatch: pytest.MonkeyPatch, *, embedding: bool) -> tuple[Any, list[Any]]:
    """The bundle for TASK, as if its vector were (or were not) still on its way, and in order
    the ids of every statement reading whole rows and each use of the vector side."""
    cache.clear()
    standing_parts_clear()
    _, issued = tenant.issue()
    scope = agent_scope(issued)
    project = project_for_agent(scope, "platform")
    calls: list[Any] = []

    def recorded(scope: Any, project: Any, wanted: list[int], columns: tuple[str, ...]) -> Any:
        if columns == COLUMNS:  # not the candidates' checks
            calls.append(wanted)
        return READ(scope, project, wanted, columns)

    def semantic(*args: Any) -> Any:
        calls.append("vector side")
        return NEAREST(*args)

    monkeypatch.setattr(selectors, "_agent_rows_read", recorded)
    monkeypatch.setattr(retrieval, "_semantic", semantic)
    monkeypatch.setattr(retrieval, "_embedding", lambda query: embedding)
    bundle = context_for_agent(scope=scope, project=project, task=TASK)
    return bundle, calls


def test_the_rows_read_ahead_are_not_read_again_and_change_nothing(
    project_memory: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain, plain_calls = _bundle(project_memory, monkeypatch, embedding=False)
    ahead, ahead_calls = _bundle(project_memory, monkeypatch, embedding=True)
    same = ("policies", "facts", "open_threads", "methods", "pointers")
    assert {k: ahead[k] for k in same} == {k: plain[k] for k in same}
    assert ahead["facts"]
    assert ahead["methods"]
    # Without a vector on its way, one statement reads the chosen rows once the vector side has
    # been asked; with one, a statement reads rows before it, and no row it read is read again.
    assert plain_calls[0] == "vector side"
    (chosen,) = plain_calls[1:]
    assert chosen
    read_first, vector_side, *later = ahead_calls
    assert vector_side == "vector side"
    assert set(read_first) & set(chosen)  # rows read ahead were chosen
    assert all(not set(read_first) & set(ids) for ids in later)
    assert sum(map(len, later)) < len(chosen)


def test_the_read_ahead_is_given_the_current_candidates_best_first(
    project_memory: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    given: list[list[Hit]] = []
    ranked = retrieval.hybrid_rank

    def ranking(**kwargs: Any) -> Any:
        if kwargs.get("while_embedding") is not None:
            kwargs["while_embedding"] = given.append
        return ranked(**kwargs)

    monkeypatch.setattr(compiling, "hybrid_rank", ranking)
    _bundle(project_memory, monkeypatch, embedding=True)
    (hits,) = given
    assert hits
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(h.kind in ("fact", "decision", "method") for h in hits)


def test_what_each_offered_item_tells_is_looked_up_not_worked_out_on_the_call(
    project_memory: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    told: list[tuple[str, ...]] = []
    telling = lexical_index.telling

    def counted(words: list[str]) -> tuple[int, int]:
        told.append(tuple(words))
        return telling(words)

    monkeypatch.setattr(duplicates, "telling", counted)
    bundle, _ = _bundle(project_memory, monkeypatch, embedding=True)
    assert len(bundle["facts"]) > 1
    # Near-duplicates are told apart by what each text tells: the word index worked that out
    # with its words when it read the item, so no text of the bundle is split again.
    assert told == []
    index = lexical_indexes.get(project_for_agent(agent_scope(project_memory.issue()[1]), "platform").pk)
    facts = Fact.objects.filter(ref__in=[f["ref"] for f in bundle["facts"]])
    assert index.told_of([f.pk for f in facts]) == {f.pk: telling(split_words(f.text)) for f in facts}


def _bundle_named(scope: Any, project_id: str, query: str) -> Any:
    return context_named(scope=scope, project_id=project_id, task=query)["facts"]


def _page_named(scope: Any, project_id: str, query: str) -> Any:
    return selectors.search_named(scope=scope, project_id=project_id, query=query)["results"]


@pytest.mark.parametrize(
    ("call", "module"),
    [(_bundle_named, serving), (_page_named, selectors)],
    ids=["get_context", "search_memory"],
)
def test_a_project_this_scope_read_before_has_its_query_embedded_before_it_is_read_again(
    project_memory: Tenant, monkeypatch: pytest.MonkeyPatch, call: Any, module: Any
) -> None:
    events: list[str] = []
    reading = module.project_for_context_beside
    prefetching = retrieval.prefetch_query_text

    def read(scope: Any, project_id: str, beside: Any) -> Any:
        events.append(f"read {project_id}" + (" and what its indexes have not seen" if beside else ""))
        return reading(scope, project_id, beside)

    def prefetch(task: str) -> None:
        events.append("embed")
        prefetching(task)

    monkeypatch.setattr(module, "project_for_context_beside", read)
    monkeypatch.setattr(retrieval, "prefetch_query_text", prefetch)
    _, issued = project_memory.issue()
    scope = agent_scope(issued)
    call(scope, "platform", TASK)
    assert events[0] == "read platform"  # the first time, only once read does it embed the query
    events.clear()
    assert call(scope, "platform", "when does the release train leave?")
    assert events[:2] == ["embed", "read platform and what its indexes have not seen"]
    # Another credential, which may not read the project, learns nothing by its timing: it is
    # refused before anything is embedded for it.
    _, narrow = project_memory.issue(projects=["handbook"])
    events.clear()
    with pytest.raises(ForbiddenScope):
        call(agent_scope(narrow), "platform", TASK)
    assert events == ["read platform"]
