"""PostgreSQL timestamps are read by workspaces.timestamps' loader, with Django's loader's values."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from django.db import connection
from django.db.backends.postgresql.psycopg_any import register_tzloader  # type: ignore[import-untyped]
from psycopg.pq import Format

from tests.conftest import Tenant
from tests.readpath import add_item
from workspaces.timestamps import UtcTimestampLoader

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's timestamps"),
]

WRITTEN = [
    "2026-12-06 16:02:37.095004+00",
    "2026-12-06 16:02:37+00",
    "2026-12-06 16:02:37.5+00",
    "0001-01-01 00:00:00+00",
    "9999-12-31 23:59:59.999999+00",
    "2026-06-30 23:59:60+00",  # a leap second: PostgreSQL rolls it over
    "2026-12-06 18:02:37.1+02",  # written with another offset: read back in UTC
    "2026-03-29 01:30:00 Europe/Paris",
]
REFUSED = ["infinity", "-infinity", "0044-03-15 12:00:00+00 BC", "10000-01-01 00:00:00+00"]


def _read(literal: str, *, django_loader: bool, session_zone: str = "") -> Any:
    with connection.cursor() as cursor:
        if session_zone:  # for this test's transaction only
            cursor.execute("SELECT set_config('TimeZone', %s, true)", [session_zone])
        if django_loader:
            register_tzloader(connection.timezone, cursor.cursor)
        cursor.execute("SELECT %s::timestamptz", [literal])
        return cursor.fetchone()[0]


def test_a_connection_reads_timestamps_with_the_fast_loader() -> None:
    connection.ensure_connection()
    adapters = connection.connection.adapters
    assert adapters.get_loader(adapters.types["timestamptz"].oid, Format.TEXT) is UtcTimestampLoader


@pytest.mark.parametrize("literal", WRITTEN)
def test_every_value_is_the_one_djangos_loader_reads(literal: str) -> None:
    ours = _read(literal, django_loader=False)
    djangos = _read(literal, django_loader=True)
    assert ours == djangos
    assert ours.tzinfo is djangos.tzinfo is datetime.UTC
    assert ours.utcoffset() == datetime.timedelta(0)


def test_a_session_in_another_time_zone_reads_what_djangos_loader_reads() -> None:
    # Not a session Django opens (it sets UTC), but whatever PostgreSQL writes is read alike.
    literal = "2026-12-06 16:02:37.095004+00"
    ours = _read(literal, django_loader=False, session_zone="Europe/Paris")
    assert ours == _read(literal, django_loader=True, session_zone="Europe/Paris")


@pytest.mark.parametrize("literal", REFUSED)
def test_a_value_python_cannot_hold_is_refused_as_djangos_loader_refuses_it(literal: str) -> None:
    outcomes = []
    for django_loader in (False, True):
        with pytest.raises(Exception) as refused:  # noqa: PT011 - compared with Django's below
            _read(literal, django_loader=django_loader)
        outcomes.append((type(refused.value), str(refused.value)))
    assert outcomes[0] == outcomes[1]


def test_a_model_round_trips_its_timestamps(tenant: Tenant) -> None:
    fact = add_item(tenant.projects["platform"], "The staging database is rebuilt every Sunday night.")
    read = type(fact).objects.get(pk=fact.pk)
    assert read.created_at == fact.created_at
    assert read.created_at.tzinfo is datetime.UTC
