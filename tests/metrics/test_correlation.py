"""ρ_w, τ_w (Lombardo et al. Eq. 7-9), plain ρ and τ, R(n0)."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from metrics.correlation import (
    first_rank_weight,
    kendall,
    rank_weights,
    ranks_from_scores,
    spearman,
    weighted_kendall,
    weighted_kendall_rows,
    weighted_spearman,
    weighted_spearman_rows,
)


def brute_force_gamma(ranks_a, ranks_b, n0, signed):
    """Γ of Eq. 7 summed over all n² pairs, straight from the definition (O(n²))."""
    a = np.asarray(ranks_a, dtype=float)
    b = np.asarray(ranks_b, dtype=float)
    raw = 1 / (a + n0) ** 2 + 1 / (b + n0) ** 2
    w = raw / raw.sum()
    pair_weight = np.sqrt(np.outer(w, w))
    da = a[None, :] - a[:, None]
    db = b[None, :] - b[:, None]
    if signed:
        da, db = np.sign(da), np.sign(db)
    a_ij, b_ij = pair_weight * da, pair_weight * db
    return (a_ij * b_ij).sum() / math.sqrt((a_ij**2).sum() * (b_ij**2).sum())


def tied_ranks(draw_values):
    return stats.rankdata(draw_values, method="average")


rankings_with_ties = st.integers(min_value=2, max_value=40).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, n), min_size=n, max_size=n),
        st.lists(st.integers(0, n), min_size=n, max_size=n),
        st.sampled_from([0.0, 0.5, 2.0, 10.0]),
    )
)


def test_hand_worked_three_items_with_n0_zero():
    # a = (1, 2, 3), b = (1, 3, 2), f(n) = 1/n²: raw weights (2, 13/36, 13/36), w = (36/49, 13/98, 13/98).
    # τ_w: pairs (1,2) and (1,3) concordant, (2,3) discordant: (936 + 936 - 169) / (936 + 936 + 169).
    # ρ_w: ā = b̄ = 68.5/49, cov = 893.75/2401, var = 1212.25/2401.
    a, b = [1, 2, 3], [1, 3, 2]
    assert weighted_kendall(a, b, n0=0) == pytest.approx(float(Fraction(1703, 2041)), abs=1e-15)
    assert weighted_spearman(a, b, n0=0) == pytest.approx(float(Fraction(3575, 4849)), abs=1e-15)
    np.testing.assert_allclose(rank_weights(a, b, n0=0), [36 / 49, 13 / 98, 13 / 98], rtol=1e-15)


def test_it_gives_one_for_identical_and_minus_one_for_reversed_rankings():
    ranks = np.arange(1, 101, dtype=float)
    assert weighted_kendall(ranks, ranks) == pytest.approx(1.0, abs=1e-12)
    assert weighted_spearman(ranks, ranks) == pytest.approx(1.0, abs=1e-12)
    assert weighted_kendall(ranks, ranks[::-1]) == pytest.approx(-1.0, abs=1e-12)
    # ρ_w of a reversed ranking is not -1: weights differ between the ends, but it is negative.
    assert weighted_spearman(ranks, ranks[::-1]) < -0.5


def test_without_ties_the_denominator_is_one_minus_the_sum_of_squared_weights():
    rng = np.random.default_rng(3)
    a = rng.permutation(30) + 1.0
    b = rng.permutation(30) + 1.0
    w = rank_weights(a, b)
    sign = np.sign(a[None, :] - a[:, None]) * np.sign(b[None, :] - b[:, None])
    expected = (np.outer(w, w) * sign).sum() / (1 - (w**2).sum())  # Eq. 8 with Z = 1 - Σ w²
    assert weighted_kendall(a, b) == pytest.approx(expected, abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(rankings_with_ties)
def test_weighted_kendall_equals_the_brute_force_gamma_with_ties(case):
    values_a, values_b, n0 = case
    a, b = tied_ranks(values_a), tied_ranks(values_b)
    expected = brute_force_gamma(a, b, n0, signed=True) if len(set(a)) > 1 and len(set(b)) > 1 else math.nan
    got = weighted_kendall(a, b, n0)
    if math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(expected, abs=1e-9)


@settings(max_examples=300, deadline=None)
@given(rankings_with_ties)
def test_weighted_spearman_equals_the_brute_force_gamma_with_ties(case):
    values_a, values_b, n0 = case
    a, b = tied_ranks(values_a), tied_ranks(values_b)
    if len(set(a)) == 1 or len(set(b)) == 1:
        assert math.isnan(weighted_spearman(a, b, n0))
    else:
        assert weighted_spearman(a, b, n0) == pytest.approx(
            brute_force_gamma(a, b, n0, signed=False), abs=1e-9
        )


@settings(max_examples=200, deadline=None)
@given(rankings_with_ties)
def test_plain_coefficients_agree_with_scipy(case):
    values_a, values_b, _ = case
    a, b = tied_ranks(values_a), tied_ranks(values_b)
    if len(set(a)) == 1 or len(set(b)) == 1:
        assert math.isnan(kendall(a, b)) and math.isnan(spearman(a, b))
        return
    assert kendall(a, b) == pytest.approx(stats.kendalltau(a, b).statistic, abs=1e-12)
    assert spearman(a, b) == pytest.approx(stats.spearmanr(a, b).statistic, abs=1e-12)


def test_kendall_agrees_with_scipy_on_a_large_tied_input():
    rng = np.random.default_rng(11)
    a = tied_ranks(rng.integers(0, 500, 50_000))
    b = tied_ranks(rng.integers(0, 500, 50_000))
    assert kendall(a, b) == pytest.approx(stats.kendalltau(a, b).statistic, abs=1e-12)


def test_weighted_kendall_on_a_large_input_matches_a_chunked_quadratic_sum():
    # 3,000 items: the O(n²) sum is still affordable in blocks, and exercises many merge levels.
    rng = np.random.default_rng(5)
    a = tied_ranks(rng.integers(0, 1000, 3000))
    b = tied_ranks(a + rng.normal(0, 300, 3000))
    w = rank_weights(a, b)
    numerator = 0.0
    for start in range(0, a.size, 500):
        block = slice(start, start + 500)
        sign = np.sign(a[None, :] - a[block, None]) * np.sign(b[None, :] - b[block, None])
        numerator += (w[block, None] * w[None, :] * sign).sum()
    tied_a = sum(w[a == v].sum() ** 2 for v in np.unique(a))
    tied_b = sum(w[b == v].sum() ** 2 for v in np.unique(b))
    expected = numerator / math.sqrt((1 - tied_a) * (1 - tied_b))
    assert weighted_kendall(a, b) == pytest.approx(expected, abs=1e-9)


def test_weighted_coefficients_tend_to_the_plain_ones_as_n0_grows():
    rng = np.random.default_rng(2)
    a = tied_ranks(rng.integers(0, 20, 60))
    b = tied_ranks(rng.integers(0, 20, 60))
    assert weighted_spearman(a, b, n0=1e9) == pytest.approx(spearman(a, b), abs=1e-6)
    assert weighted_kendall(a, b, n0=1e9) == pytest.approx(kendall(a, b), abs=1e-6)


def test_a_tied_ranking_correlates_perfectly_with_itself():
    a = tied_ranks([3, 3, 1, 2, 2, 2, 5, 0])
    assert weighted_kendall(a, a) == pytest.approx(1.0, abs=1e-12)
    assert weighted_spearman(a, a) == pytest.approx(1.0, abs=1e-12)


def test_coefficients_are_symmetric_and_ignore_the_order_of_items():
    rng = np.random.default_rng(9)
    a = tied_ranks(rng.integers(0, 15, 40))
    b = tied_ranks(rng.integers(0, 15, 40))
    shuffle = rng.permutation(40)
    for coefficient in (weighted_kendall, weighted_spearman):
        assert coefficient(a, b) == pytest.approx(coefficient(b, a), abs=1e-12)
        assert coefficient(a, b) == pytest.approx(coefficient(a[shuffle], b[shuffle]), abs=1e-12)


def test_swapping_the_top_pair_costs_more_than_swapping_a_bottom_pair():
    ranks = np.arange(1, 51, dtype=float)
    top_swapped = ranks.copy()
    top_swapped[[0, 1]] = top_swapped[[1, 0]]
    bottom_swapped = ranks.copy()
    bottom_swapped[[48, 49]] = bottom_swapped[[49, 48]]
    assert weighted_kendall(ranks, top_swapped) < weighted_kendall(ranks, bottom_swapped)
    assert weighted_spearman(ranks, top_swapped) < weighted_spearman(ranks, bottom_swapped)
    # The plain τ cannot tell the two swaps apart.
    assert kendall(ranks, top_swapped) == pytest.approx(kendall(ranks, bottom_swapped), abs=1e-15)


def test_first_rank_weight_matches_the_closed_form_and_the_series():
    # ψ⁽¹⁾(1) = π²/6 and ψ⁽¹⁾(3) = π²/6 - 1 - 1/4.
    assert first_rank_weight(0) == pytest.approx(6 / math.pi**2, rel=1e-14)
    assert first_rank_weight(2) == pytest.approx(1 / (9 * (math.pi**2 / 6 - 1.25)), rel=1e-14)
    assert round(first_rank_weight(0), 2) == 0.61 and round(first_rank_weight(2), 2) == 0.28
    n = np.arange(1, 2_000_001, dtype=float)
    series = 1 / (n + 2.0) ** 2
    assert first_rank_weight(2) == pytest.approx(series[0] / series.sum(), rel=1e-5)


def test_ranks_from_scores_gives_average_ranks_with_the_highest_score_first():
    np.testing.assert_array_equal(ranks_from_scores([0.1, 0.9, 0.5, 0.9]), [4.0, 1.5, 3.0, 1.5])
    np.testing.assert_array_equal(ranks_from_scores([0.1, 0.9, 0.5], higher_is_better=False), [1.0, 3.0, 2.0])


def test_a_constant_ranking_gives_nan():
    assert math.isnan(weighted_kendall([1, 2, 3], [2, 2, 2]))
    assert math.isnan(weighted_spearman([2, 2, 2], [1, 2, 3]))


@pytest.mark.parametrize(
    ("ranks_a", "ranks_b", "n0", "message"),
    [
        ([1, 2, 3], [1, 2], 2.0, "same items: got 3 and 2"),
        ([1], [1], 2.0, "at least two items"),
        ([0, 1, 2], [1, 2, 3], 2.0, "ranks_a must start at 1"),
        ([1, 2, float("nan")], [1, 2, 3], 2.0, "position 2"),
        ([1, 2, 3], [1, 2, 3], -1.0, r"n0 must be at least -0\.9: .*, got -1\.0"),
        ([[1, 2]], [[1, 2]], 2.0, "one-dimensional"),
    ],
)
def test_it_rejects_bad_input_with_a_clear_message(ranks_a, ranks_b, n0, message):
    for coefficient in (weighted_kendall, weighted_spearman):
        with pytest.raises(ValueError, match=message):
            coefficient(ranks_a, ranks_b, n0)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 30), st.integers(1, 6), st.integers(0, 2**32 - 1), st.sampled_from([0.0, 2.0, 7.5]))
def test_the_row_versions_equal_the_single_coefficients_row_by_row(n, rows, seed, n0):
    rng = np.random.default_rng(seed)
    a = tied_ranks(rng.integers(0, n, n))
    b = np.array([tied_ranks(rng.integers(0, rng.integers(1, n + 1), n)) for _ in range(rows)])
    tau = weighted_kendall_rows(a, b, n0)
    rho = weighted_spearman_rows(a, b, n0)
    for row in range(rows):
        np.testing.assert_allclose(
            tau[row], weighted_kendall(a, b[row], n0), rtol=0, atol=1e-12, equal_nan=True
        )
        np.testing.assert_allclose(
            rho[row], weighted_spearman(a, b[row], n0), rtol=0, atol=1e-12, equal_nan=True
        )


def test_the_row_versions_refuse_a_flat_array():
    with pytest.raises(ValueError, match="two-dimensional"):
        weighted_kendall_rows([1, 2, 3], [1, 2, 3])
