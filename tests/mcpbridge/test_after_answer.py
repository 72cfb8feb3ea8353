"""A new bundle's audit record is written after its answer is sent, not before (direct path)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from memory.models import ContextRequest
from memory.services import publishing
from tests.conftest import LiveServer, Tenant
from tests.readpath import _fresh_bundle_cache, add_item, raw_call, served_record  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_answer_does_not_wait_for_the_bundles_record(
    tenant: Tenant, live: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_item(tenant.projects["platform"], "Deploys go through the release train.")
    token, connection = tenant.issue()
    release = threading.Event()
    queue = publishing._records_later
    real = queue.write

    def held(rows: list[Any]) -> None:
        release.wait(timeout=5)  # were the answer to wait for this, it would come 5 s late
        real(rows)

    monkeypatch.setattr(queue, "write", held)
    # The direct path answers for a credential this process has verified before.
    assert raw_call(live.mcp_url, token, "list_projects", {}).status_code == 200

    response = raw_call(live.mcp_url, token, "get_context", {"project_id": "platform", "task": "deploy it"})

    assert response.status_code == 200
    bundle = response.json()["result"]["structuredContent"]
    assert not release.is_set()
    assert not ContextRequest.objects.filter(context_id=bundle["context_id"]).exists()
    release.set()
    record = served_record(bundle["context_id"])
    assert (record.connection_id, record.task) == (connection.pk, "deploy it")


def test_bundles_served_a_moment_apart_are_recorded_in_one_statement(
    tenant: Tenant, live: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_item(tenant.projects["platform"], "Deploys go through the release train.")
    token, connection = tenant.issue()
    queue = publishing._records_later
    real = queue.write
    written: list[list[str]] = []

    def noted(rows: list[ContextRequest]) -> None:
        written.append([row.task for row in rows])
        real(rows)

    monkeypatch.setattr(queue, "write", noted)
    monkeypatch.setattr(queue, "delay", 3.0)
    assert raw_call(live.mcp_url, token, "list_projects", {}).status_code == 200
    tasks = ["deploy it", "roll it back", "page the owner"]
    ids = []
    for task in tasks:
        response = raw_call(live.mcp_url, token, "get_context", {"project_id": "platform", "task": task})
        ids.append(response.json()["result"]["structuredContent"]["context_id"])

    records = [served_record(context_id) for context_id in ids]

    assert written == [tasks]
    assert [(r.connection_id, r.task) for r in records] == [(connection.pk, task) for task in tasks]
