"""Eq. 2's ballot sizes are fixed when a study starts: the exact rounding applies to studies started from
now on, and a study started before keeps the sizes it was planned with (migration 0028)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from collection.models import Ballot, SemanticArea, Study
from collection.studies import study_plan
from tests.factories import annotators, disagreeing_crowd, make_study, vote_until

pytestmark = pytest.mark.django_db

BEFORE = [("collection", "0027_lease_by_expiry_vote_by_key")]


def _migrate(target):
    executor = MigrationExecutor(connection)
    executor.migrate(target)


def _migrate_to_the_latest():
    """Forward through 0028 and every later migration: the models read the latest columns."""
    _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def test_a_study_fixes_its_sizes_at_the_start_by_the_exact_rule_and_its_close_keeps_them():
    # 10 tokens: 45 items; α = 0.7 of 45 is 31.5 exactly, so ballot 2 holds 32 items (halves up).
    study = make_study(tokens=10, ballot_count=2, keep_fraction=0.7)
    assert study.ballot_sizes == [45, 32]
    vote_until(study, voters=annotators(study, 12), choose=disagreeing_crowd(study), max_votes=90)
    assert Ballot.objects.get(study=study, number=2).items.count() == 32


def test_a_per_area_study_fixes_each_areas_sizes():
    # Two areas of 10 tokens (45 items each): each keeps 32 of 45 in ballot 2.
    study = make_study(tokens=10, areas=2, ballot_count=2, keep_fraction=0.7, ranking_scope="per_area")
    assert study.ballot_sizes == [90, 64]
    assert sorted(SemanticArea.objects.filter(study=study).values_list("ballot_sizes", flat=True)) == [
        [45, 32],
        [45, 32],
    ]


def test_a_draft_has_no_fixed_sizes_and_its_plan_follows_its_settings():
    study = make_study(tokens=10, ballot_count=2, keep_fraction=0.7, start=False)
    assert study.ballot_sizes is None
    assert study_plan(study=study).sizes == (45, 32)


@pytest.mark.django_db(transaction=True)
def test_a_study_started_before_the_exact_rule_keeps_its_float_sizes_through_the_close():
    started = make_study(tokens=10, ballot_count=2, keep_fraction=0.7)
    draft = make_study(tokens=10, ballot_count=2, keep_fraction=0.7, start=False)
    hidden_before = list(started.items.order_by("index").values_list("hidden", flat=True))

    _migrate(BEFORE)  # the columns go: as a database of the version before
    _migrate_to_the_latest()

    started.refresh_from_db()
    draft.refresh_from_db()
    # Planned with 0.7 * 45 = 31.499999999999996 in floats: 31, and so it stays.
    assert started.ballot_sizes == [45, 31]
    assert draft.ballot_sizes is None
    assert study_plan(study=started).sizes == (45, 31)
    assert list(started.items.order_by("index").values_list("hidden", flat=True)) == hidden_before
    vote_until(started, voters=annotators(started, 12), choose=disagreeing_crowd(started), max_votes=90)
    assert Ballot.objects.get(study=started, number=2).items.count() == 31
    assert Study.objects.get(pk=draft.pk).ballot_sizes is None
