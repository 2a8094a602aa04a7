"""An exclusion on PostgreSQL, racing what touches the same rows: the close of the open ballot, and the
excluded annotator's own votes. The invariants of tests/reliability/invariants.py hold either way."""

import threading

import pytest
from django.db import connection

from collection.exclusion import annotator_exclude
from collection.lifecycle import ballot_close
from collection.models import Ballot, ExcludedVote, Exclusion, Vote
from collection.voting import comparison_next_for, vote_record
from common.errors import ServiceError
from tests.collection.test_exclusion import assert_collection_consistent
from tests.factories import annotators, make_study, vote_until
from tests.integration.test_concurrency import run_in_threads
from tests.integration.test_faults import assert_invariants_hold, close_waiting_on_the_lock, poll, row_lock_on

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_an_exclusion_waits_for_the_ballots_row_lock_as_the_close_does():
    study = make_study(tokens=6, ballot_count=1, appearances=4)
    crowd = annotators(study, 5)
    vote_until(study, voters=crowd, max_votes=10)
    ballot = Ballot.objects.get(study=study)
    done = []

    def exclude():
        try:
            done.append(annotator_exclude(annotator=crowd[0], reason="race").exclusion.votes_set_aside)
        finally:
            connection.close()

    with row_lock_on(ballot):  # a close holding the ballot
        worker = threading.Thread(target=exclude)
        worker.start()
        poll("the exclusion waiting on the ballot's lock", lambda: close_waiting_on_the_lock())
        assert done == [] and not Exclusion.objects.exists()
    worker.join(timeout=30)
    assert done == [2]
    assert_invariants_hold(study)


@pytest.mark.parametrize("seed", range(4))
def test_an_exclusion_racing_the_close_of_a_full_ballot_leaves_consistent_rows(eager_tasks, seed):
    study = make_study(tokens=6, ballot_count=2, appearances=4, seed=seed)  # ballot 1: 30 comparisons
    crowd = annotators(study, 5)
    vote_until(study, voters=crowd, max_votes=30)  # ballot 1 full; its close ran (eager) or runs now
    ballot = Ballot.objects.get(study=study, number=1)
    Ballot.objects.filter(study=study, number=2).delete()  # as if the close had not run yet
    ballot.scores.all().delete()
    Ballot.objects.filter(pk=ballot.pk).update(status=Ballot.Status.OPEN, closed_at=None)
    outcome = {}

    def race(number):
        if number == 0:
            ballot_close(ballot_id=ballot.pk)
        else:
            outcome["set_aside"] = annotator_exclude(
                annotator=crowd[0], reason="race"
            ).exclusion.votes_set_aside

    run_in_threads(2, race)
    ballot.refresh_from_db()
    assert ballot.status == Ballot.Status.CLOSED
    in_ballot = Vote.objects.filter(annotator=crowd[0], ballot=ballot).count()
    # Either the close came first (the votes stay in the closed ballot) or the exclusion (set aside).
    assert (in_ballot, outcome["set_aside"]) in {(6, 0), (0, 6)}
    assert ExcludedVote.objects.count() == outcome["set_aside"]
    assert_invariants_hold(study)


def test_an_annotator_voting_while_excluded_loses_no_vote_and_breaks_no_invariant(eager_tasks):
    study = make_study(tokens=10, ballot_count=1, appearances=10)  # 45 items, 225 comparisons
    crowd = annotators(study, 4)
    vote_until(study, voters=crowd, max_votes=20)
    target = crowd[0]
    refused = []

    def race(number):
        if number == 0:
            for _ in range(40):
                result = comparison_next_for(annotator=target)
                if result.assignment is None:
                    return
                try:
                    vote_record(annotator=target, assignment_id=result.assignment.pk, choice="left")
                except ServiceError as error:
                    refused.append(error.status)
                    return
        else:
            annotator_exclude(annotator=target, reason="race")

    run_in_threads(2, race)
    set_aside = ExcludedVote.objects.filter(annotator=target).count()
    assert Exclusion.objects.get(annotator=target).votes_set_aside == set_aside >= 5
    assert not Vote.objects.filter(annotator=target).exists()
    assert set(refused) <= {403}
    assert_collection_consistent(study)
    assert_invariants_hold(study)
