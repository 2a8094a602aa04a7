"""The ballot's count of votes in parts, on PostgreSQL: votes that run at once, the close they ask for,
and a close that runs while a vote is on its way.

Each test holds one transaction open on purpose (a vote not yet committed, or a close half-way) and
lets the other side run into it, so the orders that a crowd makes by chance happen here every time.
"""

import threading
import time

import pytest
from django.db import connection, transaction
from django.utils import timezone

from collection import lifecycle, voting
from collection.models import BALLOT_COUNTER_PARTS, Assignment, Ballot, BallotCounter, ItemScore, Vote
from common.errors import ServiceError
from tests.factories import annotators, make_study, vote_until

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

WAIT = 30


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def waits_for_a_lock(side: "ThreadResult") -> bool:
    """Whether the thread's backend waits for a row lock, polled for up to WAIT seconds (a slow answer,
    or a thread not yet connected, is "not yet")."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if side.pid is not None:
            with connection.cursor() as cursor:
                cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [side.pid])
                row = cursor.fetchone()
            if row is not None and row[0] == "Lock":
                return True
        time.sleep(0.05)
    return False


def a_ballot_with_two_comparisons_left(study):
    """Vote the first ballot down to its last two comparisons, then lease those to two annotators who
    have judged nothing (so either may take any pair); returns (ballot, [(annotator, assignment)] × 2)."""
    ballot = Ballot.objects.get(study=study, number=1)
    crowd = annotators(study, 5)
    vote_until(study, voters=crowd, max_votes=ballot.comparison_count - 2)
    last = []
    for annotator in annotators(study, 2, prefix="late"):
        result = voting.comparison_next_for(annotator=annotator)
        assert result.assignment is not None
        last.append((annotator, result.assignment))
    return ballot, last


class ThreadResult:
    def __init__(self):
        self.value, self.error, self.pid = None, None, None


def in_thread(work, result: ThreadResult) -> threading.Thread:
    def run():
        try:
            result.pid = backend_pid()
            result.value = work()
        except Exception as exc:  # the test reads it
            result.error = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def alice_votes_and_waits_for_bob(study, monkeypatch):
    """The last two comparisons of ballot 1, leased to Alice and Bob; Alice's vote is stored in a thread
    and not committed until ``commit_now``. Returns (ballot, bob, his assignment, Alice's side, her
    thread, commit_now, the close requests), with Bob's connection counting in another part."""
    ballot, [(alice, first), (bob, second)] = a_ballot_with_two_comparisons_left(study)
    asked = []
    monkeypatch.setattr(voting, "ballot_close_request", lambda *, ballot_id: asked.append(ballot_id))
    voted, commit_now = threading.Event(), threading.Event()

    def votes_and_waits():
        with transaction.atomic():
            recorded = voting._vote(
                owners={alice.study_id: alice.pk},
                assignment_id=first.pk,
                choice="left",
                client_response_ms=None,
                now=timezone.now(),
                annotator=alice,
            )
            voted.set()
            assert commit_now.wait(WAIT)
        return recorded

    alice_side = ThreadResult()
    thread = in_thread(votes_and_waits, alice_side)
    assert voted.wait(WAIT)
    # Bob's thread counts in another part than Alice's, so his vote does not wait for her row.
    return ballot, bob, second, alice_side, thread, commit_now, asked


def test_the_last_two_votes_in_one_transaction_each_that_do_not_see_each_other_still_ask_for_the_close(
    monkeypatch,
):
    # Alice's vote is stored but not committed when Bob's judgement runs: his vote's statement counts
    # comparisons - 1, and so does his lease, in the same transaction, which finds Alice's comparison
    # still leased and gives him none. Alice commits before Bob's read after his commit (every vote
    # answered without a comparison reads the count again), which reads the ballot complete and asks
    # for the close.
    study = make_study(tokens=6, ballot_count=1, appearances=4)  # 30 comparisons, no checks
    ballot, bob, second, alice_side, thread, commit_now, asked = alice_votes_and_waits_for_bob(
        study, monkeypatch
    )
    real_read = voting._close_if_complete

    def read_once_alice_committed(ballot_id):
        assert asked == []  # nothing asked before: neither of Bob's statements saw Alice's vote
        commit_now.set()
        thread.join(WAIT)
        return real_read(ballot_id)

    monkeypatch.setattr(voting, "_close_if_complete", read_once_alice_committed)
    monkeypatch.setattr(voting, "comparison_next_for", None)  # a lease of its own would fail the test
    _vote, created, answer = voting.vote_record_and_next(
        annotator=bob, assignment_id=second.pk, choice="right"
    )

    assert alice_side.error is None and created and commit_now.is_set()
    assert alice_side.value.standing.ballot_voted < ballot.comparison_count  # she did not see Bob's vote
    assert answer.reason == voting.NextReason.ALL_LEASED  # as Bob's lease saw it
    assert asked == [ballot.pk]
    ballot.refresh_from_db()
    assert ballot.votes_recorded == ballot.comparison_count == Vote.objects.filter(ballot=ballot).count()
    assert BallotCounter.objects.filter(ballot=ballot).count() >= 2  # their votes went to two parts


def test_a_close_waits_for_a_vote_on_its_way_and_scores_it(eager_tasks):
    # A researcher's close-now while Alice's vote is stored but not committed: the close waits for her
    # assignment's row, then reads her vote with the others, so every stored vote is in the scores.
    study = make_study(tokens=6, ballot_count=2, appearances=4)
    ballot, [(alice, first), _bob] = a_ballot_with_two_comparisons_left(study)
    voted, commit_now = threading.Event(), threading.Event()

    def alice_votes_and_waits():
        with transaction.atomic():
            voting.vote_record(annotator=alice, assignment_id=first.pk, choice="left")
            voted.set()
            assert commit_now.wait(WAIT)

    alice_side, close_side = ThreadResult(), ThreadResult()
    alice_thread = in_thread(alice_votes_and_waits, alice_side)
    assert voted.wait(WAIT)
    close_thread = in_thread(lambda: lifecycle.ballot_close(ballot_id=ballot.pk), close_side)
    assert waits_for_a_lock(close_side)
    commit_now.set()
    alice_thread.join(WAIT)
    close_thread.join(WAIT)

    assert alice_side.error is None and close_side.error is None
    ballot.refresh_from_db()
    votes = Vote.objects.filter(ballot=ballot).count()
    assert votes == ballot.comparison_count - 1 == ballot.votes_recorded  # Bob's lease was cancelled
    assert Vote.objects.filter(assignment_id=first.pk).exists()
    scored = sum(ItemScore.objects.filter(ballot=ballot).values_list("appearances", flat=True))
    assert (ballot.status, scored) == (Ballot.Status.CLOSED, 2 * votes)  # two items a vote


def test_a_vote_that_comes_while_its_ballot_closes_is_refused_with_nothing_written(monkeypatch, eager_tasks):
    # The close has cancelled the leases and is reading the votes when Alice's vote arrives: it waits
    # for her assignment's row and, once the close committed, is refused as a vote on a closed ballot.
    study = make_study(tokens=6, ballot_count=2, appearances=4)
    ballot, [(alice, first), _bob] = a_ballot_with_two_comparisons_left(study)
    reading, go_on = threading.Event(), threading.Event()
    real_votes = lifecycle.arrays.ballot_votes

    def votes_once_told(**kwargs):
        reading.set()
        assert go_on.wait(WAIT)
        return real_votes(**kwargs)

    monkeypatch.setattr(lifecycle.arrays, "ballot_votes", votes_once_told)
    close_side, alice_side = ThreadResult(), ThreadResult()
    close_thread = in_thread(lambda: lifecycle.ballot_close(ballot_id=ballot.pk), close_side)
    assert reading.wait(WAIT)
    alice_thread = in_thread(
        lambda: voting.vote_record(annotator=alice, assignment_id=first.pk, choice="left"), alice_side
    )
    assert waits_for_a_lock(alice_side)
    go_on.set()
    close_thread.join(WAIT)
    alice_thread.join(WAIT)

    assert close_side.error is None
    assert isinstance(alice_side.error, ServiceError) and alice_side.error.status == 409
    assert "closed" in str(alice_side.error)
    ballot.refresh_from_db()
    assert ballot.status == Ballot.Status.CLOSED
    assert not Vote.objects.filter(assignment_id=first.pk).exists()
    assert Assignment.objects.get(pk=first.pk).status == Assignment.Status.CANCELLED
    assert ballot.votes_recorded == Vote.objects.filter(ballot=ballot).count() == ballot.comparison_count - 2


def test_votes_from_many_connections_count_in_several_parts_that_sum_to_the_votes(eager_tasks):
    study = make_study(tokens=8, ballot_count=1, appearances=6, votes_per_annotator_per_ballot=None)
    ballot = Ballot.objects.get(study=study)  # 28 items × 6 / 2 = 84 comparisons
    crowd = annotators(study, 6)
    errors, barrier = [], threading.Barrier(len(crowd))

    def vote_all(annotator):
        try:
            barrier.wait()
            result = voting.comparison_next_for(annotator=annotator)
            while result.assignment is not None:
                choice = "left" if result.assignment.pk % 3 else "right"
                _vote, _created, result = voting.vote_record_and_next(
                    annotator=annotator, assignment_id=result.assignment.pk, choice=choice
                )
        except Exception as exc:
            errors.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=vote_all, args=(annotator,)) for annotator in crowd]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)

    assert errors == []
    parts = dict(BallotCounter.objects.filter(ballot=ballot).values_list("part", "votes"))
    assert len(parts) >= 2 and set(parts) <= set(range(BALLOT_COUNTER_PARTS))
    assert sum(parts.values()) == Vote.objects.filter(ballot=ballot).count() == ballot.comparison_count
    ballot.refresh_from_db()
    assert ballot.status == Ballot.Status.CLOSED  # closed once, by whichever vote saw it complete


def other_connection():
    """A second session on the test database, as another web process's would be."""
    import psycopg

    settings = connection.settings_dict
    return psycopg.connect(
        dbname=settings["NAME"], user=settings["USER"], host=settings["HOST"], port=settings["PORT"] or 5432
    )


def test_a_comparison_being_leased_by_another_is_all_leased_not_none_for_you():
    """The last open comparison locked by another annotator's lease, not yet committed: the lease passes
    over it (SKIP LOCKED) and finds nothing. The answer must be "all leased" (ask again in a few
    seconds), not "none for you" (every pair left judged by you), which was told by mistake while it
    read the comparison as still open. An annotator who did judge that pair is told "none for you"."""
    study = make_study(tokens=3, ballot_count=1, appearances=6)  # 3 items, each pair 3 times: 9
    ballot = Ballot.objects.get(study=study, number=1)
    crowd = annotators(study, 3)
    vote_until(study, voters=crowd, max_votes=ballot.comparison_count - 1)
    (last,) = ballot.comparisons.filter(status="open")
    judged_it = next(
        annotator
        for annotator in crowd
        if Vote.objects.filter(annotator=annotator, pair_low=last.pair_low, pair_high=last.pair_high).exists()
    )
    (bob,) = annotators(study, 1, prefix="bob")
    with other_connection() as other:
        other.execute("SELECT id FROM collection_comparison WHERE id = %s FOR UPDATE", [last.pk])
        told = voting.comparison_next_for(annotator=bob)
        assert (told.assignment, told.reason) == (None, voting.NextReason.ALL_LEASED)
        assert told.retry_after_seconds is not None
        other.rollback()
    assert voting.comparison_next_for(annotator=judged_it).reason == voting.NextReason.NONE_FOR_YOU
    assert voting.comparison_next_for(annotator=bob).assignment.comparison_id == last.pk
