"""A cached bundle never outlives a narrowing of the credential's authority."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import Tenant
from tests.mcp_client import MCPClient
from tests.readpath import add_item, all_items
from workspaces.models import Connection, DataClass

pytestmark = pytest.mark.django_db(transaction=True)

TASK = {"project_id": "platform", "task": "rotate the payment webhook secret"}


def _texts(client: MCPClient) -> set[str]:
    return {item["text"] for item in all_items(client.ok("get_context", TASK))}


def test_withdrawing_a_data_class_hides_its_items_on_the_very_next_call(
    tenant: Tenant, mcp_client: Callable[..., MCPClient]
) -> None:
    platform = tenant.projects["platform"]
    add_item(platform, "The payment webhook secret rotates every 90 days.")
    add_item(platform, "The webhook secret lives in vault path pay/hooks.", data_class=DataClass.CONFIDENTIAL)
    token, connection = tenant.issue(
        data_classes=[DataClass.PUBLIC, DataClass.INTERNAL, DataClass.CONFIDENTIAL]
    )
    client = mcp_client(token)
    first = client.ok("get_context", TASK)
    assert "The webhook secret lives in vault path pay/hooks." in {i["text"] for i in all_items(first)}
    assert client.ok("get_context", TASK)["context_id"] == first["context_id"], "served from the cache"

    # An operator narrows the connection (the admin's edit: no publication, nothing else changes).
    Connection.objects.filter(pk=connection.pk).update(data_classes=[DataClass.PUBLIC, DataClass.INTERNAL])
    narrowed = client.ok("get_context", TASK)
    assert narrowed["context_id"] != first["context_id"]
    assert _texts(client) == {"The payment webhook secret rotates every 90 days."}


def test_taking_a_project_off_the_list_refuses_it_on_the_very_next_call(
    tenant: Tenant, mcp_client: Callable[..., MCPClient]
) -> None:
    add_item(tenant.projects["platform"], "The payment webhook secret rotates every 90 days.")
    token, connection = tenant.issue()
    client = mcp_client(token)
    assert _texts(client) == {"The payment webhook secret rotates every 90 days."}
    Connection.objects.filter(pk=connection.pk).update(all_projects=False)
    connection.projects.set([tenant.projects["handbook"]])
    assert client.error("get_context", TASK)["code"] == "forbidden_scope"
