"""The compiled row kernels give what the per-row coefficients and the numpy scoring give.

The per-row ``weighted_kendall`` and ``weighted_spearman`` are checked against Γ of Lombardo et al.,
Eq. 7-9 summed over all pairs (tests/metrics/test_correlation.py); here the row versions, which run
the compiled kernels of ``metrics.kernels``, are checked against them row by row, on sizes that
exercise the insertion-sorted leaves (16 items), the merges above them, odd sizes and long runs of
ties, and against the O(n²) sum of Eq. 7 directly on one large row.
"""

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from metrics import metrology
from metrics.correlation import (
    ranks_from_scores_rows,
    weighted_kendall,
    weighted_kendall_rows,
    weighted_spearman,
    weighted_spearman_rows,
)
from metrics.metrology import bootstrap_scores, replicate_scores
from tests.metrics.test_metrology import simulated_study

UNIFORM = 1e12  # n0 → ∞: uniform weights, τ_b and ρ (as metrics.evaluation uses it)


def tied_ranks(values):
    return stats.rankdata(values, method="average")


def rows_of_rankings(rng, n, rows, distinct):
    """``rows`` rankings of n items with at most ``distinct`` different ranks each (ties when < n)."""
    return np.array([tied_ranks(rng.integers(0, distinct, n)) for _ in range(rows)])


@settings(max_examples=120, deadline=None)
@given(
    n=st.integers(2, 140),
    rows=st.integers(1, 5),
    seed=st.integers(0, 2**32 - 1),
    n0=st.sampled_from([0.0, 0.5, 2.0, 10.0, UNIFORM]),
    ties_a=st.sampled_from([1.0, 0.5, 0.1, 0.02]),
    ties_b=st.sampled_from([1.0, 0.5, 0.1, 0.02]),
    shared=st.booleans(),
)
def test_the_row_kernels_equal_the_per_row_coefficients(n, rows, seed, n0, ties_a, ties_b, shared):
    # ties_* = share of distinct values: 0.02 of 140 items gives runs of ~50 tied items in a, longer
    # than the 16-item leaves, so the runs of equal a are themselves sorted by merging.
    rng = np.random.default_rng(seed)
    a = rows_of_rankings(rng, n, 1 if shared else rows, max(1, int(ties_a * n)))
    b = rows_of_rankings(rng, n, rows, max(1, int(ties_b * n)))
    tau = weighted_kendall_rows(a[0] if shared else a, b, n0)
    rho = weighted_spearman_rows(a[0] if shared else a, b, n0)
    assert tau.shape == rho.shape == (rows,)
    for row in range(rows):
        a_row = a[0] if shared else a[row]
        np.testing.assert_allclose(
            tau[row], weighted_kendall(a_row, b[row], n0), rtol=0, atol=1e-12, equal_nan=True
        )
        np.testing.assert_allclose(
            rho[row], weighted_spearman(a_row, b[row], n0), rtol=0, atol=1e-12, equal_nan=True
        )


def test_uniform_weights_give_scipys_tau_b_and_rho_on_tied_rows():
    rng = np.random.default_rng(4)
    a = tied_ranks(rng.integers(0, 40, 999))
    b = rows_of_rankings(rng, 999, 6, 300)
    tau = weighted_kendall_rows(a, b, UNIFORM)
    rho = weighted_spearman_rows(a, b, UNIFORM)
    for row in range(6):
        assert tau[row] == pytest.approx(stats.kendalltau(a, b[row]).statistic, abs=1e-10)
        assert rho[row] == pytest.approx(stats.spearmanr(a, b[row]).statistic, abs=1e-10)


def test_tau_w_of_a_large_row_matches_the_quadratic_sum_of_eq_7():
    # 2,001 items (odd), with ties in both rankings: Γ of Eq. 7 with sign scores, summed pair by pair.
    rng = np.random.default_rng(8)
    a = tied_ranks(rng.integers(0, 1500, 2001))
    b = np.stack([tied_ranks(rng.integers(0, 700, 2001)), rng.permutation(2001) + 1.0])
    n0 = 2.0
    got = weighted_kendall_rows(a, b, n0)
    for row in range(2):
        raw = 1 / (a + n0) ** 2 + 1 / (b[row] + n0) ** 2
        w = raw / raw.sum()
        sign_a = np.sign(a[None, :] - a[:, None])
        sign_b = np.sign(b[row][None, :] - b[row][:, None])
        pair = np.outer(w, w)
        expected = (pair * sign_a * sign_b).sum() / math.sqrt(
            (pair * sign_a**2).sum() * (pair * sign_b**2).sum()
        )
        assert got[row] == pytest.approx(expected, abs=1e-12)


def test_identical_reversed_and_constant_rows():
    ranks = np.arange(1, 1001, dtype=float)
    b = np.stack([ranks, ranks[::-1], np.full(1000, 500.5)])
    tau = weighted_kendall_rows(ranks, b)
    rho = weighted_spearman_rows(ranks, b)
    assert tau[0] == pytest.approx(1.0, abs=1e-12) and rho[0] == pytest.approx(1.0, abs=1e-12)
    assert tau[1] == pytest.approx(-1.0, abs=1e-12) and rho[1] < -0.5
    assert math.isnan(tau[2]) and math.isnan(rho[2])


def test_a_ranking_per_row_of_the_wrong_length_is_refused():
    with pytest.raises(ValueError, match="one ranking of the 3 items or one per row"):
        weighted_kendall_rows(np.ones((2, 3)), np.ones((3, 3)))
    with pytest.raises(ValueError, match="start at 1"):
        weighted_spearman_rows([1, 2, 3], [[1, 2, 3], [0, 1, 2]])


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 200),
    rows=st.integers(1, 4),
    distinct=st.integers(1, 200),
    seed=st.integers(0, 2**32 - 1),
)
def test_row_ranks_equal_scipys_average_ranks(n, rows, distinct, seed):
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, distinct, (rows, n)) / 7.0 - 3.0  # ties, negatives, zero
    np.testing.assert_array_equal(
        ranks_from_scores_rows(scores), stats.rankdata(-scores, method="average", axis=1)
    )


def test_row_ranks_refuse_a_non_finite_score():
    with pytest.raises(ValueError, match="row 1, position 2 holds nan"):
        ranks_from_scores_rows([[1.0, 2.0, 3.0], [1.0, 2.0, np.nan]])


@pytest.mark.parametrize("replicates", [1, 7, 333])
@pytest.mark.parametrize("draw_block", [1_000_000, 1_000])
def test_the_bootstrap_counts_the_draws_of_rng_integers_ballot_after_ballot(
    replicates, draw_block, monkeypatch
):
    # The bootstrap tallies its draws block by block in compiled code (a block of 1,000 draws holds
    # one or two replicates here); the same draws as R × V_k arrays, turned into multiplicities and
    # scored by replicate_scores, give the same scores.
    monkeypatch.setattr(metrology, "_DRAW_BLOCK", draw_block)
    ballots, _ = simulated_study(item_count=121, sizes=(121, 61, 31), appearances=9)
    drawn = np.random.default_rng(12)
    multiplicities = []
    for ballot in ballots:
        draws = drawn.integers(0, ballot.vote_count, size=(replicates, ballot.vote_count))
        multiplicities.append(np.stack([np.bincount(row, minlength=ballot.vote_count) for row in draws]))
    expected = replicate_scores(ballots, 121, multiplicities)
    got = bootstrap_scores(ballots, 121, np.random.default_rng(12), replicates)
    np.testing.assert_array_equal(got, expected)


CALLERS_AFTER_COMPILE_ALL = """
import numpy as np
from metrics import kernels
from metrics.correlation import ranks_from_scores_rows, weighted_kendall_rows, weighted_spearman_rows
from metrics.metrology import bootstrap_scores, replicate_scores
from tests.metrics.test_metrology import simulated_study

kernels.compile_all()
names = [name for name in kernels.__all__ if name != "compile_all"]
before = {name: len(getattr(kernels, name).signatures) for name in names}
ballots, _ = simulated_study(item_count=40, sizes=(40, 20), appearances=6)
replicates = bootstrap_scores(ballots, 40, np.random.default_rng(1), 5)
replicate_scores(ballots, 40, [np.ones((2, b.vote_count)) for b in ballots])
human = ranks_from_scores_rows(np.where(np.isfinite(replicates), replicates, 0.0))
weighted_kendall_rows(np.arange(1, 41.0), human)
weighted_spearman_rows(np.arange(1, 41.0), human)
after = {name: len(getattr(kernels, name).signatures) for name in names}
print(min(before.values()), after == before)
"""


def test_compile_all_compiles_what_the_callers_then_use():
    # In a fresh process (dispatchers without signatures): after compile_all, the callers' own calls
    # need no signature it did not compile, so warming a worker with it leaves nothing to compile.
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", CALLERS_AFTER_COMPILE_ALL],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.split() == ["1", "True"]


@pytest.mark.parametrize("shared", [True, False])
def test_rows_shared_between_threads_give_the_numbers_of_one_thread(shared, monkeypatch):
    # Above _SPLIT_AT cells the row versions hand halves of the rows to two threads; every row is
    # computed alone either way, so the results are equal to the last bit, and equal the per-row
    # coefficients. 9 rows: the halves are of unequal size.
    from metrics import kernels

    rng = np.random.default_rng(31)
    n = 303
    human = rows_of_rankings(rng, n, 9, distinct=40)
    model = rows_of_rankings(rng, n, 1 if shared else 9, distinct=n)
    scores = rng.integers(0, 60, (9, n)).astype(np.float64)
    monkeypatch.setattr(kernels, "THREADS", 2)
    results = {}
    for split_at in (10**12, 0):  # one thread, then two
        monkeypatch.setattr(kernels, "_SPLIT_AT", split_at)
        results[split_at] = (
            weighted_kendall_rows(model, human, 2.0),
            weighted_spearman_rows(model, human, 2.0),
            ranks_from_scores_rows(scores),
        )
    for one, two in zip(results[10**12], results[0], strict=True):
        np.testing.assert_array_equal(two, one)
    tau_w, rho_w, ranks = results[0]
    for row in range(9):
        model_row = model[0] if shared else model[row]
        assert tau_w[row] == pytest.approx(weighted_kendall(model_row, human[row], 2.0), abs=1e-12)
        assert rho_w[row] == pytest.approx(weighted_spearman(model_row, human[row], 2.0), abs=1e-12)
    np.testing.assert_array_equal(ranks, stats.rankdata(-scores, method="average", axis=1))
