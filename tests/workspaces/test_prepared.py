"""Prepared queries answer exactly what the ORM's querysets answer, for every shape of argument."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection as db
from django.utils import timezone

from memory.models import ContextRequest, Fact, Proposal
from memory.refs import new_proposal_ref
from memory.retrieval import with_ids
from memory.selectors import latest_publication
from memory.services import proposal_submit
from tests.conftest import Tenant
from tests.readpath import add_item
from workspaces.models import Connection
from workspaces.prepared import (
    MAX_PARAMETERS,
    Prepared,
    PreparedInsert,
    PreparedObjects,
    PreparedUpdate,
    _Places,
    sqlite_by_primary_key,
)
from workspaces.selectors import agent_scope

pytestmark = pytest.mark.django_db


def _by_request(workspace_id: int, actor: str, request_ids: list[str]) -> Any:
    return Proposal.objects.filter(
        workspace_id=workspace_id, actor=actor, request_id__in=request_ids
    ).values_list("request_id", "seq")


def _four_proposals(tenant: Tenant, prefix: str) -> None:
    """Proposals `{prefix}0` .. `{prefix}3`, made by claude@tests in platform."""
    _, connection = tenant.issue(actor="claude@tests")
    for i in range(4):
        proposal_submit(
            scope=agent_scope(connection),
            project_id="platform",
            request_id=f"{prefix}{i}",
            op="add_fact",
            text=f"Service {i} exposes /healthz.",
            evidence=[{"ref": f"runbooks/{i}.md", "trust": "trusted"}],
        )


def test_rows_match_the_querysets_for_scalars_and_lists_of_any_length(tenant: Tenant) -> None:
    _four_proposals(tenant, "prepared-")
    prepared = Prepared(_by_request)
    workspace = tenant.workspace.pk
    for wanted in (["prepared-1"], ["prepared-0", "prepared-3", "absent-1"], [], ["prepared-2"] * 2):
        for actor in ("claude@tests", "someone@else"):
            assert sorted(prepared.rows(workspace, actor, wanted)) == sorted(
                _by_request(workspace, actor, wanted)
            )
    assert len(prepared.rows(workspace, "claude@tests", ["prepared-0", "prepared-3", "absent-1"])) == 2


def test_a_list_taken_as_one_parameter_gets_each_calls_values(tenant: Tenant) -> None:
    # memory.retrieval.with_ids: one array parameter on PostgreSQL, a placeholder per id elsewhere.
    facts = [
        add_item(tenant.projects["platform"], f"Service {i} exposes /{probe}.").pk
        for i, probe in [(1, "healthz"), (2, "readyz")]
    ]

    def build(workspace_id: int, fact_ids: list[int]) -> Any:
        return with_ids(Fact.objects.filter(workspace_id=workspace_id), fact_ids).values_list("id", "text")

    prepared = Prepared(build)
    workspace = tenant.workspace.pk
    for wanted in ([facts[0]], [facts[1], facts[0], 10**9], [facts[1]] * 3, [10**9, 10**9 + 1]):
        assert sorted(prepared.rows(workspace, wanted)) == sorted(build(workspace, wanted))
    assert [text for _, text in prepared.rows(workspace, [facts[1], 10**9])] == ["Service 2 exposes /readyz."]


def test_a_list_parameter_of_integers_is_sent_as_one_array_literal() -> None:
    # psycopg dumps a list element by element; PostgreSQL reads `{...}` as an array of the
    # column's type. Lists of anything else are left to psycopg, which quotes them.
    places = _Places([(0, 0), (0, 1), (1, None)])
    assert places.values([[3, -1], 10**12]) == "{3,-1,1000000000000}"
    assert places.values([["public", "internal"], "restricted"]) == ["public", "internal", "restricted"]
    assert places.values([[True, 1], 2]) == [True, 1, 2]


def test_columns_that_need_converting_come_back_as_the_orm_gives_them(tenant: Tenant) -> None:
    _, connection = tenant.issue(actor="claude@tests")
    proposal_submit(
        scope=agent_scope(connection),
        project_id="platform",
        request_id="prepared-json",
        op="add_fact",
        text="Service 7 exposes /healthz.",
        evidence=[{"ref": "runbooks/7.md", "trust": "trusted"}],
    )

    def build(workspace_id: int) -> Any:
        return Proposal.objects.filter(workspace_id=workspace_id).values_list("evidence", "created_at")

    converted = Prepared(build).rows(tenant.workspace.pk)
    assert converted == list(build(tenant.workspace.pk))
    assert isinstance(converted[0][0], list)
    assert converted[0][1].tzinfo is not None
    # raw: what the driver returns, for comparing a row with itself (JSON stays text)
    raw = Prepared(build, raw=True).rows(tenant.workspace.pk)
    assert len(raw) == 1
    assert isinstance(raw[0][0], str)


def _connections_by_actor(workspace_id: int, actor: str) -> Any:
    return Connection.objects.select_related("workspace", "zone").filter(
        workspace_id=workspace_id, actor=actor
    )


def test_objects_are_the_querysets_instances_with_their_related_ones_and_converted_values(
    tenant: Tenant, other_tenant: Tenant, django_assert_num_queries: Any
) -> None:
    _, mine = tenant.issue(actor="claude@tests")
    tenant.issue(actor="claude@tests")
    other_tenant.issue(actor="claude@tests")
    prepared = PreparedObjects(_connections_by_actor)
    for workspace, actor in ((tenant.workspace.pk, "claude@tests"), (tenant.workspace.pk, "nobody")):
        expected = list(_connections_by_actor(workspace, actor))
        found = prepared.objects(workspace, actor)
        assert [c.pk for c in found] == [c.pk for c in expected]
        for got, want in zip(found, expected, strict=True):
            assert all(
                getattr(got, f.attname) == getattr(want, f.attname) for f in Connection._meta.concrete_fields
            )
    with django_assert_num_queries(1):  # the related rows come with it, values already converted
        (first, *_) = [c for c in prepared.objects(tenant.workspace.pk, "claude@tests") if c.pk == mine.pk]
        assert isinstance(first, Connection)
        assert first.workspace.slug == tenant.workspace.slug
        assert first.zone.name == mine.zone.name
        assert first.expires_at == mine.expires_at  # a datetime, as the ORM converts it
        assert isinstance(first.data_classes, list)
    assert first._state.db == "default"
    assert not first._state.adding


def test_objects_of_a_queryset_the_iterator_would_treat_differently_are_refused(tenant: Tenant) -> None:
    for build in (
        lambda workspace_id: Connection.objects.filter(workspace_id=workspace_id).only("actor"),
        lambda workspace_id: Connection.objects.filter(workspace_id=workspace_id).prefetch_related(
            "projects"
        ),
        lambda workspace_id: Connection.objects.filter(workspace_id=workspace_id).values_list("pk"),
    ):
        with pytest.raises(TypeError, match="plain querysets"):
            PreparedObjects(build).objects(tenant.workspace.pk)


def test_inserted_instances_get_their_keys_and_store_what_a_save_would(tenant: Tenant) -> None:
    _, connection = tenant.issue(actor="claude@tests")
    proposal_submit(
        scope=agent_scope(connection),
        project_id="platform",
        request_id="prepared-insert",
        op="add_fact",
        text="Deploys go out on Tuesdays.",
        evidence=[{"ref": "docs/deploy.md", "trust": "trusted"}],
    )
    original = Proposal.objects.get(request_id="prepared-insert")
    copies = []
    for i in range(3):
        copy = Proposal.objects.get(pk=original.pk)
        copy.pk, copy.request_id, copy.ref, copy.seq = None, f"prepared-copy-{i}", new_proposal_ref(), 100 + i
        copies.append(copy)
    PreparedInsert(Proposal).insert(copies)
    assert len({c.pk for c in copies}) == 3
    for copy in copies:
        assert copy.pk is not None
        assert not copy._state.adding
        stored = Proposal.objects.get(pk=copy.pk)
        for f in Proposal._meta.concrete_fields:
            assert getattr(stored, f.attname) == getattr(copy, f.attname), f.name
    assert stored.evidence == original.evidence


def test_an_insert_ignoring_conflicts_keeps_the_first_row_of_a_unique_key(tenant: Tenant) -> None:
    _, connection = tenant.issue(actor="claude@tests")
    project = tenant.projects["platform"]

    def record(task: str) -> ContextRequest:
        return ContextRequest(
            context_id="ctx_same",
            workspace_id=tenant.workspace.pk,
            project=project,
            connection=connection,
            actor="claude@tests",
            task=task,
            publication_version=3,
            refs=["fact_a", "fact_b"],
        )

    insert = PreparedInsert(ContextRequest, ignore_conflicts=True)
    first, again = record("first"), record("again")
    insert.insert([first])
    insert.insert([again])  # the same context_id: left out, no error
    assert not again._state.adding
    stored = ContextRequest.objects.get(context_id="ctx_same")
    assert (stored.task, stored.refs, stored.publication_version) == ("first", ["fact_a", "fact_b"], 3)
    assert stored.created_at is not None


def test_an_update_sets_the_values_on_exactly_the_rows_named_as_the_orm_would(tenant: Tenant) -> None:
    _four_proposals(tenant, "prepared-update-")
    proposals = list(Proposal.objects.filter(request_id__startswith="prepared-update-").order_by("seq"))
    chosen, others = proposals[:3], proposals[3:]
    decided_at = timezone.now()
    update = PreparedUpdate(Proposal, ["status", "decided_at"])
    assert update.update([p.pk for p in chosen], status=Proposal.Status.PUBLISHED, decided_at=decided_at) == 3
    assert update.update([], status=Proposal.Status.PUBLISHED, decided_at=decided_at) == 0
    for p in chosen:
        stored = Proposal.objects.get(pk=p.pk)
        assert (stored.status, stored.decided_at) == (Proposal.Status.PUBLISHED, decided_at)
    for p in others:
        stored = Proposal.objects.get(pk=p.pk)
        assert (stored.status, stored.decided_at) == (p.status, p.decided_at)
    with pytest.raises(TypeError, match="exactly the fields"):
        update.update([chosen[0].pk], status=Proposal.Status.PUBLISHED)


def test_a_table_read_by_primary_key_is_hinted_where_it_is_named_once() -> None:
    sql = 'SELECT "t"."id" FROM "t" WHERE "t"."id" IN (%s, %s)'
    hinted = 'SELECT "t"."id" FROM "t" NOT INDEXED WHERE "t"."id" IN (%s, %s)'
    assert sqlite_by_primary_key(sql, "t") == hinted
    with pytest.raises(ValueError, match="one FROM"):
        sqlite_by_primary_key('SELECT 1 FROM "t" WHERE 1 UNION SELECT 2 FROM "t" WHERE 1', "t")


def test_rows_past_what_one_statement_may_bind_go_in_several(tenant: Tenant) -> None:
    """PostgreSQL binds at most 65,535 parameters a statement once the server binds them."""
    _, connection = tenant.issue(actor="claude@tests")
    fields = [f for f in ContextRequest._meta.concrete_fields if f is not ContextRequest._meta.pk]
    count = MAX_PARAMETERS // len(fields) + 7
    rows = [
        ContextRequest(
            context_id=f"ctx_{n}",
            workspace_id=tenant.workspace.pk,
            project=tenant.projects["platform"],
            connection=connection,
            actor="claude@tests",
            task="bulk",
            publication_version=1,
            refs=[],
        )
        for n in range(count)
    ]
    PreparedInsert(ContextRequest).insert(rows)
    assert ContextRequest.objects.filter(task="bulk").count() == count
    assert len({row.pk for row in rows}) == count


def test_on_postgresql_a_statement_run_again_is_kept_prepared(tenant: Tenant) -> None:
    if db.vendor != "postgresql":
        pytest.skip("PostgreSQL's prepared statements")
    for _ in range(3):
        latest_publication(tenant.workspace.pk)
    with db.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [statement for (statement,) in cursor.fetchall()]
    assert any('FROM "memory_publication"' in statement for statement in prepared), prepared
