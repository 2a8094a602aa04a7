"""Precision, repeatability, reproducibility, resolution and chance level of a study (Welty §5)."""

import itertools
import math

import krippendorff
import numpy as np
import pytest

from metrics.correlation import weighted_kendall, weighted_spearman
from metrics.metrology import (
    BallotVotes,
    bootstrap_scores,
    chance_level,
    pair_value_counts,
    permutation_p_value,
    precision_summary,
    replicate_scores,
    reproducibility,
    resolution,
    spearman_brown,
    split_half_reliability,
)
from scoring.simulation import SimulationConfig, draw_voters, run_adaptive, underlying_similarity


def simulated_study(*, item_count=120, sizes=(120, 60, 30), appearances=10, voters=20, noise=0.2, seed=0):
    """Ballots of an adaptive study voted by the §4.1 voter model, with the engine's own scores."""
    rng = np.random.default_rng(seed)
    config = SimulationConfig(
        item_count=item_count,
        ballot_count=len(sizes),
        appearances=appearances,
        voter_count=voters,
        nonconformity_min=noise / 2,
        nonconformity_max=noise,
        oversight_min=0.0,
        oversight_max=noise / 4,
    )
    crowd = draw_voters(underlying_similarity("exponential", item_count), config, rng)
    record = []
    score, _ = run_adaptive(crowd, sizes, appearances, rng, record=record)
    ballots = [
        BallotVotes(
            items=b["items"], left=b["left"], right=b["right"], outcome=b["outcome"], annotator=b["voter"]
        )
        for b in record
    ]
    return ballots, score


def votes_of(ballots):
    left = np.concatenate([b.left for b in ballots])
    right = np.concatenate([b.right for b in ballots])
    outcome = np.concatenate([b.outcome for b in ballots])
    winner_is_low = np.where(left < right, outcome, 1.0 - outcome)
    return np.minimum(left, right), np.maximum(left, right), winner_is_low


def test_counting_every_vote_once_reproduces_the_engines_scores():
    ballots, engine_score = simulated_study()
    ones = [np.ones((1, b.vote_count)) for b in ballots]
    np.testing.assert_allclose(replicate_scores(ballots, 120, ones)[0], engine_score, rtol=0, atol=1e-14)


def test_counting_every_vote_twice_changes_no_score():
    # Eq. 1 is a ratio and Eq. 6 a least-squares slope: doubling all counts leaves both unchanged.
    ballots, engine_score = simulated_study()
    twos = [np.full((1, b.vote_count), 2.0) for b in ballots]
    np.testing.assert_allclose(replicate_scores(ballots, 120, twos)[0], engine_score, rtol=0, atol=1e-14)


def test_bootstrap_replicates_scatter_around_the_observed_scores():
    ballots, observed = simulated_study()
    replicates = bootstrap_scores(ballots, 120, np.random.default_rng(1), replicates=400)
    assert replicates.shape == (400, 120)
    summary = precision_summary(replicates)
    covered = (summary["lower"] <= observed) & (observed <= summary["upper"])
    assert covered.mean() > 0.9
    assert 0 < summary["mean_sd"] < 0.2


def test_more_votes_per_item_give_smaller_bootstrap_errors():
    rng = np.random.default_rng(2)
    few, _ = simulated_study(appearances=6)
    many, _ = simulated_study(appearances=30)
    sd_few = precision_summary(bootstrap_scores(few, 120, rng, 300))["mean_sd"]
    sd_many = precision_summary(bootstrap_scores(many, 120, rng, 300))["mean_sd"]
    assert sd_many < 0.7 * sd_few  # √(6/30) ≈ 0.45 in theory


def test_precision_summary_on_hand_made_replicates():
    replicates = np.array([[0.2, 1.0, np.nan], [0.4, 1.0, np.nan], [0.6, 1.0, 0.5]])
    summary = precision_summary(replicates, level=0.5)
    np.testing.assert_allclose(summary["sd"][:2], [0.2, 0.0])
    assert math.isnan(summary["sd"][2])  # one finite replicate: no spread
    np.testing.assert_allclose([summary["lower"][0], summary["upper"][0]], [0.3, 0.5])
    assert summary["mean_sd"] == pytest.approx(0.1)


def test_spearman_brown_corrects_a_half_test_correlation():
    assert spearman_brown(0.5) == pytest.approx(2 / 3)
    assert spearman_brown(1.0) == 1.0 and spearman_brown(0.0) == 0.0


def test_less_voter_noise_gives_higher_split_half_reliability():
    rng = np.random.default_rng(3)
    quiet, _ = simulated_study(noise=0.05, voters=30)
    noisy, _ = simulated_study(noise=0.6, voters=30)
    quiet_reliability = split_half_reliability(quiet, 120, 30, rng, splits=40)
    noisy_reliability = split_half_reliability(noisy, 120, 30, rng, splits=40)
    assert quiet_reliability["rho"]["mean"] > noisy_reliability["rho"]["mean"] + 0.05
    assert quiet_reliability["rho"]["spearman_brown"] > quiet_reliability["rho"]["mean"]


def test_less_voter_noise_gives_a_finer_resolution():
    quiet, quiet_score = simulated_study(noise=0.05, voters=30)
    noisy, noisy_score = simulated_study(noise=0.6, voters=30)
    fine = resolution(*votes_of(quiet), quiet_score, target=0.9)
    coarse = resolution(*votes_of(noisy), noisy_score, target=0.9)
    assert fine["overall_agreement"] > coarse["overall_agreement"]
    assert coarse["resolution"] is None or fine["resolution"] < coarse["resolution"]


def test_resolution_on_a_hand_worked_example():
    # Scores of items 0..3 and the majority of each compared pair:
    #   (0,1) Δ = 0.6, majority prefers 0 (agrees); (0,2) Δ = 0.4, split vote (disagrees);
    #   (1,2) Δ = -0.2, majority prefers 2 (agrees); (2,3) Δ = 0.1, majority prefers 3 (disagrees).
    score = np.array([0.9, 0.3, 0.5, 0.4])
    low = np.array([0, 0, 0, 0, 1, 2])
    high = np.array([1, 2, 2, 2, 2, 3])
    winner_is_low = np.array([1.0, 1.0, 0.0, 0.5, 0.0, 0.0])  # pair (0,2): 1 low, 1 high, 1 tie → no majority
    result = resolution(low, high, winner_is_low, score, target=0.95)
    # Thresholds 0.6: 1/1; 0.4: 1/2; 0.2: 2/3; 0.1: 2/4 → 100% agreement only from 0.6 on.
    np.testing.assert_allclose(result["curve"]["threshold"], [0.1, 0.2, 0.4, 0.6])
    np.testing.assert_allclose(result["curve"]["agreement"], [0.5, 2 / 3, 0.5, 1.0])
    assert result["resolution"] == pytest.approx(0.6) and result["compared_pairs"] == 4
    # All 6 item pairs: differences 0.6, 0.4, 0.5, 0.2, 0.1, 0.1 → one at or above 0.6.
    assert result["item_pairs_total"] == 6 and result["item_pairs_above_resolution"] == 1
    assert resolution(low, high, winner_is_low, score, target=0.6)["resolution"] == pytest.approx(0.2)


@pytest.mark.parametrize(
    "low, high, winner_is_low, score",
    [
        ([], [], [], [0.9, 0.3, 0.5]),  # a ballot open, no vote yet
        ([0, 0, 1], [1, 1, 2], [1.0, 0.0, 1.0], [0.5, 0.5, 0.5]),  # every compared pair tied in score
        ([0, 1], [1, 2], [1.0, 0.0], [np.nan, np.nan, np.nan]),  # no score yet
    ],
)
def test_without_a_pair_of_different_scores_the_resolution_is_undefined_not_an_error(
    low, high, winner_is_low, score
):
    result = resolution(low, high, winner_is_low, score)

    assert (result["resolution"], result["compared_pairs"], result["overall_agreement"]) == (None, 0, None)
    assert {key: list(values) for key, values in result["curve"].items()} == {
        "threshold": [],
        "agreement": [],
        "pairs": [],
    }
    assert result["item_pairs_above_resolution"] is None


def test_pair_value_counts_keep_pairs_judged_at_least_twice():
    units, counts = pair_value_counts([0, 0, 0, 1, 2, 2], [1, 1, 1, 2, 3, 3], [1.0, 0.0, 0.5, 1.0, 0.0, 0.0])
    assert counts.tolist() == [[1, 1, 1], [0, 2, 0]]
    assert units.size == 2


def test_krippendorff_alpha_from_these_counts_matches_the_package_on_raw_data():
    # Three annotators, four pairs; rows are annotators, values the category (NaN: not judged).
    raw = np.array([[0, 1, 0, np.nan], [0, 1, 1, 0], [0, np.nan, 0, 0]], dtype=float)
    low, high, winner = [], [], []
    for annotator_row in raw:
        for unit, value in enumerate(annotator_row):
            if not np.isnan(value):
                low.append(unit)
                high.append(unit + 10)
                winner.append({0: 1.0, 1: 0.0}[int(value)])
    _, counts = pair_value_counts(low, high, winner)
    assert krippendorff.alpha(value_counts=counts, level_of_measurement="nominal") == pytest.approx(
        krippendorff.alpha(reliability_data=raw, level_of_measurement="nominal")
    )
    # By hand, from the coincidence matrix o00 = 6, o01 = o10 = 1, o11 = 2 (n0 = 7, n1 = 3, n = 10):
    # α = 1 - (n - 1)·(o01 + o10) / (2·n0·n1) = 1 - 9·2/42 = 4/7.
    assert krippendorff.alpha(value_counts=counts, level_of_measurement="nominal") == pytest.approx(4 / 7)


def test_reproducibility_of_identical_and_of_shuffled_studies():
    score = np.linspace(1, 0, 50)
    same = reproducibility(score, score, np.full(50, 0.1), np.full(50, 0.05))
    assert (same["rho"], same["rho_w"], same["tau_w"]) == (
        pytest.approx(1.0),
        pytest.approx(1.0),
        pytest.approx(1.0),
    )
    assert same["sd_ratio"] == pytest.approx(0.5) and same["items"] == 50
    shuffled = reproducibility(score, np.random.default_rng(0).permutation(score))
    assert abs(shuffled["rho"]) < 0.4


def test_chance_level_matches_the_exact_mean_over_all_permutations():
    # n = 5: the exact mean of τ_w and ρ_w over all 120 permutations, against the Monte Carlo.
    reference = np.arange(1, 6, dtype=float)
    exact_tau = np.mean(
        [weighted_kendall(reference, np.array(p, float) + 1) for p in itertools.permutations(range(5))]
    )
    exact_rho = np.mean(
        [weighted_spearman(reference, np.array(p, float) + 1) for p in itertools.permutations(range(5))]
    )
    level = chance_level(5, np.random.default_rng(0), draws=20_000)
    assert level["tau_w"]["mean"] == pytest.approx(exact_tau, abs=4 * level["tau_w"]["sd"] / np.sqrt(20_000))
    assert level["rho_w"]["mean"] == pytest.approx(exact_rho, abs=4 * level["rho_w"]["sd"] / np.sqrt(20_000))
    assert exact_rho < -0.05  # weighted coefficients of unrelated rankings do not average zero


def test_permutation_p_value_counts_draws_at_least_as_high():
    draws = np.sort(np.array([0.1, 0.2, 0.3, 0.4]))
    assert permutation_p_value(0.25, draws) == pytest.approx(3 / 5)
    assert permutation_p_value(0.5, draws) == pytest.approx(1 / 5)
    assert permutation_p_value(0.1, draws) == pytest.approx(5 / 5)


def test_a_draw_equal_to_the_observed_value_but_for_rounding_counts_as_at_least_as_good():
    draws = np.array([-1.0, -0.5, 0.5 - 1e-13, 0.5, 1.0])  # 0.5 from another formula's last digits

    assert permutation_p_value(0.5, draws) == (1 + 3) / (1 + 5)
    assert permutation_p_value(0.5 + 1e-6, draws) == (1 + 1) / (1 + 5)
