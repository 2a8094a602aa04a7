"""The judge's figures (``metrics.judging``) on a hand-made vote set whose every figure is worked by hand.

Five pairs, in the judge's orientation (L left, R right, T tie):

    pair 0: L L R    judge L      majority L
    pair 1: R R      judge L      majority R
    pair 2: L R      judge R      no majority
    pair 3: T        judge T      one vote
    pair 4: L T T R  undecided    (left out of every figure)

Majority: pairs 0 and 1 have one; the judge agrees on pair 0: 1/2. The crowd's votes against the others'
majority: pair 0's R against L (disagrees; the two L's see a 1-1 split), pair 1's two R's (agree),
pair 2's two votes (each against the other: disagree): 2 of 5. Single: the judge equals 2 + 0 + 1 + 1
of 8 votes: 1/2; the crowd's chance two of its votes agree: Σ n_c(n_c−1) / Σ n(n−1) = (2 + 2)/(6 + 2 + 2)
= 2/5. κ: p_o = 1/2, judge marginal (5, 2, 1)/8, votes' (3, 4, 1)/8, p_e = 24/64 = 3/8, κ = 1/5. Crowd
κ: p_o = 2/5, q = (5, 5, 0)/10, p_e = 1/2, κ = −1/5.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from metrics.judging import (
    LEFT,
    RIGHT,
    TIE,
    agreement_figures,
    bootstrap_totals,
    closeness_bands,
    judge_outcomes,
    number_pairs,
    pair_statistics,
    side_figures,
    split_half_differences,
    verdict_figures,
)
from metrics.metrology import BallotVotes, split_halves

L, R, T = LEFT, RIGHT, TIE
VOTES = [(0, L), (0, L), (0, R), (1, R), (1, R), (2, L), (2, R), (3, T), (4, L), (4, T), (4, T), (4, R)]
PAIR_OF_VOTE = np.array([pair for pair, _ in VOTES])
CATEGORY = np.array([category for _, category in VOTES])
DECISIONS = np.array([1.0, 1.0, 0.0, 0.5, np.nan])


def figures(decisions=DECISIONS):
    statistics = pair_statistics(decisions, CATEGORY, PAIR_OF_VOTE, 5)
    observed, replicated = bootstrap_totals(statistics, np.random.default_rng(0), 200)
    return observed, replicated, agreement_figures(observed, replicated)


def test_agreement_figures_are_the_hand_worked_fractions():
    _, _, agreement = figures()
    assert agreement["majority"]["value"] == pytest.approx(float(Fraction(1, 2)))
    assert agreement["majority"]["pairs"] == 2
    assert agreement["majority"]["crowd"]["value"] == pytest.approx(float(Fraction(2, 5)))
    assert agreement["single"]["value"] == pytest.approx(float(Fraction(1, 2)))
    assert agreement["single"]["votes"] == 8
    assert agreement["single"]["crowd"]["value"] == pytest.approx(float(Fraction(2, 5)))
    assert agreement["kappa"]["value"] == pytest.approx(float(Fraction(1, 5)))
    assert agreement["kappa"]["crowd"]["value"] == pytest.approx(float(Fraction(-1, 5)))


def confusion_kappa(pairs_of_ratings) -> float:
    """Cohen's κ from the 3 × 3 confusion matrix of (first rating, second rating) units."""
    matrix = np.zeros((3, 3))
    for first, second in pairs_of_ratings:
        matrix[first, second] += 1
    matrix /= matrix.sum()
    observed = np.trace(matrix)
    expected = matrix.sum(axis=1) @ matrix.sum(axis=0)
    return (observed - expected) / (1 - expected)


def test_kappa_equals_the_confusion_matrix_formula_on_random_votes():
    rng = np.random.default_rng(5)
    pair_of_vote = rng.integers(0, 40, size=300)
    category = rng.choice(3, size=300, p=[0.5, 0.3, 0.2])
    decisions = rng.choice([1.0, 0.0, 0.5, np.nan], size=40)
    statistics = pair_statistics(decisions, category, pair_of_vote, 40)
    observed, replicated = bootstrap_totals(statistics, np.random.default_rng(0), 10)
    agreement = agreement_figures(observed, replicated)
    judge_category = {1.0: L, 0.0: R, 0.5: T}
    judged = [
        (judge_category[decisions[pair]], vote)
        for pair, vote in zip(pair_of_vote, category, strict=True)
        if np.isfinite(decisions[pair])
    ]
    assert agreement["kappa"]["value"] == pytest.approx(confusion_kappa(judged))
    # The crowd's κ: every ordered pair of two distinct votes on the same decided pair is a unit (the
    # pooled marginals of both positions are equal, so the confusion matrix is symmetric).
    ordered = [
        (category[i], category[j])
        for i, j in itertools.permutations(range(300), 2)
        if pair_of_vote[i] == pair_of_vote[j] and np.isfinite(decisions[pair_of_vote[i]])
    ]
    assert agreement["kappa"]["crowd"]["value"] == pytest.approx(confusion_kappa(ordered))
    assert agreement["single"]["crowd"]["value"] == pytest.approx(np.mean([a == b for a, b in ordered]))


def test_side_counts_the_judges_decisive_decisions_and_the_crowds_votes_on_the_same_pairs():
    observed, _, _ = figures()
    side = side_figures(observed, 0.05)
    assert side["left_share"] == pytest.approx(2 / 3)  # pairs 0 and 1 left, pair 2 right
    assert side["p_value"] == pytest.approx(1.0)
    assert side["crowd_left_share"] == pytest.approx(3 / 7)  # 3 L among 7 decisive votes on pairs 0-3
    assert side["biased"] is False


def test_a_judge_always_left_on_many_pairs_is_biased():
    pair_of_vote = np.arange(40)
    statistics = pair_statistics(np.ones(40), np.zeros(40, dtype=np.int64), pair_of_vote, 40)
    observed, _ = bootstrap_totals(statistics, np.random.default_rng(0), 5)
    side = side_figures(observed, 0.05)
    assert side["left_share"] == 1.0
    assert side["p_value"] == pytest.approx(2 * 0.5**40)
    assert side["biased"] is True


def test_each_bootstrap_replicate_sums_the_statistics_of_the_pairs_drawn():
    statistics = pair_statistics(DECISIONS, CATEGORY, PAIR_OF_VOTE, 5)
    _, replicated = bootstrap_totals(statistics, np.random.default_rng(11), 7)
    draws = np.random.default_rng(11).integers(0, 5, size=(7, 5))  # one block: the same draws
    for replicate in range(7):
        assert replicated["votes"][replicate] == statistics["votes"][draws[replicate]].sum()
        np.testing.assert_array_equal(
            replicated["vote_category"][replicate], statistics["vote_category"][draws[replicate]].sum(axis=0)
        )


def test_intervals_hold_the_values():
    _, _, agreement = figures()
    for name in ("majority", "single", "kappa"):
        low, high = agreement[name]["interval"]
        assert low <= agreement[name]["value"] <= high


def test_undecided_pairs_count_nowhere():
    only_pair_four = np.array([np.nan, np.nan, np.nan, np.nan, 1.0])
    _, _, agreement = figures(only_pair_four)
    assert agreement["single"]["votes"] == 4
    assert agreement["majority"]["pairs"] == 1  # T T against L and R
    assert agreement["majority"]["value"] == 0.0


def test_pairs_are_numbered_by_their_items_and_shown_as_their_first_vote():
    left = np.array([3, 1, 0, 2, 1])
    right = np.array([1, 3, 2, 0, 0])
    numbering = number_pairs(left, right)
    assert numbering.low.tolist() == [0, 0, 1]
    assert numbering.high.tolist() == [1, 2, 3]
    assert numbering.left.tolist() == [1, 0, 3]
    assert numbering.right.tolist() == [0, 2, 1]
    assert numbering.pair_of_vote.tolist() == [2, 2, 1, 1, 0]
    assert numbering.same_side.tolist() == [True, False, True, False, True]
    # the judge's "left" on each pair, as each vote's outcome for its own left item
    outcomes = judge_outcomes(np.array([1.0, 0.5, 0.0]), numbering)
    assert outcomes.tolist() == [0.0, 1.0, 0.5, 0.5, 1.0]


def test_closeness_bands_cut_at_the_quartiles():
    band, cuts = closeness_bands(np.array([1, 2, 3, 4, 5, 6, 7, 8, np.nan]))
    assert band.tolist() == [0, 0, 1, 1, 2, 2, 3, 3, -1]
    assert cuts.tolist() == [2.75, 4.5, 6.25]


def test_verdict_reads_the_interval_of_the_differences():
    same = verdict_figures(
        {
            "difference": np.array([-0.01, 0.01, 0.0]),
            "judge_rho_w": np.full(3, 0.8),
            "crowd_rho_w": np.full(3, 0.8),
        }
    )
    assert same["indistinguishable"] is True and same["direction"] == "like the crowd"
    assert same["difference"]["value"] == pytest.approx(0.0)
    assert same["share_at_least_crowd"] == pytest.approx(2 / 3)
    worse = verdict_figures(
        {
            "difference": np.array([-0.3, -0.31, -0.29]),
            "judge_rho_w": np.full(3, 0.5),
            "crowd_rho_w": np.full(3, 0.8),
        }
    )
    assert worse["direction"] == "worse than the crowd" and worse["indistinguishable"] is False
    sd = np.std([-0.3, -0.31, -0.29], ddof=1)
    assert worse["difference"]["interval"] == pytest.approx(
        [-0.3 - 1.959963984540054 * sd, -0.3 + 1.959963984540054 * sd]
    )
    assert "worse than the crowd's own split-half replicate" in worse["sentence"]


def test_a_judge_whose_votes_are_the_crowds_differs_from_it_by_nothing_in_every_split():
    rng = np.random.default_rng(3)
    left = rng.integers(0, 12, size=400)
    right = (left + rng.integers(1, 12, size=400)) % 12
    ballot = BallotVotes(
        items=np.arange(12),
        left=left,
        right=right,
        outcome=(left < right).astype(np.float64),
        annotator=rng.integers(0, 8, size=400),
    )
    halves = split_halves(8, np.random.default_rng(1), 10)
    differences = split_half_differences([ballot], [ballot], 12, halves, np.ones(12, dtype=bool))
    np.testing.assert_allclose(differences["difference"], 0.0, atol=1e-12)
    np.testing.assert_allclose(differences["judge_rho_w"], differences["crowd_rho_w"])
    assert verdict_figures(differences)["indistinguishable"] is True


def test_group_sums_are_those_of_the_pairs_drawn_in_each_group():
    statistics = pair_statistics(DECISIONS, CATEGORY, PAIR_OF_VOTE, 5)
    group = np.array([0, 1, 0, -1, 1])
    observed, replicated = bootstrap_totals(statistics, np.random.default_rng(4), 6, groups=[("g", group, 2)])
    assert observed["g_votes"].tolist() == [
        5.0,
        2.0,
    ]  # pairs 0 and 2: 3 + 2 votes; pair 1: 2 (pair 4 undecided)
    assert observed["g_disagreements"].tolist() == [2.0, 2.0]  # pair 0: the R; pair 2: the L; pair 1: both R
    draws = np.random.default_rng(4).integers(0, 5, size=(6, 5))
    disagreements = statistics["votes"] - statistics["agreements"]
    for replicate in range(6):
        drawn = draws[replicate]
        for g in (0, 1):
            assert replicated["g_votes"][replicate, g] == statistics["votes"][drawn][group[drawn] == g].sum()
            assert (
                replicated["g_disagreements"][replicate, g] == disagreements[drawn][group[drawn] == g].sum()
            )


def test_a_part_without_pairs_has_no_figures():
    statistics = pair_statistics(np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), 0)
    observed, replicated = bootstrap_totals(
        statistics, np.random.default_rng(0), 5, groups=[("g", np.zeros(0), 2)]
    )
    agreement = agreement_figures(observed, replicated)
    assert agreement["single"] == {
        "value": None,
        "interval": None,
        "votes": 0,
        "crowd": {"value": None, "interval": None},
    }
    assert side_figures(observed, 0.05)["left_share"] is None
