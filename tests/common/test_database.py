"""common.database: the default database's vendor, without django.db.connection's lookup."""

import pytest
from django.db import connection

from common.database import _vendor_of, default_vendor


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
