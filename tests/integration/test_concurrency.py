"""Many annotators at once on PostgreSQL: no comparison handed out twice, every vote stored once."""

import threading
from collections import Counter

import pytest
from django.db import connection

from collection.lifecycle import ballot_close
from collection.models import Assignment, Ballot, ItemScore, Study, Vote
from collection.voting import comparison_next_for, vote_record, vote_record_and_next
from tests.factories import annotators, make_study

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def run_in_threads(count, work):
    errors, barrier = [], threading.Barrier(count)

    def runner(number):
        try:
            barrier.wait()
            work(number)
        except Exception as exc:  # reported by the test, with the thread that raised it
            errors.append((number, repr(exc)))
        finally:
            connection.close()

    threads = [threading.Thread(target=runner, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []


def test_concurrent_annotators_never_receive_the_same_comparison(eager_tasks):
    # One ballot of 45 items × M = 10: 225 comparisons for 12 annotators voting at once.
    study = make_study(tokens=10, ballot_count=1, appearances=10, votes_per_annotator_per_ballot=None)
    crowd = annotators(study, 12)
    handed, stored = [], []
    lock = threading.Lock()

    def vote_all(number):
        # As the API and the voting page do: each vote's answer carries the next comparison. The last
        # votes, run at once, may not see each other's counts; the lease after each one closes it.
        annotator = crowd[number]
        result = comparison_next_for(annotator=annotator)
        while (assignment := result.assignment) is not None:
            vote, created, result = vote_record_and_next(
                annotator=annotator, assignment_id=assignment.pk, choice="left" if number % 3 else "right"
            )
            with lock:
                handed.append((assignment.comparison_id, annotator.pk))
                stored.append((vote.pk, created))

    run_in_threads(len(crowd), vote_all)
    ballot = Ballot.objects.get(study=study)
    per_comparison = Counter(comparison for comparison, _ in handed)
    assert len(per_comparison) == 225 and set(per_comparison.values()) == {1}
    assert all(created for _, created in stored) and len({vote for vote, _ in stored}) == 225
    assert Vote.objects.filter(ballot=ballot).count() == 225 == ballot.votes_recorded
    assert len({annotator for _, annotator in handed}) == 12  # every annotator got work
    assert Study.objects.get(pk=study.pk).status == Study.Status.FINISHED


def test_a_vote_sent_twice_at_once_is_stored_once(eager_tasks):
    study = make_study()
    (alice,) = annotators(study, 1)
    assignment = comparison_next_for(annotator=alice).assignment
    results = []

    def send(number):
        vote, created = vote_record(annotator=alice, assignment_id=assignment.pk, choice="right")
        results.append((vote.pk, created))

    run_in_threads(6, send)
    assert len({vote for vote, _ in results}) == 1 and sorted(created for _, created in results) == [
        False
    ] * 5 + [True]
    assert Vote.objects.count() == 1 and Assignment.objects.get(pk=assignment.pk).status == "voted"


def test_two_workers_closing_the_same_ballot_open_exactly_one_next(eager_tasks):
    study = make_study()
    crowd = annotators(study, 3)
    for _ in range(10):
        for annotator in crowd:
            result = comparison_next_for(annotator=annotator)
            if result.assignment:
                vote_record(annotator=annotator, assignment_id=result.assignment.pk, choice="left")
    first = Ballot.objects.get(study=study, number=1)
    assert first.votes_recorded == 30  # the eager close already ran once; run it again from 4 threads
    Ballot.objects.filter(study=study, number=2).delete()
    ItemScore.objects.filter(ballot=first).delete()
    Ballot.objects.filter(pk=first.pk).update(status="open")

    run_in_threads(4, lambda number: ballot_close(ballot_id=first.pk))
    assert list(Ballot.objects.filter(study=study).order_by("number").values_list("number", "status")) == [
        (1, "closed"),
        (2, "open"),
    ]
    assert ItemScore.objects.filter(ballot=first).count() == 15


@pytest.mark.parametrize("ways", [2, 5])
def test_one_annotator_asking_for_a_comparison_several_times_at_once_gets_one_lease(eager_tasks, ways):
    # A double click, or two tabs: the leases of one annotator meet at the unique index of active
    # assignments; the ones that lose retry and get the assignment the first made, never an error.
    study = make_study()
    (alice,) = annotators(study, 1)
    leased = []

    def ask(number):
        leased.append(comparison_next_for(annotator=alice).assignment.pk)

    run_in_threads(ways, ask)
    assert len(leased) == ways and len(set(leased)) == 1
    assert Assignment.objects.filter(annotator=alice, status="active").count() == 1


def test_a_lease_that_loses_the_race_for_its_annotator_retries_and_gets_the_winners_lease(eager_tasks):
    # The race made certain: the first lease is left uncommitted (in a transaction of another thread)
    # while the second runs. The second's insert waits on the unique index of active assignments, fails
    # when the first commits, and its retry returns the first's assignment; its own comparison is free.
    study = make_study(tokens=10, ballot_count=1, appearances=4)
    (alice,) = annotators(study, 1)
    first_leased, second_started, results = threading.Event(), threading.Event(), {}

    def first():
        from django.db import transaction

        try:
            with transaction.atomic():
                results["first"] = comparison_next_for(annotator=alice).assignment.pk
                first_leased.set()
                second_started.wait(timeout=30)
                connection.cursor().execute("SELECT pg_sleep(0.5)")  # the second is waiting by now
        finally:
            connection.close()

    def second():
        try:
            first_leased.wait(timeout=30)
            second_started.set()
            results["second"] = comparison_next_for(annotator=alice).assignment.pk
        finally:
            connection.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert results["second"] == results["first"]
    assert Assignment.objects.filter(annotator=alice, status="active").count() == 1
    ballot = Ballot.objects.get(study=study)
    assert ballot.comparisons.filter(status="leased").count() == 1
