"""Where a lease starts its scan of the open comparisons (``collection.lease_start``, migration 0025's
``yardstick_lease_v2``): from the first open position this process last read, not from the ballot's
start; the same comparison as from the start; and a comparison opened again before that position is
not left out.

Committed for real (``transaction=True``), as in a request.
"""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from collection import lease_start, voting
from collection.exclusion import annotator_exclude
from collection.lifecycle import leases_expire
from collection.models import Assignment, Comparison, Vote
from tests.factories import annotators, disagreeing_crowd, make_study

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _postgres(postgres_required):
    assert connection.vendor == "postgresql"
    lease_start.lease_start_forget()
    yield
    lease_start.lease_start_forget()


def lease_row(study, annotator, *, open_ballot=None, open_from=None) -> tuple:
    """One call of the lease statement with the start given, committed; its whole row."""
    parameters = {
        **voting._lease_parameters(study=study, annotator_id=annotator.pk, now=timezone.now()),
        **voting.LEASE_ALONE,
        "commit_async": False,
        "open_ballot": open_ballot,
        "open_from": open_from,
    }
    with connection.cursor() as cursor:
        voting.LEASE_STATEMENT.execute(cursor, parameters)
        return cursor.fetchone()


def leased_position(row) -> int | None:
    comparison_id = row[7]
    return None if comparison_id is None else Comparison.objects.get(pk=comparison_id).position


def test_a_crowd_that_disagrees_is_given_the_first_open_comparison_each_may_judge_from_the_start_read(
    monkeypatch,
):
    """The judgements' leases start from the position last read (read again every 6 leases here), and
    each still gives the annotator the open comparison of lowest position whose pair they have not
    judged: what a scan from the ballot's start gives."""
    study = make_study(tokens=8, ballot_count=2, appearances=4)  # a first ballot of 56 comparisons
    crowd = annotators(study, 4)
    choose = disagreeing_crowd(study, seed=5)
    sent = []
    real = voting.execute_together

    def spy(cursor, statements, parameters):
        sent.append(parameters["open_from"])
        return real(cursor, statements, parameters)

    monkeypatch.setattr(voting, "execute_together", spy)
    monkeypatch.setattr(lease_start, "LEASES_PER_READ", 6)  # read again often: it rises as leases go
    ballot = study.ballots.get(number=1)
    held = {who.pk: voting.comparison_next_for(annotator=who) for who in crowd}
    judged = 0
    for turn in range(40):
        who = crowd[turn % len(crowd)]
        result = held[who.pk]
        assert result.assignment is not None
        comparison = Comparison.objects.get(pk=result.assignment.comparison_id)
        _vote, created, following = voting.vote_record_and_next(
            annotator=who, assignment_id=result.assignment.pk, choice=choose(comparison)
        )
        assert created
        judged += 1
        held[who.pk] = following
        given = Comparison.objects.get(pk=following.assignment.comparison_id)
        theirs = set(Vote.objects.filter(annotator=who).values_list("pair_low", "pair_high"))
        earlier = [
            (c.pair_low, c.pair_high)
            for c in Comparison.objects.filter(
                ballot=ballot, status=Comparison.Status.OPEN, position__lt=given.position
            )
        ]
        assert all(pair in theirs for pair in earlier), (
            f"turn {turn}: an earlier open comparison was passed over"
        )
    assert judged == 40
    started_from = [position for position in sent if position is not None]
    assert len(sent) == 40 and len(started_from) >= 30  # one lease in 7 reads it (the 4 first leases)
    assert started_from == sorted(started_from)  # the position read rose with the ballot
    assert started_from[-1] >= 20


def test_the_scan_starts_at_the_position_given_and_reads_one_only_when_given_none():
    study = make_study(tokens=6, ballot_count=2, appearances=4)  # a first ballot of 30 comparisons
    first, second, third = annotators(study, 3)
    ballot = study.ballots.get(number=1)

    row = lease_row(study, first)  # no start: the first open position is read and answered
    assert row[voting.LEASE_FIRST_OPEN] == 0 and leased_position(row) == 0

    row = lease_row(study, second, open_ballot=ballot.pk, open_from=5)
    assert row[voting.LEASE_FIRST_OPEN] is None  # given a start: nothing read
    assert leased_position(row) == 5  # from there, though 1 to 4 are open: the caller said none was

    row = lease_row(study, third, open_ballot=ballot.pk + 1000, open_from=20)
    assert row[voting.LEASE_FIRST_OPEN] == 1  # a start for another ballot counts for nothing
    assert leased_position(row) == 1


def test_a_comparison_opened_again_before_the_start_is_found_when_nothing_is_left_after_it():
    """Another process opened it again (no word reaches this one): a scan from the start finds nothing
    after it, then scans the whole ballot."""
    study = make_study(tokens=6, ballot_count=2, appearances=4)
    ballot = study.ballots.get(number=1)
    (annotator,) = annotators(study, 1)
    Comparison.objects.filter(ballot=ballot).update(status=Comparison.Status.VOTED)
    Comparison.objects.filter(ballot=ballot, position=3).update(status=Comparison.Status.OPEN)

    row = lease_row(study, annotator, open_ballot=ballot.pk, open_from=10)
    assert leased_position(row) == 3


def test_this_process_reads_the_start_again_after_a_lapsed_lease_or_an_exclusion_opens_one_again():
    study = make_study(tokens=6, ballot_count=2, appearances=4)
    crowd = annotators(study, 3)
    for who in crowd:
        assert voting.comparison_next_for(annotator=who).assignment is not None
    ballot = study.ballots.get(number=1)
    assert lease_start.lease_start(study.pk) == {"open_ballot": ballot.pk, "open_from": 0}

    # A lease lapses and the sweep returns its comparison, position 0, before the start kept (3).
    lease_start.lease_start_read(study.pk, ballot.pk, 3)
    Assignment.objects.filter(annotator=crowd[0]).update(expires_at=timezone.now() - timedelta(seconds=1))
    Comparison.objects.filter(ballot=ballot, position=0).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert leases_expire() == 1
    assert lease_start.lease_start(study.pk)["open_from"] is None  # read again by the next lease
    taken = voting.comparison_next_for(annotator=crowd[0])
    assert Comparison.objects.get(pk=taken.assignment.comparison_id).position == 0

    # An exclusion releases a lease (position 1) before the start kept.
    lease_start.lease_start_read(study.pk, ballot.pk, 3)
    annotator_exclude(annotator=crowd[1], reason="a test")
    assert lease_start.lease_start(study.pk)["open_from"] is None
    taken = voting.comparison_next_for(annotator=crowd[2])  # holds position 2: gets it again
    assert Comparison.objects.get(pk=taken.assignment.comparison_id).position == 2
    (newcomer,) = annotators(study, 1, prefix="n")
    taken = voting.comparison_next_for(annotator=newcomer)
    assert Comparison.objects.get(pk=taken.assignment.comparison_id).position == 1
