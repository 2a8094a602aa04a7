"""Closing ballots: scores by Eq. 1, 5, 6, survivors, the next ballot, the final ranking; idempotent."""

from datetime import timedelta

import numpy as np
import pytest
from django.db import IntegrityError
from django.utils import timezone

from collection.lifecycle import ballot_close, ballots_sweep, study_close_current_ballot
from collection.models import Assignment, Ballot, Comparison, ItemScore, Study
from collection.voting import comparison_next_for, vote_record
from tests.factories import annotators, committed_callbacks, make_study, vote_until

pytestmark = pytest.mark.django_db


def lower_index_wins(study):
    index_of = dict(study.items.values_list("id", "index"))
    return lambda c: "left" if index_of[c.left_item_id] < index_of[c.right_item_id] else "right"


def scores_of(ballot):
    rows = ItemScore.objects.filter(ballot=ballot).values_list(
        "item__index",
        "wins",
        "ties",
        "appearances",
        "win_ratio",
        "rescaled_score",
        "score",
        "measured",
        "survived",
    )
    return {row[0]: row[1:] for row in rows}


def test_the_last_vote_of_a_ballot_closes_it_and_opens_the_next_with_the_survivors():
    study = make_study(tokens=6, appearances=4)  # ballots of 15, 8, 4 items
    voters = annotators(study, 3)
    assert vote_until(study, voters=voters, choose=lower_index_wins(study), max_votes=30) == 30
    first, second = study.ballots.order_by("number")
    assert (first.status, second.status, second.number) == ("closed", "open", 2)
    scores = scores_of(first)
    assert len(scores) == 15
    # Every vote gives one win: Σ wins = 30 votes, Σ appearances = 2 × 30, M = 4 each.
    assert sum(s[0] for s in scores.values()) == 30 and {s[2] for s in scores.values()} == {4}
    for wins, _ties, appearances, x, y, score, measured, _ in scores.values():
        assert x == wins / appearances and y == x and score == x and measured == 1  # Eq. 1; ȳ(1) = x(1)
    # Survivors: the 8 best scores, and they are exactly the items of ballot 2.
    ranked = sorted(scores, key=lambda i: (-scores[i][5], i))
    assert {i for i, s in scores.items() if s[7]} == set(ranked[:8])
    assert set(second.items.values_list("index", flat=True)) == set(ranked[:8])
    assert second.comparison_count == 16


def test_later_ballots_rescale_and_average_as_eq_5_and_6_say():
    study = make_study(tokens=6, appearances=4)
    vote_until(study, voters=annotators(study, 3), choose=lower_index_wins(study), max_votes=46)
    first, second, _ = study.ballots.order_by("number")
    before, after = scores_of(first), scores_of(second)
    x2 = {i: after[i][3] for i in after}
    previous = {i: before[i][5] for i in after}
    b = sum((1 - x2[i]) * (1 - previous[i]) for i in after) / sum((1 - x2[i]) ** 2 for i in after)
    assert second.rescale_slope == pytest.approx(b, abs=1e-12)
    for i in after:
        y = 1 - b + b * x2[i]
        assert after[i][4] == pytest.approx(y, abs=1e-12)
        assert after[i][5] == pytest.approx((previous[i] + y) / 2, abs=1e-12)  # ȳ(2) = (x(1) + y(2)) / 2
        assert after[i][6] == 2


def test_the_study_finishes_with_a_final_ranking_of_every_item():
    study = make_study(tokens=6, appearances=4)
    assert vote_until(study, voters=annotators(study, 5), choose=lower_index_wins(study)) == 54
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED and study.finished_at is not None
    items = list(study.items.order_by("final_rank"))
    assert [i.final_rank for i in items] == list(range(1, 16))
    assert sorted(i.last_ballot for i in items) == [1] * 7 + [2] * 4 + [3] * 4
    # Ranked by ȳ, highest first.
    finals = [i.final_score for i in items]
    assert finals == sorted(finals, reverse=True)
    # With the lower index always winning, item 0 never loses: x = 1 in every ballot, so ȳ = 1.
    assert items[0].index == 0 and items[0].final_score == 1.0


def test_closing_twice_changes_nothing_and_opens_one_next_ballot():
    study = make_study()
    vote_until(study, voters=annotators(study, 3), max_votes=30)
    first = study.ballots.get(number=1)
    rows = scores_of(first)
    assert ballot_close(ballot_id=first.pk).status == "closed"
    assert scores_of(first) == rows and study.ballots.count() == 2
    assert ItemScore.objects.filter(ballot=first).count() == 15


def test_a_close_that_fails_half_way_leaves_nothing_and_a_rerun_completes_it():
    study = make_study()
    vote_until(study, voters=annotators(study, 3), max_votes=29)
    first = study.ballots.get(number=1)
    # A stray closed ballot 2 makes opening the next ballot fail after the scores were written.
    blocker = Ballot.objects.create(study=study, number=2, status="closed", comparison_count=0)
    with pytest.raises(IntegrityError):
        ballot_close(ballot_id=first.pk)
    first.refresh_from_db()
    assert first.status == "open" and ItemScore.objects.count() == 0 and study.ballots.count() == 2
    blocker.delete()
    ballot_close(ballot_id=first.pk)
    assert list(study.ballots.order_by("number").values_list("number", "status")) == [
        (1, "closed"),
        (2, "open"),
    ]
    assert ItemScore.objects.filter(ballot=first).count() == 15


def test_closing_early_cancels_what_was_not_voted_and_keeps_unvoted_items_in_the_running():
    study = make_study()
    voters = annotators(study, 2)
    vote_until(study, voters=voters, max_votes=5)
    held = comparison_next_for(annotator=voters[0]).assignment
    with committed_callbacks():
        study_close_current_ballot(study=study)
    first = study.ballots.get(number=1)
    assert first.status == "closed" and first.votes_recorded == 5
    assert Comparison.objects.filter(ballot=first, status="cancelled").count() == 25
    assert Assignment.objects.get(pk=held.pk).status == "cancelled"
    scores = scores_of(first)
    unvoted = [i for i, s in scores.items() if s[2] == 0]
    assert unvoted and all(scores[i][3] is None and scores[i][5] is None for i in unvoted)
    assert sum(s[2] for s in scores.values()) == 10
    # Items without a vote rank after every measured item when survivors are chosen.
    measured = {i for i, s in scores.items() if s[2] > 0}
    survivors = {i for i, s in scores.items() if s[7]}
    assert len(survivors) == 8
    assert survivors <= measured if len(measured) >= 8 else measured <= survivors


def test_the_sweep_closes_a_ballot_past_its_deadline():
    study = make_study(ballot_deadline_hours=2)
    first = study.ballots.get()
    assert first.deadline is not None
    vote_until(study, voters=annotators(study, 2), max_votes=3)
    assert ballots_sweep(now=timezone.now() + timedelta(hours=1))["ballots_closed"] == 0
    assert ballots_sweep(now=timezone.now() + timedelta(hours=3))["ballots_closed"] == 1
    first.refresh_from_db()
    assert first.status == "closed" and study.ballots.get(number=2).status == "open"


def test_the_sweep_closes_a_fully_voted_ballot_whose_task_was_lost():
    study = make_study()
    voters = annotators(study, 3)
    for _ in range(30):  # vote without running the on-commit task, as if the message was lost
        for annotator in voters:
            result = comparison_next_for(annotator=annotator)
            if result.assignment:
                vote_record(annotator=annotator, assignment_id=result.assignment.pk, choice="left")
    first = study.ballots.get(number=1)
    assert first.votes_recorded == 30 and first.status == "open"
    assert ballots_sweep()["ballots_closed"] == 1
    assert study.ballots.get(number=2).status == "open"


def test_scores_are_stored_as_numbers_the_engine_can_read_back():
    study = make_study()
    vote_until(study, voters=annotators(study, 5))
    values = np.array(
        ItemScore.objects.filter(ballot__study=study).values_list("score", flat=True), dtype=float
    )
    assert np.all(np.isfinite(values)) and values.min() >= 0 and values.max() <= 1
