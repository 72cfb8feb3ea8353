"""Prepared queries answer exactly what the ORM's querysets answer, for every shape of argument."""

from __future__ import annotations

from typing import Any

import pytest

from memory.models import Proposal
from memory.services import proposal_submit
from tests.conftest import Tenant
from workspaces.prepared import Prepared
from workspaces.selectors import agent_scope

pytestmark = pytest.mark.django_db


def _by_request(workspace_id: int, actor: str, request_ids: list[str]) -> Any:
    return Proposal.objects.filter(
        workspace_id=workspace_id, actor=actor, request_id__in=request_ids
    ).values_list("request_id", "seq")


def test_rows_match_the_querysets_for_scalars_and_lists_of_any_length(tenant: Tenant) -> None:
    _, connection = tenant.issue(actor="claude@tests")
    for i in range(4):
        proposal_submit(
            scope=agent_scope(connection),
            project_id="platform",
            request_id=f"prepared-{i}",
            op="add_fact",
            text=f"Service {i} exposes /healthz.",
            evidence=[{"ref": f"runbooks/{i}.md", "trust": "trusted"}],
        )
    prepared = Prepared(_by_request)
    workspace = tenant.workspace.pk
    for wanted in (["prepared-1"], ["prepared-0", "prepared-3", "absent-1"], [], ["prepared-2"] * 2):
        for actor in ("claude@tests", "someone@else"):
            assert sorted(prepared.rows(workspace, actor, wanted)) == sorted(
                _by_request(workspace, actor, wanted)
            )
    assert len(prepared.rows(workspace, "claude@tests", ["prepared-0", "prepared-3", "absent-1"])) == 2


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
