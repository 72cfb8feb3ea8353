"""`agent_rows`, the compiled read of chosen rows, sees exactly what `agent_facts` sees."""

from __future__ import annotations

from typing import Any

import pytest

from memory.context.items import COLUMNS
from memory.models import Fact, State
from memory.retrieval import with_ids
from memory.selectors import ROWS_SHAPE, agent_facts, agent_rows
from tests.conftest import Tenant
from tests.readpath import add_item
from workspaces.models import DataClass
from workspaces.selectors import agent_scope

pytestmark = pytest.mark.django_db


def test_the_compiled_rows_are_the_scoped_querysets_for_every_kind_of_credential(
    tenant: Tenant, other_tenant: Tenant
) -> None:
    platform, handbook = tenant.projects["platform"], tenant.projects["handbook"]
    items = [add_item(platform, f"Deploy note {i}.") for i in range(ROWS_SHAPE + 3)]
    items += [
        add_item(platform, "Restricted salary band.", data_class=DataClass.RESTRICTED),
        add_item(platform, "Confidential outage.", data_class=DataClass.CONFIDENTIAL),
        add_item(platform, "Who owns the pipeline?", kind="thread"),
        add_item(handbook, "Handbook note."),
        add_item(other_tenant.projects["platform"], "Another tenant's note."),
    ]
    Fact.objects.filter(pk=items[0].pk).update(state=State.SUPERSEDED)
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
