"""A whole study on PostgreSQL and Redis: annotators vote, a real Celery worker closes every ballot."""

import pytest

from collection.models import ItemScore
from collection.voting import NextReason, comparison_next_for
from tests.factories import annotators, make_study
from tests.integration.conftest import vote_until_finished_by_the_worker

pytestmark = pytest.mark.integration


def test_a_real_worker_closes_each_ballot_until_the_final_ranking(celery_worker_process):
    study = make_study(tokens=6, appearances=4)  # ballots of 15, 8, 4 items: 30 + 16 + 8 comparisons
    voters = annotators(study, 5)  # no annotator judges a pair twice; a pair appears up to 4 times
    waited_for_worker = vote_until_finished_by_the_worker(study, voters, celery_worker_process["log"])
    assert waited_for_worker >= 1
    assert list(study.ballots.order_by("number").values_list("number", "status", "votes_recorded")) == [
        (1, "closed", 30),
        (2, "closed", 16),
        (3, "closed", 8),
    ]
    assert ItemScore.objects.filter(ballot__study=study).count() == 15 + 8 + 4
    assert sorted(study.items.values_list("final_rank", flat=True)) == list(range(1, 16))
    # Item 0 beat every opponent in every ballot, so it tops the final ranking.
    assert study.items.get(final_rank=1).index == 0
    assert comparison_next_for(annotator=voters[0]).reason == NextReason.FINISHED
    log = celery_worker_process["log"].read_text()
    assert log.count("Task scoring.ballot_close[") >= 3
