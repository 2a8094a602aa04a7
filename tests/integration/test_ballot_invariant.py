"""Each assignment and vote is of its comparison's ballot: an invariant no constraint of the database
states (their ``ballot_id`` foreign keys say that the ballot exists, not that it is the right one), so
``tests/reliability/invariants.py`` checks it after every load and fault run."""

from __future__ import annotations

import pytest

from collection.models import Assignment, Vote
from collection.voting import comparison_next_for, vote_record_and_next
from tests.factories import annotators, make_study
from tests.integration.conftest import _database_url_of_the_test_database
from tests.reliability import invariants

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def offending(name: str, study) -> list[dict]:
    results = invariants.check(_database_url_of_the_test_database(), study=study.slug)
    return next(result.offending for result in results if result.name == name)


def test_the_invariant_names_a_vote_or_an_assignment_whose_ballot_is_not_its_comparisons(postgres_required):
    study = make_study(tokens=6, appearances=4)
    other = make_study(tokens=6, appearances=4).ballots.get(number=1)
    voters = annotators(study, 3)
    for number in range(6):  # a few judgements of a crowd that disagrees: the invariant holds
        voter = voters[number % 3]
        lease = comparison_next_for(annotator=voter)
        vote_record_and_next(
            annotator=voter, assignment_id=lease.assignment.pk, choice=("left", "right")[number % 2]
        )
    assert offending("ballot_of_assignment_and_vote", study) == []

    vote = Vote.objects.filter(annotator=voters[0]).first()
    held = Assignment.objects.get(annotator=voters[1], status="active")
    Vote.objects.filter(pk=vote.pk).update(ballot=other)  # a ballot that exists, of another study
    Assignment.objects.filter(pk=held.pk).update(ballot=other)

    found = offending("ballot_of_assignment_and_vote", study)

    assert sorted((row["row"], row["id"], row["ballot"]) for row in found) == [
        ("assignment", held.pk, other.pk),
        ("vote", vote.pk, other.pk),
    ]
