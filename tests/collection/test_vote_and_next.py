"""One judgement, one call: ``vote_record_and_next`` records the vote, then leases the next comparison."""

from datetime import timedelta

import pytest
from django.test import TestCase
from django.utils import timezone

from collection.models import Assignment, Ballot, Comparison, Study, Vote
from collection.voting import NextReason, comparison_next_for, vote_record_and_next
from common.errors import ServiceError
from tests.factories import annotators, disagreeing_crowd, make_study

pytestmark = pytest.mark.django_db


def test_a_crowd_that_disagrees_gets_each_vote_recorded_and_its_next_comparison_in_the_answer():
    study = make_study(tokens=6, ballot_count=1, appearances=4)  # 15 items, 30 comparisons
    crowd = annotators(study, 5)
    choose = disagreeing_crowd(study, seed=1)
    held = {annotator.pk: comparison_next_for(annotator=annotator) for annotator in crowd}
    recorded = []
    with TestCase.captureOnCommitCallbacks(execute=False) as close_requests:
        while any(result.assignment is not None for result in held.values()):
            for annotator in crowd:
                result = held[annotator.pk]
                if result.assignment is None:
                    continue
                choice = choose(Comparison.objects.get(pk=result.assignment.comparison_id))
                vote, created, held[annotator.pk] = vote_record_and_next(
                    annotator=annotator, assignment_id=result.assignment.pk, choice=choice
                )
                assert created and (vote.assignment_id, vote.choice) == (result.assignment.pk, choice)
                recorded.append((vote.pk, choice))
                following = held[annotator.pk]
                if following.assignment is not None:
                    active = Assignment.objects.get(annotator=annotator, status=Assignment.Status.ACTIVE)
                    assert following.assignment.pk == active.pk
                    assert following.sides["left"]["item"] == active.comparison.left_item_id
                    assert following.progress.votes_total == Vote.objects.filter(annotator=annotator).count()
    ballot = Ballot.objects.get(study=study)
    assert sorted(Vote.objects.values_list("pk", "choice")) == sorted(recorded)
    assert len(recorded) == ballot.comparison_count == ballot.votes_recorded == 30
    assert {choice for _, choice in recorded} == {"left", "right"}  # the crowd disagrees
    assert set(Comparison.objects.filter(ballot=ballot).values_list("status", flat=True)) == {"voted"}
    assert following.reason == NextReason.BALLOT_CLOSING  # the answer to the completing vote
    assert len(close_requests) == 1  # the completing vote, and only it, asked for the close


def test_a_retried_vote_returns_the_recorded_vote_and_the_comparison_held_next():
    study = make_study()
    (alice,) = annotators(study, 1)
    first = comparison_next_for(annotator=alice).assignment
    vote, created, following = vote_record_and_next(annotator=alice, assignment_id=first.pk, choice="left")
    again, created_again, following_again = vote_record_and_next(
        annotator=alice, assignment_id=first.pk, choice="right"
    )
    assert (created, created_again) == (True, False)
    assert (again.pk, again.choice) == (vote.pk, "left")
    assert following_again.assignment.pk == following.assignment.pk != first.pk
    assert Vote.objects.count() == 1 and Ballot.objects.get(study=study, number=1).votes_recorded == 1


def written(study):
    """What a vote writes: votes, assignments by status, comparisons by status, the ballots' counters."""
    return (
        list(Vote.objects.values_list("pk", flat=True)),
        sorted(Assignment.objects.values_list("pk", "status")),
        sorted(Comparison.objects.filter(ballot__study=study).values_list("pk", "status")),
        list(Ballot.objects.filter(study=study).values_list("votes_recorded", flat=True)),
    )


def test_a_refused_vote_leaves_nothing_written_and_leases_nothing():
    study = make_study(lease_seconds=60)
    alice, bob = annotators(study, 2)
    now = timezone.now()
    held = comparison_next_for(annotator=alice, now=now).assignment
    before = written(study)
    refusals = [
        (dict(annotator=bob, choice="left", now=now), 404, f"assignment {held.pk} is not one of yours"),
        (
            dict(annotator=alice, choice="tie", now=now),
            400,
            'this study does not allow ties: choose "left" or "right"',
        ),
        (
            dict(annotator=alice, choice="up", now=now),
            400,
            "choice must be one of left, right, tie, got 'up'",
        ),
        (
            dict(annotator=alice, choice="left", now=now + timedelta(seconds=61)),
            409,
            "your time for this comparison ran out and it went back to the pool; ask for the next one",
        ),
    ]
    for arguments, status, message in refusals:
        with pytest.raises(ServiceError) as raised:
            vote_record_and_next(assignment_id=held.pk, **arguments)
        assert (raised.value.status, raised.value.message) == (status, message)
        assert written(study) == before
    # The assignment passes its checks but the comparison no longer takes votes: the first write (the
    # assignment marked voted) is taken back with the refusal.
    Comparison.objects.filter(pk=held.comparison_id).update(status=Comparison.Status.CANCELLED)
    before = written(study)
    with pytest.raises(ServiceError) as raised:
        vote_record_and_next(annotator=alice, assignment_id=held.pk, choice="left", now=now)
    assert (raised.value.status, raised.value.message) == (409, "this comparison no longer takes votes")
    assert written(study) == before
    assert Assignment.objects.get(pk=held.pk).status == Assignment.Status.ACTIVE


def test_a_vote_in_a_closed_ballot_is_refused_with_its_number():
    study = make_study()
    (alice,) = annotators(study, 1)
    held = comparison_next_for(annotator=alice).assignment
    Ballot.objects.filter(pk=held.ballot_id).update(status=Ballot.Status.CLOSED)
    before = written(study)
    with pytest.raises(ServiceError) as raised:
        vote_record_and_next(annotator=alice, assignment_id=held.pk, choice="left")
    assert (raised.value.status, raised.value.message) == (
        409,
        "ballot 1 is closed; this comparison no longer takes votes",
    )
    assert written(study) == before


def vote_through_ballot_one(study, crowd):
    """Round-robin votes by ``crowd`` until ballot 1 is complete; the answer to its completing vote."""
    results = {annotator.pk: comparison_next_for(annotator=annotator) for annotator in crowd}
    ballot = Ballot.objects.get(study=study, number=1)
    for turn in range(10 * ballot.comparison_count):
        annotator = crowd[turn % len(crowd)]
        held = results[annotator.pk].assignment
        if held is None:
            results[annotator.pk] = comparison_next_for(annotator=annotator)
            continue
        _vote, created, results[annotator.pk] = vote_record_and_next(
            annotator=annotator, assignment_id=held.pk, choice="left"
        )
        assert created and held.ballot_id == ballot.pk
        ballot.refresh_from_db()
        if ballot.votes_recorded == ballot.comparison_count:
            return results[annotator.pk]
    raise AssertionError("ballot 1 was not completed")


def test_the_completing_vote_asks_for_the_close_and_says_the_ballot_is_closing():
    # Inside the test's transaction nothing commits, so the close it asks for has not run yet.
    study = make_study(tokens=4, ballot_count=2, appearances=2)  # 6 items, 6 comparisons in ballot 1
    crowd = annotators(study, 3)
    with TestCase.captureOnCommitCallbacks(execute=True) as close_requests:
        answer = vote_through_ballot_one(study, crowd)
        assert (answer.assignment, answer.reason) == (None, NextReason.BALLOT_CLOSING)
        assert answer.retry_after_seconds >= 1
    assert len(close_requests) == 1
    assert Ballot.objects.get(study=study, number=1).status == Ballot.Status.CLOSED


@pytest.mark.django_db(transaction=True)
def test_the_completing_vote_closes_its_ballot_and_answers_with_the_next_ballots_comparison():
    # Committed for real: outside a request the close runs at the vote's commit, before the lease.
    study = make_study(tokens=4, ballot_count=2, appearances=2)
    crowd = annotators(study, 3)
    answer = vote_through_ballot_one(study, crowd)
    first, second = Ballot.objects.filter(study=study).order_by("number")
    assert (first.status, second.status) == (Ballot.Status.CLOSED, Ballot.Status.OPEN)
    assert answer.reason == NextReason.OK and answer.assignment.ballot_id == second.pk
    assert answer.progress.ballot_number == 2
    assert Study.objects.get(pk=study.pk).status == Study.Status.RUNNING


@pytest.mark.django_db
def test_a_lapsed_lease_is_given_before_any_open_comparison_on_either_database():
    # PostgreSQL's one statement and SQLite's steps follow one rule: a comparison whose lease lapsed
    # (its annotator walked away) is given again first, even before an open one earlier in the order.
    study = make_study(tokens=8, votes_per_annotator_per_ballot=None)
    alice, bob, carol = annotators(study, 3)
    ballot = study.ballots.get(number=1)
    first, second = (comparison_next_for(annotator=who).assignment.comparison for who in (alice, bob))
    assert (first.position, second.position) == (0, 1)  # open comparisons go in position order
    # Alice's lease is returned to the pool (as the sweep does), so position 0 is open again; Bob's
    # lapses without a sweep having run.
    Assignment.objects.filter(annotator=alice).update(status=Assignment.Status.EXPIRED)
    Comparison.objects.filter(pk=first.pk).update(status=Comparison.Status.OPEN, lease_expires_at=None)
    later = timezone.now() + timedelta(seconds=study.lease_seconds + 1)
    result = comparison_next_for(annotator=carol, now=later)
    assert result.assignment.comparison_id == second.pk  # Bob's lapsed lease, not the open position 0
    assert Comparison.objects.get(pk=first.pk).status == Comparison.Status.OPEN
    assert ballot.comparisons.filter(status=Comparison.Status.LEASED).count() == 1


@pytest.mark.django_db
def test_the_longest_lapsed_lease_is_given_first_and_equal_expiries_by_position_on_either_database():
    # Of the leases that lapsed, the one that lapsed longest ago is given first, whatever its position;
    # two that lapsed at the same instant go by position. PostgreSQL's function and SQLite's steps read
    # them in that order from the index of leased comparisons by expiry (migration 0027).
    study = make_study(tokens=8, votes_per_annotator_per_ballot=None)
    holders = annotators(study, 4, prefix="holder")
    takers = annotators(study, 4, prefix="taker")
    start = timezone.now()
    # Positions 0 to 3, leased 30 s, 10 s, 0 s and 10 s after the start: they lapse in the order 2, then
    # 1 and 3 at the same instant, then 0.
    offsets = [30, 10, 0, 10]
    held = [
        comparison_next_for(annotator=holder, now=start + timedelta(seconds=offset)).assignment.comparison
        for holder, offset in zip(holders, offsets, strict=True)
    ]
    assert [comparison.position for comparison in held] == [0, 1, 2, 3]
    later = start + timedelta(seconds=study.lease_seconds + 60)  # all four lapsed
    given = [comparison_next_for(annotator=taker, now=later).assignment.comparison_id for taker in takers]
    assert given == [held[2].pk, held[1].pk, held[3].pk, held[0].pk]
    assert not Assignment.objects.filter(annotator__in=holders, status=Assignment.Status.ACTIVE).exists()
    assert set(Assignment.objects.filter(annotator__in=takers).values_list("status", flat=True)) == {"active"}
