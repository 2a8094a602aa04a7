"""Drops the last judgement functions, ``yardstick_vote_v3`` and ``yardstick_lease_v3`` (migration 0027):
the vote and the lease are plain statements in ``collection.voting`` now, the same on every database.
Going back creates them again from migration 0027's text. PostgreSQL only.
"""

import importlib

from django.db import migrations

from common.database import on_postgresql_only

_V3 = importlib.import_module("collection.migrations.0027_lease_by_expiry_vote_by_key")


class Migration(migrations.Migration):
    dependencies = [
        ("collection", "0030_drop_unused_judgement_functions"),
    ]

    operations = [
        on_postgresql_only([_V3.DROP], reverse=_V3.LEASE_FUNCTION + _V3.VOTE_FUNCTION),
    ]
