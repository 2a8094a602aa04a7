"""common.database: the default database's vendor, without django.db.connection's lookup."""

from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.database import _vendor_of, aware_time, default_vendor, epoch_microseconds_sql


def test_the_default_vendor_is_the_connections():
    assert default_vendor() == connection.vendor


@pytest.mark.parametrize(
    ("engine", "vendor"),
    [("django.db.backends.sqlite3", "sqlite"), ("django.db.backends.postgresql", "postgresql")],
)
def test_the_vendor_is_the_engines_backends(engine, vendor):
    assert _vendor_of(engine) == vendor


def test_the_vendor_follows_the_settings(monkeypatch):
    from django.db import connections

    settings = {**connections.settings}
    settings["default"] = {**settings["default"], "ENGINE": "django.db.backends.sqlite3"}
    monkeypatch.setattr(connections, "settings", settings)
    assert default_vendor() == "sqlite"
    settings["default"]["ENGINE"] = "django.db.backends.postgresql"
    assert default_vendor() == "postgresql"


# --- times read as integers ------------------------------------------------------------------------


def test_an_integer_time_is_microseconds_since_the_unix_epoch_in_utc():
    # Hand-worked: 1,764,000,000 s after 1970-01-01 is 20,416 days and 57,600 s: 2025-11-24 16:00 UTC.
    assert aware_time(1_764_000_000_123_456) == datetime(2025, 11, 24, 16, 0, 0, 123_456, tzinfo=UTC)
    assert aware_time(0) == datetime(1970, 1, 1, tzinfo=UTC)
    assert aware_time(-1) == datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)
    assert aware_time(0).tzinfo is UTC and aware_time(None) is None


def test_the_sql_of_an_integer_time():
    assert epoch_microseconds_sql("a.expires_at") == "(EXTRACT(EPOCH FROM a.expires_at) * 1000000)::bigint"


_OFFSETS = st.integers(min_value=-15 * 60 + 1, max_value=15 * 60 - 1).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)


@pytest.mark.integration
@pytest.mark.django_db
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    value=st.datetimes(
        min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30, 23, 59, 59, 999_999), timezones=_OFFSETS
    )
)
def test_a_time_read_as_an_integer_is_the_one_djangos_loader_reads(postgres_required, value):
    with transaction.atomic(), connection.cursor() as cursor:  # a savepoint per example
        cursor.execute(
            f"SELECT {epoch_microseconds_sql('%s::timestamptz')}, %s::timestamptz, {epoch_microseconds_sql('NULL::timestamptz')}",
            [value, value],
        )
        microseconds, loaded_by_django, null = cursor.fetchone()
    assert aware_time(microseconds) == loaded_by_django == value
    assert aware_time(microseconds).tzinfo is loaded_by_django.tzinfo
    assert null is None
