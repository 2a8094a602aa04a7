"""The ballot's count of votes in parts (``BallotCounter``), read as ``Ballot.votes_recorded`` on either
database; and the migration that moved the single counter column into parts and back."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from collection.exclusion import annotator_exclude
from collection.lifecycle import ballots_sweep
from collection.models import Ballot, BallotCounter, Vote
from collection.tasks import ballot_close_task
from tests.factories import annotators, make_study, vote_until

pytestmark = pytest.mark.django_db


def test_the_count_is_the_sum_of_its_parts_whatever_their_signs():
    study = make_study(tokens=6, ballot_count=1)  # 30 comparisons
    ballot = Ballot.objects.get(study=study)
    assert ballot.votes_recorded == 0  # no part yet
    assert BallotCounter.add(ballot_id=ballot.pk, votes=5, part=3) == (5, 30)
    assert BallotCounter.add(ballot_id=ballot.pk, votes=4, part=11) == (9, 30)
    assert BallotCounter.add(ballot_id=ballot.pk, votes=2, part=3) == (11, 30)
    assert BallotCounter.add(ballot_id=ballot.pk, votes=-3) == (8, 30)  # an exclusion's, on part 0
    assert dict(BallotCounter.objects.filter(ballot=ballot).values_list("part", "votes")) == {
        3: 7,
        11: 4,
        0: -3,
    }
    assert Ballot.objects.get(pk=ballot.pk).votes_recorded == 8
    assert list(study.ballots.values_list("votes_recorded", flat=True)) == [8]


def test_a_refreshed_ballot_reads_its_count_again_and_a_new_one_has_none():
    study = make_study(tokens=6, ballot_count=2)
    ballot = study.ballots.get(number=1)
    vote_until(study, voters=annotators(study, 3), max_votes=7)
    assert ballot.votes_recorded == 0  # read before the votes
    ballot.refresh_from_db()
    assert ballot.votes_recorded == 7 == Vote.objects.filter(ballot=ballot).count()
    ballot.refresh_from_db(fields=["status"])  # some fields only: the count is left as it was
    assert ballot.votes_recorded == 7
    assert Ballot(study=study, number=9, comparison_count=3).votes_recorded == 0


def test_other_ballots_parts_do_not_count_and_the_sweep_closes_a_ballot_its_parts_complete():
    first, second = make_study(tokens=6, ballot_count=2), make_study(tokens=6, ballot_count=2)
    one, other = first.ballots.get(number=1), second.ballots.get(number=1)
    BallotCounter.add(ballot_id=other.pk, votes=one.comparison_count)
    assert Ballot.objects.get(pk=one.pk).votes_recorded == 0
    # A ballot whose parts reach its comparisons, with its close lost: the sweep closes it.
    BallotCounter.add(ballot_id=one.pk, votes=10, part=4)
    BallotCounter.add(ballot_id=one.pk, votes=one.comparison_count - 10, part=9)
    assert ballots_sweep()["ballots_closed"] == 2  # both were complete by their counts
    assert {b.status for b in Ballot.objects.filter(pk__in=[one.pk, other.pk])} == {"closed"}


@pytest.mark.django_db(transaction=True)
def test_the_migration_moves_each_ballots_count_into_a_part_and_back():
    executor = MigrationExecutor(connection)
    before, after = [("collection", "0019_study_hidden_part")], [("collection", "0020_ballot_counter_parts")]
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    study = old.get_model("collection", "Study").objects.create(name="Old", slug="old")
    ballots = old.get_model("collection", "Ballot").objects
    counted = ballots.create(study=study, number=1, comparison_count=30, votes_recorded=17, status="closed")
    empty = ballots.create(study=study, number=2, comparison_count=8, votes_recorded=0)

    executor = MigrationExecutor(connection)
    executor.migrate(after)
    new = executor.loader.project_state(after).apps
    parts = new.get_model("collection", "BallotCounter").objects
    assert list(parts.values_list("ballot_id", "part", "votes")) == [(counted.pk, 0, 17)]
    parts.create(ballot_id=counted.pk, part=5, votes=3)
    parts.create(ballot_id=empty.pk, part=2, votes=-1)
    parts.create(ballot_id=empty.pk, part=7, votes=6)

    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    restored = old.get_model("collection", "Ballot").objects.order_by("number")
    assert list(restored.values_list("number", "votes_recorded")) == [(1, 20), (2, 5)]

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_the_close_task_leaves_a_ballot_open_until_it_is_fully_voted_or_past_its_deadline():
    # What a vote that read a count an exclusion then lowered would ask for: a close too early.
    study = make_study(tokens=6, ballot_count=2)  # ballot 1: 30 comparisons
    ballot = study.ballots.get(number=1)
    crowd = annotators(study, 5)
    vote_until(study, voters=crowd, max_votes=29)
    set_aside = annotator_exclude(annotator=crowd[0], reason="careless").exclusion.votes_set_aside
    assert set_aside > 0
    assert ballot_close_task(ballot.pk).endswith(" open")
    ballot.refresh_from_db()
    assert (ballot.status, ballot.votes_recorded) == ("open", 29 - set_aside)
    Ballot.objects.filter(pk=ballot.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    assert ballot_close_task(ballot.pk).endswith(" closed")
    assert study.ballots.get(number=2).status == "open"
