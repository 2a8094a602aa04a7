"""Win ratios (Eq. 1), rescaling (Eq. 6), running scores (Eq. 5) and survivors (§2.5)."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.borda import (
    ballot_tallies,
    final_order,
    rescale_slope,
    score_ballot,
    select_survivors,
    win_ratio,
)

# Ballot 1 of a hand-worked study with four items (left, right, outcome: 1 left wins, 0 right, 0.5 tie):
BALLOT_1 = np.array([(0, 1, 1.0), (2, 0, 0.0), (1, 3, 1.0), (2, 3, 0.5), (3, 0, 0.0), (1, 2, 1.0)])
# Ballot 2 between the two survivors, items 0 and 1.
BALLOT_2 = np.array([(0, 1, 1.0), (1, 0, 1.0), (1, 0, 0.0)])


def tallies(votes):
    return ballot_tallies(votes[:, 0].astype(int), votes[:, 1].astype(int), votes[:, 2], 4)


def test_tallies_count_wins_ties_and_appearances():
    wins, ties, appearances = tallies(BALLOT_1)
    np.testing.assert_array_equal(wins, [3, 2, 0, 0])
    np.testing.assert_array_equal(ties, [0, 0, 1, 1])
    np.testing.assert_array_equal(appearances, [3, 3, 3, 3])


def test_win_ratio_counts_a_tie_as_half_a_win():
    wins, ties, appearances = tallies(BALLOT_1)
    np.testing.assert_allclose(win_ratio(wins, ties, appearances), [1, 2 / 3, 1 / 6, 1 / 6])


def test_hand_worked_two_ballots_follow_eq_5_and_6():
    first = score_ballot(
        ballot=1, **dict(zip(("wins", "ties", "appearances"), tallies(BALLOT_1), strict=True))
    )
    np.testing.assert_allclose(first.score, [1, 2 / 3, 1 / 6, 1 / 6])
    survivors = select_survivors(first.score, np.ones(4, bool), 2)
    np.testing.assert_array_equal(survivors, [0, 1])

    wins, ties, appearances = tallies(BALLOT_2)
    second = score_ballot(
        ballot=2,
        wins=wins,
        ties=ties,
        appearances=appearances,
        previous_score=first.score,
        previous_measured=first.measured,
    )
    # x(2) = (2/3, 1/3); b = [(1/3)(1-1) + (2/3)(1-2/3)] / [(1/3)² + (2/3)²] = (2/9)/(5/9) = 2/5.
    np.testing.assert_allclose(second.win_ratio[:2], [2 / 3, 1 / 3])
    assert second.rescale_slope == pytest.approx(float(Fraction(2, 5)), abs=1e-15)
    # y(2) = 1 - b + b·x = (13/15, 11/15).
    np.testing.assert_allclose(second.rescaled_score[:2], [13 / 15, 11 / 15])
    # ȳ(2) = (x(1) + y(2)) / 2 = (14/15, 7/10); the paper's public code would keep y(2) alone.
    np.testing.assert_allclose(second.score[:2], [(1 + 13 / 15) / 2, (2 / 3 + 11 / 15) / 2])
    np.testing.assert_allclose(second.score[:2], [14 / 15, 7 / 10])
    # Items outside ballot 2 keep their score and measured count.
    np.testing.assert_allclose(second.score[2:], [1 / 6, 1 / 6])
    np.testing.assert_array_equal(second.measured, [2, 2, 1, 1])
    assert np.isnan(second.win_ratio[2:]).all()


@settings(max_examples=100, deadline=None)
@given(st.integers(3, 8), st.integers(0, 10_000))
def test_the_score_is_the_mean_of_the_rescaled_scores(ballots, seed):
    rng = np.random.default_rng(seed)
    item_count = 12
    result, rescaled = None, []
    for ballot in range(1, ballots + 1):
        appearances = rng.integers(1, 10, item_count)
        wins = rng.integers(0, appearances + 1)
        ties = rng.integers(0, appearances - wins + 1)
        result = score_ballot(
            ballot=ballot,
            wins=wins,
            ties=ties,
            appearances=appearances,
            previous_score=None if result is None else result.score,
            previous_measured=None if result is None else result.measured,
        )
        rescaled.append(result.rescaled_score)
    np.testing.assert_allclose(result.score, np.mean(rescaled, axis=0), rtol=1e-12)


def test_the_slope_is_the_least_squares_line_through_one_one():
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 1, 50)
    previous = rng.uniform(0, 1, 50)
    slope = rescale_slope(x, previous)
    # Minimise Σ ((1 - ȳ) - b(1 - x))² over b: the normal equation of the fit through (1, 1).
    residual = lambda b: np.sum(((1 - previous) - b * (1 - x)) ** 2)  # noqa: E731
    assert residual(slope) < residual(slope + 1e-6) and residual(slope) < residual(slope - 1e-6)


def test_all_win_ratios_equal_to_one_leave_the_slope_at_one():
    assert rescale_slope(np.ones(3), np.array([0.2, 0.5, 0.9])) == 1.0
    scores = score_ballot(
        ballot=2,
        wins=np.array([2, 2]),
        ties=np.zeros(2),
        appearances=np.array([2, 2]),
        previous_score=np.array([0.4, 0.6]),
        previous_measured=np.array([1, 1]),
    )
    np.testing.assert_allclose(scores.rescaled_score, [1.0, 1.0])


def test_an_item_without_votes_keeps_its_score_and_stays_out_of_the_fit():
    previous = np.array([0.9, 0.6, 0.5])
    scores = score_ballot(
        ballot=2,
        wins=np.array([1, 0, 0]),
        ties=np.zeros(3),
        appearances=np.array([1, 1, 0]),
        previous_score=previous,
        previous_measured=np.array([1, 1, 1]),
    )
    assert np.isnan(scores.win_ratio[2]) and scores.score[2] == 0.5 and scores.measured[2] == 1
    # b from items 0 and 1 only: [(0)(0.1) + (1)(0.4)] / [0 + 1] = 0.4.
    assert scores.rescale_slope == pytest.approx(0.4)


def test_an_item_never_measured_has_no_score_and_ranks_last():
    scores = score_ballot(
        ballot=1, wins=np.array([1, 0, 0]), ties=np.zeros(3), appearances=np.array([1, 1, 0])
    )
    assert np.isnan(scores.score[2])
    np.testing.assert_array_equal(select_survivors(scores.score, np.ones(3, bool), 3), [0, 1, 2])


def test_survivors_break_ties_by_lower_item_index():
    score = np.array([0.5, 0.7, 0.5, 0.7, 0.1])
    np.testing.assert_array_equal(select_survivors(score, np.ones(5, bool), 3), [1, 3, 0])
    in_ballot = np.array([True, False, True, True, True])
    np.testing.assert_array_equal(select_survivors(score, in_ballot, 2), [3, 0])


def test_survivor_count_must_fit_the_ballot():
    with pytest.raises(ValueError, match="cannot keep 4 of the 3 items"):
        select_survivors(np.zeros(3), np.ones(3, bool), 4)


def test_final_order_prefers_a_later_ballot_on_equal_score():
    order = final_order(np.array([0.5, 0.8, 0.5, np.nan]), np.array([1, 3, 2, 1]))
    np.testing.assert_array_equal(order, [1, 2, 0, 3])


@pytest.mark.parametrize(
    ("left", "right", "outcome", "message"),
    [
        ([0], [0], [1.0], "compared with itself"),
        ([0], [5], [1.0], "must lie in 0 … 3"),
        ([0], [1], [0.3], "outcome must be"),
        ([0, 1], [1], [1.0], "equal length"),
    ],
)
def test_bad_votes_are_refused(left, right, outcome, message):
    with pytest.raises(ValueError, match=message):
        ballot_tallies(np.array(left), np.array(right), np.array(outcome), 4)


def test_later_ballots_need_the_previous_scores():
    with pytest.raises(ValueError, match="ballot 2 needs the score"):
        score_ballot(ballot=2, wins=[1, 0], ties=[0, 0], appearances=[1, 1])
