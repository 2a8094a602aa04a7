"""A whole study on PostgreSQL and Redis: annotators vote, a real Celery worker closes every ballot."""

import time

import pytest

from collection.models import ItemScore, Study
from collection.voting import NextReason, comparison_next_for, vote_record
from tests.factories import annotators, make_study

pytestmark = pytest.mark.integration

BALLOT_WAIT_SECONDS = 60


def test_a_real_worker_closes_each_ballot_until_the_final_ranking(celery_worker_process):
    study = make_study(tokens=6, appearances=4)  # ballots of 15, 8, 4 items: 30 + 16 + 8 comparisons
    voters = annotators(study, 5)  # no annotator judges a pair twice; a pair appears up to 4 times
    index_of = dict(study.items.values_list("id", "index"))
    waited_for_worker = 0
    while study.status != Study.Status.FINISHED:
        ballots_before_pass = study.ballots.count()
        cast = 0
        for annotator in voters:
            result = comparison_next_for(annotator=annotator)
            if result.assignment is None:
                continue
            comparison = result.assignment.comparison
            better_left = index_of[comparison.left_item_id] < index_of[comparison.right_item_id]
            vote_record(
                annotator=annotator,
                assignment_id=result.assignment.pk,
                choice="left" if better_left else "right",
            )
            cast += 1
        study.refresh_from_db()
        if cast == 0 and study.status != Study.Status.FINISHED:
            # The open ballot is fully voted: only the worker can close it and open the next one
            # (it may have done so already, since this pass began).
            deadline = time.monotonic() + BALLOT_WAIT_SECONDS
            while study.ballots.count() == ballots_before_pass and study.status != Study.Status.FINISHED:
                latest = study.ballots.order_by("-number").first()
                assert time.monotonic() < deadline, (
                    f"the worker did not close ballot {latest.number} ({latest.status}, {latest.votes_recorded} "
                    f"of {latest.comparison_count} voted); its log ends with:\n"
                    + celery_worker_process["log"].read_text()[-3000:]
                )
                time.sleep(0.2)
                study.refresh_from_db()
            waited_for_worker += 1
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
