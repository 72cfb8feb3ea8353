"""A credential's kept resolution is used only while the rows it was resolved from are unchanged."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from tests.conftest import Tenant
from workspaces import bearers
from workspaces.bearers import bearer_verified, credential_state
from workspaces.models import Connection, DataClass, TrustZone
from workspaces.services import connection_revoke, zone_update

pytestmark = pytest.mark.django_db


def _scope(token: str) -> Any:
    verified = bearer_verified(token)
    return None if verified is None else verified[1]


def test_an_unchanged_credential_costs_one_query_and_resolves_to_the_same_scope(
    tenant: Tenant, django_assert_num_queries: Any
) -> None:
    token, _ = tenant.issue()
    first = _scope(token)
    with django_assert_num_queries(1):
        again = _scope(token)
    assert again == first


def test_a_credential_limited_to_projects_reads_its_list_every_call(
    tenant: Tenant, django_assert_num_queries: Any
) -> None:
    token, connection = tenant.issue(projects=["platform"])
    assert _scope(token).project_ids == frozenset({tenant.projects["platform"].pk})
    with django_assert_num_queries(2):
        _scope(token)
    connection.projects.set([tenant.projects["handbook"]])
    assert _scope(token).project_ids == frozenset({tenant.projects["handbook"].pk})


CHANGES: list[tuple[str, Callable[[Tenant, Connection], object], Callable[[Any], object]]] = [
    (
        "data classes narrowed",
        lambda t, c: Connection.objects.filter(pk=c.pk).update(data_classes=[DataClass.PUBLIC]),
        lambda scope: scope.data_classes == (DataClass.PUBLIC,),
    ),
    (
        "taken off every project",
        lambda t, c: Connection.objects.filter(pk=c.pk).update(all_projects=False),
        lambda scope: scope.project_ids == frozenset(),
    ),
    (
        "role lowered",
        lambda t, c: Connection.objects.filter(pk=c.pk).update(role=Connection.Role.READER),
        lambda scope: scope.role == Connection.Role.READER,
    ),
    (
        "zone made low-trust",
        lambda t, c: zone_update(zone=c.zone, trust=TrustZone.Trust.LOW, max_token_ttl=None),
        lambda scope: scope.trust == TrustZone.Trust.LOW,
    ),
    ("revoked", lambda t, c: connection_revoke(connection=c), lambda scope: scope is None),
    (
        "revoked by a raw update (another process)",
        lambda t, c: Connection.objects.filter(pk=c.pk).update(revoked_at=timezone.now()),
        lambda scope: scope is None,
    ),
    (
        "expired",
        lambda t, c: Connection.objects.filter(pk=c.pk).update(
            expires_at=timezone.now() - timedelta(seconds=1)
        ),
        lambda scope: scope is None,
    ),
    (
        "deleted",
        lambda t, c: Connection.objects.filter(pk=c.pk).delete(),
        lambda scope: scope is None,
    ),
]


@pytest.mark.parametrize(("change", "apply", "seen"), CHANGES, ids=[c[0] for c in CHANGES])
def test_any_change_to_the_credentials_rows_is_seen_on_the_next_call(
    tenant: Tenant, change: str, apply: Callable[[Tenant, Connection], object], seen: Callable[[Any], object]
) -> None:
    token, connection = tenant.issue(role=Connection.Role.CONTRIBUTOR)
    before = _scope(token)
    assert before is not None
    assert not seen(before)
    apply(tenant, connection)
    assert seen(_scope(token)), change


def test_unknown_credentials_match_no_state_and_are_never_kept(tenant: Tenant) -> None:
    kept = len(bearers._kept)
    for raw in ("unf_" + "A" * 43, "garbage", "x" * 5000, ""):
        assert credential_state(raw) is None
        assert bearer_verified(raw) is None
    assert len(bearers._kept) == kept


def test_kept_resolutions_are_keyed_by_a_digest_never_the_credential(tenant: Tenant) -> None:
    token, _ = tenant.issue()
    assert _scope(token) is not None
    assert all(token.encode() not in key for key in bearers._kept._kept)
    assert _scope(token[:-1] + ("A" if token[-1] != "A" else "B")) is None


def test_a_kept_resolution_is_never_used_past_the_credentials_own_expiry(tenant: Tenant) -> None:
    token, _ = tenant.issue()
    verified = bearer_verified(token)
    assert verified is not None
    found, scope = verified
    state = credential_state(token)
    assert state is not None
    kept = bearers.KeptBearers()
    kept.put(token, state, found, scope)
    assert kept.get(token, state) == (found, scope)
    kept.put(token, state, found._replace(valid_until=timezone.now()), scope)
    assert kept.get(token, state) is None
