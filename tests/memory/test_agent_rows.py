"""`agent_rows`, the compiled read of chosen rows, sees exactly what `agent_facts` sees."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.context import context_for_agent, standing_parts_clear
from memory.imports import memory_import
from memory.items import COLUMNS
from memory.models import Fact, State
from memory.retrieval import with_ids
from memory.selectors import ROWS_SHAPE, _RowCache, agent_facts, agent_rows
from tests.conftest import Tenant
from tests.readpath import add_item
from workspaces.models import DataClass
from workspaces.selectors import agent_scope, project_for_agent

pytestmark = pytest.mark.django_db


def _items_of_every_scope(tenant: Tenant, other_tenant: Tenant, *, notes: int, thread: bool) -> list[Fact]:
    """`notes` deploy notes in platform (the first no longer current), then a restricted and a
    confidential item, an open thread if asked, one in another project and one of another tenant."""
    platform = tenant.projects["platform"]
    items = [add_item(platform, f"Deploy note {i}.") for i in range(notes)]
    items += [
        add_item(platform, "Restricted salary band.", data_class=DataClass.RESTRICTED),
        add_item(platform, "Confidential outage.", data_class=DataClass.CONFIDENTIAL),
        *([add_item(platform, "Who owns the pipeline?", kind="thread")] if thread else []),
        add_item(tenant.projects["handbook"], "Handbook note."),
        add_item(other_tenant.projects["platform"], "Another tenant's note."),
    ]
    Fact.objects.filter(pk=items[0].pk).update(state=State.SUPERSEDED)
    return items


def test_the_compiled_rows_are_the_scoped_querysets_for_every_kind_of_credential(
    tenant: Tenant, other_tenant: Tenant
) -> None:
    platform = tenant.projects["platform"]
    items = _items_of_every_scope(tenant, other_tenant, notes=ROWS_SHAPE + 3, thread=True)
    ids = [item.pk for item in items]
    credentials: list[dict[str, Any]] = [
        {},
        {"data_classes": [DataClass.PUBLIC, DataClass.INTERNAL, DataClass.CONFIDENTIAL]},
        {"data_classes": [DataClass.INTERNAL]},
        {"projects": ["platform", "handbook"]},
        {"projects": ["platform"], "data_classes": [DataClass.INTERNAL, DataClass.CONFIDENTIAL]},
    ]
    for options in credentials:
        scope = agent_scope(tenant.issue(**options)[1])
        for wanted in (ids, ids[:5], ids[-3:], [ids[0]], []):
            expected = with_ids(agent_facts(scope, platform), wanted).values_list(*COLUMNS)
            assert sorted(agent_rows(scope, platform, wanted, COLUMNS)) == sorted(expected), options
    internal = agent_scope(tenant.issue()[1])
    served = {row[0] for row in agent_rows(internal, platform, ids, COLUMNS)}
    assert served == {item.pk for item in items[1 : ROWS_SHAPE + 3]} | {items[-3].pk}


def test_rows_kept_per_content_version_are_each_credentials_own_scoped_rows(
    tenant: Tenant, other_tenant: Tenant, django_assert_num_queries: Any
) -> None:
    platform = tenant.projects["platform"]
    ids = [item.pk for item in _items_of_every_scope(tenant, other_tenant, notes=5, thread=False)]
    credentials: list[dict[str, Any]] = [
        {"data_classes": [DataClass.PUBLIC, DataClass.INTERNAL, DataClass.CONFIDENTIAL]},
        {},
        {"data_classes": [DataClass.INTERNAL]},
        {"projects": ["platform"], "data_classes": [DataClass.INTERNAL, DataClass.CONFIDENTIAL]},
        {"projects": ["platform", "handbook"]},
    ]
    scopes = [agent_scope(tenant.issue(**options)[1]) for options in credentials]
    expected = [sorted(with_ids(agent_facts(s, platform), ids).values_list(*COLUMNS)) for s in scopes]
    # The widest credential reads first: a narrower one at the same version must not get its rows.
    for scope, rows in zip(scopes, expected, strict=True):
        assert sorted(agent_rows(scope, platform, ids, COLUMNS, version=7)) == rows
    with django_assert_num_queries(0):
        for scope, rows in zip(scopes, expected, strict=True):
            assert sorted(agent_rows(scope, platform, ids, COLUMNS, version=7)) == rows
            partly = {row[0] for row in agent_rows(scope, platform, ids[2:], COLUMNS, version=7)}
            assert partly == {row[0] for row in rows if row[0] in ids[2:]}
    assert "Confidential outage." in {row[4] for row in expected[0]}
    assert "Confidential outage." not in {row[4] for row in expected[1]}


def test_a_row_no_longer_current_is_read_again_under_the_next_content_version(tenant: Tenant) -> None:
    platform = tenant.projects["platform"]
    item = add_item(platform, "Deploys run at nine.")
    scope = agent_scope(tenant.issue()[1])
    assert [row[0] for row in agent_rows(scope, platform, [item.pk], ("id",), version=1)] == [item.pk]
    Fact.objects.filter(pk=item.pk).update(state=State.SUPERSEDED)  # as a newer version does
    assert agent_rows(scope, platform, [item.pk], ("id",), version=2) == []
    # A write that bypasses publication must forget the kept rows itself.
    standing_parts_clear()
    assert agent_rows(scope, platform, [item.pk], ("id",), version=1) == []


def test_an_imported_new_version_replaces_the_old_one_in_the_next_new_tasks_bundle(
    tenant: Tenant, tmp_path: Path
) -> None:
    platform = tenant.projects["platform"]
    scope = agent_scope(tenant.issue()[1])
    source = tmp_path / "notes.jsonl"

    def imported(text: str) -> None:
        source.write_text(json.dumps({"kind": "fact", "text": text, "id": "wiki/keys"}) + "\n")
        memory_import(project=platform, path=source, fmt="jsonl")

    def facts(task: str) -> list[str]:
        project = project_for_agent(scope, "platform")
        return [item["text"] for item in context_for_agent(scope=scope, project=project, task=task)["facts"]]

    imported("Deploy keys rotate every 90 days.")
    assert facts("rotate the deploy keys") == ["Deploy keys rotate every 90 days."]
    imported("Deploy keys rotate every 30 days.")
    # A task never asked before: its candidates are checked under the new content version.
    assert facts("rotate deploy keys today") == ["Deploy keys rotate every 30 days."]


def test_the_kept_rows_stay_within_their_bound_even_for_one_scope_and_version(tenant: Tenant) -> None:
    platform = tenant.projects["platform"]
    ids = [add_item(platform, f"Deploy note number {i} for the bound.").pk for i in range(40)]
    scope = agent_scope(tenant.issue()[1])
    sizing = _RowCache()
    sizing.rows(scope, platform, 1, ids[:4], COLUMNS)
    kept = _RowCache(max_bytes=sizing._total * 2)  # room for about eight of the forty rows
    for start in range(0, 40, 4):
        rows = kept.rows(scope, platform, 1, ids[start : start + 4], COLUMNS)
        # Always the scoped rows asked for, whatever was kept or let go.
        assert [row[0] for row in rows] == ids[start : start + 4]
        assert kept._total <= kept.max_bytes
    # Rows kept last are served again without a query.
    again = ids[36:40]
    with CaptureQueriesContext(connection) as queries:
        assert [row[0] for row in kept.rows(scope, platform, 1, again, COLUMNS)] == again
    assert len(queries) == 0


def test_kept_rows_hold_one_copy_of_each_repeated_value_and_read_the_same(tenant: Tenant) -> None:
    platform = tenant.projects["platform"]
    ids = [add_item(platform, f"Deploy note {i}.").pk for i in range(6)]
    scope = agent_scope(tenant.issue()[1])
    kept = _RowCache().rows(scope, platform, 1, ids, COLUMNS)
    assert sorted(kept) == sorted(with_ids(agent_facts(scope, platform), ids).values_list(*COLUMNS))
    for column in ("kind", "state", "data_class", "actor", "origin", "source"):
        at = COLUMNS.index(column)
        assert len({id(row[at]) for row in kept}) == 1, column  # the same value, one object
    assert len({id(row[COLUMNS.index("ref")]) for row in kept}) == len(ids)


def test_on_sqlite_the_rows_are_found_by_primary_key_alone(tenant: Tenant, other_tenant: Tenant) -> None:
    """SQLite would search the (project, id) index and then the table for each id: the chosen rows
    are read by rowid instead, the scope's terms checked on each row found."""
    if connection.vendor != "sqlite":
        pytest.skip("a hint of SQLite's planner")
    platform = tenant.projects["platform"]
    items = _items_of_every_scope(tenant, other_tenant, notes=40, thread=False)
    scope = agent_scope(tenant.issue()[1])
    ids = [item.pk for item in items]
    with CaptureQueriesContext(connection) as queries:
        rows = agent_rows(scope, platform, ids, COLUMNS)
    assert sorted(row[0] for row in rows) == [item.pk for item in items[1:40]]  # the current notes
    [statement] = [q["sql"] for q in queries]
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {statement}")
        plan = [row[-1] for row in cursor.fetchall()]
    assert plan == ["SEARCH memory_fact USING INTEGER PRIMARY KEY (rowid=?)"]
