"""Drops the judgement functions that no code calls: ``yardstick_vote_v1`` and ``yardstick_lease_v1``
(migration 0024), ``yardstick_lease_v2`` (0025) and ``yardstick_vote_v2`` (0026). The code calls the v3
functions of migration 0027 only. Going back creates them again from those migrations' texts.
PostgreSQL only: SQLite has no such functions.
"""

import importlib

from django.db import migrations

from common.database import on_postgresql_only

_V1 = importlib.import_module("collection.migrations.0024_judgement_functions")
_LEASE_V2 = importlib.import_module("collection.migrations.0025_lease_open_from")
_VOTE_V2 = importlib.import_module("collection.migrations.0026_vote_by_primary_key")


class Migration(migrations.Migration):
    dependencies = [
        ("collection", "0029_sweep_run"),
    ]

    operations = [
        on_postgresql_only(
            [_V1.DROP, _LEASE_V2.DROP, _VOTE_V2.DROP],
            reverse=_V1.VOTE_FUNCTION
            + _V1.LEASE_FUNCTION
            + _LEASE_V2.LEASE_FUNCTION
            + _VOTE_V2.VOTE_FUNCTION,
        ),
    ]
