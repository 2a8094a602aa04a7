"""An annotator's count of votes (``AnnotatorVotes``), which the lease reads for their progress and cap,
on either database: it equals their votes through a whole study, across ballots, retries, an exclusion
and a readmission; and the migration's count of the votes recorded before it."""

import importlib

import pytest
from django.db import connection

from collection.exclusion import annotator_exclude, annotator_readmit
from collection.models import AnnotatorVotes, Ballot, Comparison, Vote
from collection.voting import NextReason, comparison_next_for, vote_record_and_next
from tests.factories import annotators, committed_callbacks, disagreeing_crowd, make_study

pytestmark = pytest.mark.django_db


def counted(annotator) -> tuple[int, int | None, int]:
    row = AnnotatorVotes.objects.filter(annotator=annotator).values_list("total", "ballot_id", "in_ballot")
    return row.first() or (0, None, 0)


def recounted(annotator) -> tuple[int, int | None, int]:
    """The same from the votes themselves: all of them, the ballot of the latest and the votes in it."""
    votes = Vote.objects.filter(annotator=annotator)
    if not votes.exists():
        return (0, None, 0)
    latest = votes.order_by("-ballot_id").values_list("ballot_id", flat=True).first()
    return (votes.count(), latest, votes.filter(ballot_id=latest).count())


def judge(crowd, held, choose, *, rounds=None):
    """Each annotator votes on what they hold and takes the next from the answer, round robin, until
    no one holds anything (or ``rounds`` rounds); after each vote their count and the progress in the
    answer equal their votes."""
    done = 0
    while any(result.assignment is not None for result in held.values()) and (
        rounds is None or done < rounds
    ):
        done += 1
        for annotator in crowd:
            result = held[annotator.pk]
            if result.assignment is None:
                continue
            choice = choose(Comparison.objects.get(pk=result.assignment.comparison_id))
            with committed_callbacks():
                _, created, held[annotator.pk] = vote_record_and_next(
                    annotator=annotator, assignment_id=result.assignment.pk, choice=choice
                )
            assert created
            assert counted(annotator) == recounted(annotator)
            following = held[annotator.pk]
            if following.progress is not None and following.progress.ballot_number == _ballot_of_latest(
                annotator
            ):
                total, _, in_ballot = recounted(annotator)
                assert (following.progress.votes_total, following.progress.votes_in_ballot) == (
                    total,
                    in_ballot,
                )


def _ballot_of_latest(annotator) -> int | None:
    latest = Vote.objects.filter(annotator=annotator).order_by("-ballot_id").first()
    return latest.ballot.number if latest else None


def test_the_count_follows_every_vote_through_a_whole_study_of_a_disagreeing_crowd():
    study = make_study(tokens=6, ballot_count=3, appearances=4)  # 30 + 16 + 8 comparisons
    crowd = annotators(study, 5)
    choose = disagreeing_crowd(study, seed=4)
    held = {annotator.pk: comparison_next_for(annotator=annotator) for annotator in crowd}
    for ballot_number in (1, 2, 3):
        judge(crowd, held, choose)
        # Everyone who voted in this ballot is counted in it, from their first vote in it.
        ballot = Ballot.objects.get(study=study, number=ballot_number)
        voters = set(Vote.objects.filter(ballot=ballot).values_list("annotator_id", flat=True))
        assert voters
        for annotator in crowd:
            if annotator.pk in voters:
                in_ballot = Vote.objects.filter(ballot=ballot, annotator=annotator).count()
                assert counted(annotator)[1:] == (ballot.pk, in_ballot)
        # The answers ran out with the ballot: the next one (if any) is open, ask again.
        held = {annotator.pk: comparison_next_for(annotator=annotator) for annotator in crowd}
    study.refresh_from_db()
    assert study.status == "finished"
    assert Vote.objects.filter(ballot__study=study).count() == 54
    assert sum(counted(annotator)[0] for annotator in crowd) == 54


def test_a_retry_does_not_count_twice_and_the_cap_is_read_from_the_count():
    study = make_study(tokens=6, ballot_count=2, votes_per_annotator_per_ballot=3)
    alice, bob = annotators(study, 2)
    first = comparison_next_for(annotator=alice).assignment
    _, created, following = vote_record_and_next(annotator=alice, assignment_id=first.pk, choice="left")
    _, created_again, _ = vote_record_and_next(annotator=alice, assignment_id=first.pk, choice="right")
    assert (created, created_again) == (True, False)
    assert counted(alice) == (1, first.ballot_id, 1) == recounted(alice)
    for _ in range(2):
        _, _, following = vote_record_and_next(
            annotator=alice, assignment_id=following.assignment.pk, choice="right"
        )
    assert counted(alice) == (3, first.ballot_id, 3)
    assert following.assignment is None and following.reason == NextReason.QUOTA  # the cap: 3 per ballot
    assert comparison_next_for(annotator=bob).assignment is not None  # Bob's count is his own
    assert counted(bob) == (0, None, 0)


def test_an_exclusion_takes_the_votes_it_sets_aside_off_the_count_and_a_readmitted_annotator_counts_on():
    study = make_study(tokens=6, ballot_count=1, appearances=4)  # 30 comparisons
    crowd = annotators(study, 4)
    choose = disagreeing_crowd(study, seed=7)
    held = {annotator.pk: comparison_next_for(annotator=annotator) for annotator in crowd}
    judge(crowd, held, choose, rounds=3)
    excluded = crowd[2]
    ballot = Ballot.objects.get(study=study)
    assert counted(excluded) == (3, ballot.pk, 3)

    result = annotator_exclude(annotator=excluded, reason="answers without reading")
    assert result.exclusion.votes_set_aside == 3
    assert counted(excluded) == (0, ballot.pk, 0) == (recounted(excluded)[0], ballot.pk, 0)
    assert comparison_next_for(annotator=excluded).reason == NextReason.EXCLUDED

    annotator_readmit(annotator=excluded, reason="a second look: careful after all")
    excluded.refresh_from_db()
    again = comparison_next_for(annotator=excluded)
    assert again.progress.votes_total == 0 and again.progress.votes_in_ballot == 0
    _, created, after = vote_record_and_next(annotator=excluded, assignment_id=again.assignment.pk, choice="tie"
                                             if study.allow_ties else "left")  # fmt: skip
    assert created
    assert counted(excluded) == (1, ballot.pk, 1) == recounted(excluded)
    assert (after.progress.votes_total, after.progress.votes_in_ballot) == (1, 1)


def test_the_migration_counts_the_votes_recorded_before_it():
    """Its SQL on the votes of a study two ballots into its run, with the counts emptied first."""
    study = make_study(tokens=6, ballot_count=3, appearances=4)
    crowd = annotators(study, 5)
    choose = disagreeing_crowd(study, seed=2)
    held = {annotator.pk: comparison_next_for(annotator=annotator) for annotator in crowd}
    judge(crowd, held, choose)  # ballot 1, all of it
    held = {annotator.pk: comparison_next_for(annotator=annotator) for annotator in crowd}
    judge(crowd[:3], held, choose, rounds=2)  # two rounds of ballot 2, by three of them
    expected = {annotator.pk: recounted(annotator) for annotator in crowd}
    assert len({ballot for _, ballot, _ in expected.values()}) == 2  # two still in ballot 1, three in 2

    AnnotatorVotes.objects.all().delete()
    migration = importlib.import_module("collection.migrations.0021_annotator_votes")
    with connection.cursor() as cursor:
        cursor.execute(migration.FORWARD)
    assert {annotator.pk: counted(annotator) for annotator in crowd} == expected
