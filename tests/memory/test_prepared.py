"""Prepared queries answer exactly what the ORM's querysets answer, for every shape of argument."""

from __future__ import annotations

from typing import Any

import pytest

from memory.models import Proposal
from memory.prepared import Prepared
from memory.services import proposal_submit
from tests.conftest import Tenant
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


def test_a_column_that_needs_converting_is_refused_at_its_first_call(tenant: Tenant) -> None:
    prepared = Prepared(
        lambda workspace_id: Proposal.objects.filter(workspace_id=workspace_id).values_list("evidence")
    )
    with pytest.raises(TypeError, match="raw values"):
        prepared.rows(tenant.workspace.pk)
