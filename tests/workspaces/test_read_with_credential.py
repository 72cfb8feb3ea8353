"""A call's first read in its credential's statement (workspaces.bearers.ReadAhead): one statement
for both, and its rows offered to the call only when the credential, verified by that statement,
still carries the very scope the read was made for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memory.selectors import project_for_context_beside, project_read
from tests.conftest import Tenant
from tests.workspaces.test_bearers import CHANGES
from workspaces.bearers import ReadAhead, bearer_verified, kept_scope, read_with_credential
from workspaces.models import Connection

pytestmark = pytest.mark.django_db


def _kept(tenant: Tenant) -> tuple[str, Connection, Any]:
    token, connection = tenant.issue()
    assert bearer_verified(token) is not None  # resolved once, and kept
    kept = kept_scope(token)
    assert kept is not None
    return token, connection, kept


def test_the_project_is_read_in_the_credential_s_statement_and_served_from_it(
    tenant: Tenant, django_assert_num_queries: Any
) -> None:
    token, _, kept = _kept(tenant)
    read = project_read(kept, "platform", None)
    expected = read.rows()

    with django_assert_num_queries(1):
        verified = bearer_verified(token, ReadAhead(kept, read))
        assert verified is not None
        scope = verified[1]
        at, _ = project_for_context_beside(scope, "platform", None)

    assert scope is kept
    assert at.project == tenant.projects["platform"]
    assert expected
    assert at.project.pk == expected[0][0]
    assert read_with_credential(scope, read) is None  # taken once


def test_a_project_the_credential_statement_does_not_find_is_refused_as_before(tenant: Tenant) -> None:
    token, _, kept = _kept(tenant)
    read = project_read(kept, "nowhere", None)
    verified = bearer_verified(token, ReadAhead(kept, read))
    assert verified is not None
    assert read_with_credential(verified[1], read) == []  # found nothing: the call refuses it


@pytest.mark.parametrize(("label", "change", "_check"), CHANGES, ids=[c[0] for c in CHANGES])
def test_a_credential_changed_since_it_was_kept_gets_nothing_read_for_its_old_scope(
    tenant: Tenant, label: str, change: Callable[[Tenant, Connection], object], _check: Any
) -> None:
    token, connection, kept = _kept(tenant)
    read = project_read(kept, "platform", None)
    change(tenant, connection)

    verified = bearer_verified(token, ReadAhead(kept, read))

    if verified is not None:
        assert verified[1] is not kept
        assert read_with_credential(verified[1], read) is None
    assert read_with_credential(kept, read) is None


def test_rows_are_offered_only_for_the_read_they_were_made_for(tenant: Tenant) -> None:
    token, _, kept = _kept(tenant)
    read = project_read(kept, "platform", None)
    verified = bearer_verified(token, ReadAhead(kept, read))
    assert verified is not None
    assert read_with_credential(verified[1], project_read(kept, "handbook", None)) is None
    assert read_with_credential(verified[1], read) is not None
