"""The reads of the metrics app: a study's votes grouped for the metrology engine, and its scores."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from collection.models import Ballot, ItemScore, Study, Vote
from common.errors import StudyStateError
from metrics.selectors import current_scores, final_scores, study_votes
from tests.factories import annotators, make_study, vote_until

pytestmark = pytest.mark.django_db

OUTCOME = {"left": 1.0, "right": 0.0, "tie": 0.5}


def cycling_choices():
    """left, right, tie, left, … whatever the comparison."""
    choices = itertools.cycle(["left", "right", "tie"])
    return lambda comparison: next(choices)


def test_the_votes_of_closed_ballots_are_grouped_by_ballot_with_their_outcomes():
    # 15 items; ballots of 15, 8 and 4 items with 30, 16 and 8 comparisons. Ballot 2 stays open.
    study = make_study(allow_ties=True)
    vote_until(study, voters=annotators(study, 5), choose=cycling_choices(), max_votes=30 + 5)

    votes = study_votes(study=study)

    rows = list(
        Vote.objects.filter(ballot__study=study, ballot__number=1)
        .order_by("pk")
        .values_list("left_item__index", "right_item__index", "choice", "annotator_id")
    )
    (ballot,) = votes.ballots  # only ballot 1 is closed
    assert ballot.items.tolist() == list(range(15))
    assert ballot.left.tolist() == [row[0] for row in rows]
    assert ballot.right.tolist() == [row[1] for row in rows]
    assert ballot.outcome.tolist() == [OUTCOME[row[2]] for row in rows]
    assert votes.annotator_ids[ballot.annotator].tolist() == [row[3] for row in rows]
    assert votes.item_count == 15
    decisive = [row for row in rows if row[2] != "tie"]
    assert votes.chosen.tolist() == [row[0] if row[2] == "left" else row[1] for row in decisive]
    assert votes.rejected.tolist() == [row[1] if row[2] == "left" else row[0] for row in decisive]
    low_won = [OUTCOME[row[2]] if row[0] < row[1] else 1 - OUTCOME[row[2]] for row in rows]
    assert votes.winner_is_low.tolist() == low_won


def test_a_running_study_scores_each_item_by_its_latest_closed_ballot():
    study = make_study()
    vote_until(study, voters=annotators(study, 5), max_votes=30 + 16)  # ballots 1 and 2 closed

    score = current_scores(study=study, item_count=15)

    survivors = Ballot.objects.get(study=study, number=2).items.values_list("index", "pk")
    scores = ItemScore.objects.filter(ballot__study=study)
    second = dict(scores.filter(ballot__number=2).values_list("item__index", "score"))
    first = dict(scores.filter(ballot__number=1).values_list("item__index", "score"))
    expected = [second[i] if i in second else first[i] for i in range(15)]
    assert len(second) == len(survivors) == 8
    np.testing.assert_allclose(score, expected)
    with pytest.raises(StudyStateError, match="its final ranking exists once it has finished"):
        final_scores(study=study)


def test_a_finished_study_is_scored_by_its_final_ranking():
    study = make_study()
    vote_until(study, voters=annotators(study, 5))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED

    stored = dict(study.items.values_list("index", "final_score"))
    np.testing.assert_allclose(final_scores(study=study), [stored[i] for i in range(15)])
    np.testing.assert_allclose(current_scores(study=study, item_count=15), [stored[i] for i in range(15)])
