"""The per-ballot scores moved from the scoring app to collection without touching their table."""

import pytest
from django.core.management import call_command
from django.db import connection

from collection.models import ItemScore
from scoring.models import ItemScore as AdminItemScore
from tests.factories import annotators, make_study, vote_until


@pytest.mark.parametrize(
    "app, migration", [("collection", "0009_itemscore"), ("scoring", "0002_itemscore_to_collection")]
)
def test_the_migrations_of_the_move_run_no_sql(app, migration, capsys, transactional_db):
    call_command("sqlmigrate", app, migration)
    statements = [
        line
        for line in capsys.readouterr().out.splitlines()
        if line.strip() and not line.startswith("--") and line.strip() not in ("BEGIN;", "COMMIT;")
    ]
    assert statements == []


def test_the_scores_keep_their_table_and_the_admin_proxy_reads_the_same_rows(db):
    study = make_study()
    vote_until(study, voters=annotators(study, 6))

    assert ItemScore._meta.db_table == "scoring_itemscore"
    assert "scoring_itemscore" in connection.introspection.table_names()
    assert AdminItemScore._meta.proxy
    assert list(AdminItemScore.objects.values_list("pk", flat=True)) == list(
        ItemScore.objects.values_list("pk", flat=True)
    )
    assert ItemScore.objects.count() == 15 + 8 + 4
