"""The score models: Bradley-Terry against choix and evalica, the worker-aware Bradley-Terry against
crowd-kit's NoisyBradleyTerry likelihood, recovery of a known order from simulated crowds, the
down-weighting of a one-sided annotator, invariants, and bootstrap replicates drawn as Borda's are."""

import choix
import evalica
import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import NoisyBradleyTerry
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import approx_fprime
from scipy.stats import spearmanr

from metrics.metrology import BallotVotes, bootstrap_scores, replicate_scores
from metrics.score_model_replicates import bootstrap_multiplicities, model_bootstrap_scores
from scoring.bradley_terry import DEFAULT_PRIOR, bradley_terry, noisy_bradley_terry
from scoring.score_models import (
    BORDA,
    BRADLEY_TERRY,
    NOISY_BRADLEY_TERRY,
    SCORE_MODEL_LABELS,
    SCORE_MODELS,
    scores_from_votes,
)


def bt_votes(strength, vote_count, rng, annotator_count=1):
    """Random pairs of distinct items, outcomes drawn from Bradley-Terry with ``strength``."""
    n = strength.size
    left = rng.integers(0, n, vote_count)
    right = (left + rng.integers(1, n, vote_count)) % n
    outcome = (rng.random(vote_count) < 1 / (1 + np.exp(-(strength[left] - strength[right])))).astype(float)
    annotator = rng.integers(0, annotator_count, vote_count)
    return left, right, outcome, annotator


def test_bradley_terry_matches_choix_with_the_same_prior():
    rng = np.random.default_rng(1)
    left, right, outcome, _ = bt_votes(rng.normal(0, 1, 8), 60, rng)
    data = [(a, b) if won else (b, a) for a, b, won in zip(left, right, outcome, strict=True)]
    expected = choix.opt_pairwise(8, data, alpha=DEFAULT_PRIOR, tol=1e-12)
    np.testing.assert_allclose(bradley_terry(left, right, outcome, 8), expected, atol=1e-6)


def test_bradley_terry_counts_a_tie_as_half_a_win_as_evalica_does():
    rng = np.random.default_rng(1)
    left, right, outcome, _ = bt_votes(rng.normal(0, 1, 8), 60, rng)
    outcome[:10] = 0.5
    winner = [
        evalica.Winner.X if o == 1 else evalica.Winner.Y if o == 0 else evalica.Winner.Draw for o in outcome
    ]
    fit = evalica.bradley_terry(left.tolist(), right.tolist(), winner, tolerance=1e-12, limit=100_000)
    expected = np.log(fit.scores.reindex(range(8)).to_numpy())
    ours = bradley_terry(left, right, outcome, 8, prior=1e-9, tolerance=1e-14)  # evalica fits no prior
    np.testing.assert_allclose(ours - ours.mean(), expected - expected.mean(), atol=1e-6)


def test_an_undefeated_item_stays_finite_and_an_item_without_votes_has_no_score():
    # Item 0 beat everyone; item 3 lost every time; item 4 never appeared.
    left = np.array([0, 0, 0, 1, 2, 1])
    right = np.array([1, 2, 3, 2, 3, 3])
    outcome = np.array([1.0, 1.0, 1.0, 0.5, 1.0, 1.0])
    theta = bradley_terry(left, right, outcome, 5)
    assert np.isfinite(theta[:4]).all() and np.isnan(theta[4])
    assert theta[0] > theta[1] == pytest.approx(theta[2], abs=0.5) and theta[2] > theta[3]
    assert theta[:4].sum() == pytest.approx(0.0, abs=1e-8)  # the prior centres the scale


def test_bradley_terry_recovers_a_known_strength_order_from_a_simulated_crowd():
    rng = np.random.default_rng(7)
    strength = np.linspace(3.0, -3.0, 200)
    left, right, outcome, _ = bt_votes(strength, 20_000, rng)
    theta = bradley_terry(left, right, outcome, 200)
    assert spearmanr(theta, strength).statistic >= 0.98
    clear = np.array([12.0, 9.0, 6.0, 3.0, 0.0, -3.0])  # gaps of 3: the order is beyond doubt
    left, right, outcome, _ = bt_votes(clear, 600, rng)
    assert np.argsort(-bradley_terry(left, right, outcome, 6)).tolist() == [0, 1, 2, 3, 4, 5]


def one_sided_crowd(seed=3):
    """30 items, 10 annotators with 300 votes each; annotator 0 always picks the left item."""
    rng = np.random.default_rng(seed)
    strength = np.linspace(2.0, -2.0, 30)
    left, right, outcome, annotator = bt_votes(strength, 3000, rng, annotator_count=10)
    outcome[annotator == 0] = 1.0
    return strength, left, right, outcome, annotator


def test_worker_aware_model_down_weights_a_one_sided_annotator():
    strength, left, right, outcome, annotator = one_sided_crowd()
    fit = noisy_bradley_terry(left, right, outcome, annotator, 30)
    assert fit.reliability[0] < 0.1 and fit.left_bias[0] > 0.9
    assert (fit.reliability[1:] > 0.7).all()
    plain = bradley_terry(left, right, outcome, 30)
    assert spearmanr(fit.score, strength).statistic > spearmanr(plain, strength).statistic


def test_worker_aware_fit_is_an_optimum_of_crowd_kits_noisy_bradley_terry_likelihood():
    # Our fit maximises crowd-kit's own likelihood (its _compute_log_likelihood, without its penalty)
    # plus our stated priors: the numerical gradient of that sum vanishes at our parameters.
    strength, left, right, outcome, annotator = one_sided_crowd()
    fit = noisy_bradley_terry(left, right, outcome, annotator, 30, tolerance=1e-14)
    logit = lambda p: np.log(p / (1 - p))  # noqa: E731
    data = np.column_stack([left, right, np.where(outcome == 1, left, right)]) + 1
    x = np.concatenate([[0.0], fit.score, logit(fit.left_bias), logit(fit.reliability)])

    def penalised(x):
        crowd_kit = NoisyBradleyTerry._compute_log_likelihood(x, data, annotator, 30, 10, 0.0)
        beta = -np.log(np.exp(x[31:]) / (1 + np.exp(x[31:])) ** 2).sum()  # Beta(2, 2) on π and γ
        return crowd_kit + DEFAULT_PRIOR * x[1:31] @ x[1:31] + beta

    assert np.abs(approx_fprime(x, penalised, 1e-6)[1:]).max() < 1e-3
    # crowd-kit's own fit of the same votes ranks the items alike (its start is random and its penalty
    # differs, so the values differ, not the order).
    frame = pd.DataFrame({"worker": annotator, "left": left, "right": right, "label": data[:, 2] - 1})
    theirs = NoisyBradleyTerry(n_iter=1000).fit_predict(frame).reindex(range(30)).to_numpy()
    assert spearmanr(theirs, fit.score).statistic >= 0.95


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_relabelling_items_permutes_scores_and_swapping_sides_changes_nothing(seed):
    rng = np.random.default_rng(seed)
    left, right, outcome, annotator = bt_votes(rng.normal(0, 1, 12), 150, rng, annotator_count=4)
    outcome[rng.random(150) < 0.1] = 0.5
    relabel = rng.permutation(12)
    for fit in (
        lambda l, r, o: bradley_terry(l, r, o, 12),  # noqa: E741
        lambda l, r, o: noisy_bradley_terry(l, r, o, annotator, 12, tolerance=1e-13).score,  # noqa: E741
    ):
        base = fit(left, right, outcome)
        np.testing.assert_allclose(fit(relabel[left], relabel[right], outcome)[relabel], base, atol=1e-4)
    np.testing.assert_allclose(
        bradley_terry(right, left, 1 - outcome, 12), bradley_terry(left, right, outcome, 12), atol=1e-6
    )
    # The worker-aware model: the same scores and reliabilities, each annotator's left bias π → 1 − π.
    noisy = noisy_bradley_terry(left, right, outcome, annotator, 12, tolerance=1e-13)
    swapped = noisy_bradley_terry(right, left, 1 - outcome, annotator, 12, tolerance=1e-13)
    np.testing.assert_allclose(swapped.score, noisy.score, atol=1e-4)
    np.testing.assert_allclose(swapped.reliability, noisy.reliability, atol=1e-4)
    np.testing.assert_allclose(swapped.left_bias, 1 - noisy.left_bias, atol=1e-4)


def test_scores_from_votes_dispatches_and_counts_only_the_ballots_asked_for():
    assert SCORE_MODELS == (BORDA, BRADLEY_TERRY, NOISY_BRADLEY_TERRY)
    assert set(SCORE_MODEL_LABELS) == set(SCORE_MODELS)
    rng = np.random.default_rng(2)
    left, right, outcome, annotator = bt_votes(np.linspace(1, -1, 10), 200, rng, annotator_count=5)
    ballot = np.where(np.arange(200) < 150, 1, 2)
    common = dict(left=left, right=right, outcome=outcome, annotator=annotator, item_count=10, ballot_count=1)
    np.testing.assert_allclose(
        scores_from_votes(BRADLEY_TERRY, ballot=ballot, **common),
        bradley_terry(left[:150], right[:150], outcome[:150], 10),
    )
    np.testing.assert_allclose(
        scores_from_votes(NOISY_BRADLEY_TERRY, ballot=ballot, **common),
        noisy_bradley_terry(left[:150], right[:150], outcome[:150], annotator[:150], 10).score,
    )
    with pytest.raises(ValueError, match="unknown score model 'elo'"):
        scores_from_votes("elo", ballot=ballot, **common)


def two_ballots(seed=4):
    rng = np.random.default_rng(seed)
    ballots = []
    for items, count in ((np.arange(20), 200), (np.arange(10), 100)):
        left, right, outcome, annotator = bt_votes(np.linspace(2, -2, 20)[items], count, rng, 6)
        ballots.append(BallotVotes(items, items[left], items[right], outcome, annotator))
    return ballots


def test_model_replicates_resample_the_votes_that_borda_replicates_resample():
    ballots = two_ballots()
    counts = bootstrap_multiplicities(ballots, np.random.default_rng(11), 30)
    np.testing.assert_array_equal(
        replicate_scores(ballots, 20, counts), bootstrap_scores(ballots, 20, np.random.default_rng(11), 30)
    )
    np.testing.assert_array_equal(
        model_bootstrap_scores(BORDA, ballots, 20, np.random.default_rng(11), 30),
        bootstrap_scores(ballots, 20, np.random.default_rng(11), 30),
    )
    # Replicate 3 of Bradley-Terry is the fit of replicate 3's votes, each repeated as often as drawn.
    replicates = model_bootstrap_scores(BRADLEY_TERRY, ballots, 20, np.random.default_rng(11), 30)
    drawn = np.concatenate([c[3] for c in counts]).astype(np.int64)
    take = np.repeat(np.arange(drawn.size), drawn)
    left, right, outcome = (
        np.concatenate([getattr(b, name) for b in ballots])[take] for name in ("left", "right", "outcome")
    )
    np.testing.assert_allclose(replicates[3], bradley_terry(left, right, outcome, 20), atol=1e-6)
    noisy = model_bootstrap_scores(NOISY_BRADLEY_TERRY, ballots, 20, np.random.default_rng(11), 5)
    assert noisy.shape == (5, 20) and np.isfinite(noisy).all()
