"""The batched confidence-elimination protocol: its bound, its rank intervals, its budget, its opponents."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from metrics.correlation import ranks_from_scores
from scoring.elimination import (
    allocate_round,
    confidence_radius,
    draw_opponents,
    rank_bounds,
    round_budgets,
    run_elimination,
    settled,
)
from scoring.simulation import SimulationConfig, Voters, draw_voters, underlying_similarity


def noiseless(relatedness) -> Voters:
    """Voters who always pick the more related item: opinions |z|, no nonconformity, no oversight."""
    opinions = np.tile(np.abs(np.asarray(relatedness, dtype=np.float64)), (10, 1))
    return Voters(opinions=opinions, oversight=np.zeros(10), nonconformity=np.zeros(10))


def crowd(item_count: int, seed: int, voter_count: int = 100) -> Voters:
    """The §4.1 crowd of the paper (σ* in [0.02, 0.2], ε in [0.005, 0.05]) on exponential similarities."""
    z = underlying_similarity("exponential", item_count)
    config = SimulationConfig(item_count=item_count, ballot_count=1, appearances=2, voter_count=voter_count)
    return draw_voters(z, config, np.random.default_rng(seed))


def true_borda(voters: Voters) -> np.ndarray:
    """τ_i by brute force: the chance of beating a uniform other item before a uniform voter of the crowd,
    with the voter's oversight ε_v flipping the decision and equal opinions a tie (one half)."""
    o = voters.opinions  # voters × items
    above = (o[:, :, None] > o[:, None, :]).astype(float)
    below = (o[:, :, None] < o[:, None, :]).astype(float)
    tie = 1.0 - above - below
    eps = voters.oversight[:, None, None]
    win = (1 - eps) * above + eps * below + 0.5 * tie
    n = o.shape[1]
    win[:, np.arange(n), np.arange(n)] = 0.0
    return win.mean(axis=0).sum(axis=1) / (n - 1)


# --- the bound -------------------------------------------------------------------------------------


def test_the_radius_is_hoeffding_with_a_union_over_items_and_rounds_worked_by_hand():
    # N = 990, R = 7, δ = 0.1: ln(2·990·7/0.1) = ln 138600 = 0.326422 + 5·2.302585 = 11.839347;
    # n = 50: c = sqrt(11.839347 / 100) = 0.344084.
    radius = confidence_radius([50], item_count=990, round_count=7, delta=0.1)
    assert radius[0] == pytest.approx(0.344084, abs=1e-6)
    # N = 5, R = 2, δ = 0.2: ln 100 = 4.605170; n = 2: sqrt(4.605170 / 4) = 1.072983.
    assert confidence_radius([2], item_count=5, round_count=2, delta=0.2)[0] == pytest.approx(
        1.072983, abs=1e-6
    )


def test_an_item_without_comparisons_has_an_infinite_interval():
    radius = confidence_radius([0, 4], item_count=10, round_count=3, delta=0.1)
    assert math.isinf(radius[0]) and math.isfinite(radius[1])


def test_the_radius_covers_the_true_share_at_least_one_minus_delta_of_the_time():
    # 2,000 sets of N·R = 40 estimates of a fair coin (the widest case, p = 1/2) from n = 25 flips each:
    # the union bound promises all 40 inside their interval in at least 90% of the sets.
    rng = np.random.default_rng(7)
    estimates = rng.binomial(25, 0.5, size=(2000, 40)) / 25
    radius = confidence_radius([25], item_count=20, round_count=2, delta=0.1)[0]
    all_inside = (np.abs(estimates - 0.5) < radius).all(axis=1)
    assert all_inside.mean() >= 0.9


# --- rank intervals and settling -------------------------------------------------------------------


def test_rank_bounds_worked_by_hand():
    #          A            B             C            D
    lower = [0.80, 0.85, 0.10, 0.20]
    upper = [0.90, 0.95, 0.30, 0.50]
    best, worst = rank_bounds(lower, upper)
    # A: nothing certainly above (B's 0.85 < 0.90); B possibly above → ranks 1-2. Same for B.
    # C and D: A and B certainly above, each other possibly → ranks 3-4.
    np.testing.assert_array_equal(best, [1, 1, 3, 3])
    np.testing.assert_array_equal(worst, [2, 2, 4, 4])


@given(
    st.lists(
        st.tuples(st.floats(0, 1, allow_nan=False), st.floats(0, 0.5, allow_nan=False)),
        min_size=1,
        max_size=30,
    )
)
def test_rank_bounds_match_brute_force(intervals):
    lower = np.array([centre - half for centre, half in intervals])
    upper = np.array([centre + half for centre, half in intervals])
    best, worst = rank_bounds(lower, upper)
    n = lower.size
    for i in range(n):
        others = np.arange(n) != i
        assert best[i] == 1 + np.sum(lower[others] > upper[i])
        assert worst[i] == 1 + np.sum(upper[others] >= lower[i])
        assert 1 <= best[i] <= worst[i] <= n


def test_an_item_is_settled_when_its_rank_interval_lies_in_one_group():
    best = np.array([1, 1, 3, 3, 2])
    worst = np.array([2, 2, 4, 4, 3])
    # Cutoff K = 2: groups are ranks 1-2 and 3+; the last item (2-3) straddles the cutoff.
    is_settled, group = settled(best, worst, (2,))
    np.testing.assert_array_equal(is_settled, [True, True, True, True, False])
    np.testing.assert_array_equal(group[:4], [0, 0, 1, 1])
    # Cutoffs 1 and 3: ranks 1, 2-3, 4+.
    is_settled, group = settled(best, worst, (1, 3))
    np.testing.assert_array_equal(is_settled, [False, False, False, False, True])
    assert group[4] == 1


# --- the budget ------------------------------------------------------------------------------------


def test_round_budgets_split_the_budget_as_evenly_as_possible():
    np.testing.assert_array_equal(round_budgets(19_660, 7), [2809, 2809, 2809, 2809, 2808, 2808, 2808])
    assert round_budgets(19_660, 7).sum() == 19_660


def test_a_round_gives_every_candidate_its_share_and_the_remainder_to_distinct_items():
    left = allocate_round([3, 5, 8, 9], 10, np.random.default_rng(0))
    counts = np.bincount(left, minlength=10)[[3, 5, 8, 9]]
    assert left.size == 10 and sorted(counts) == [2, 2, 3, 3]


@settings(max_examples=40, deadline=None)
@given(
    item_count=st.integers(2, 40),
    round_count=st.integers(1, 6),
    extra=st.integers(0, 3_000),
    cutoff_share=st.floats(0.05, 0.95),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_budget_is_spent_exactly_and_the_counts_add_up(
    item_count, round_count, extra, cutoff_share, seed
):
    budget = (item_count - 1) * round_count + 1 + extra
    cutoff = min(item_count - 1, max(1, round(cutoff_share * item_count)))
    voters = crowd(item_count, seed % 1000, voter_count=7)
    record: list = []
    result = run_elimination(
        voters,
        comparison_budget=budget,
        round_count=round_count,
        cutoffs=(cutoff,),
        rng=np.random.default_rng(seed),
        record=record,
    )
    left = np.concatenate([r["left"] for r in record])
    right = np.concatenate([r["right"] for r in record])
    outcome = np.concatenate([r["outcome"] for r in record])
    # Exactly B comparisons, split over the rounds as round_budgets says; no item against itself.
    assert left.size == budget == result.comparisons.sum()
    assert list(result.round_comparisons) == round_budgets(budget, round_count).tolist()
    assert not np.any(left == right)
    assert right.min() >= 0 and right.max() < item_count
    # The scores are the active side's wins + ties/2 over its comparisons; every item has some.
    np.testing.assert_array_equal(result.comparisons, np.bincount(left, minlength=item_count))
    points = np.bincount(left, weights=outcome, minlength=item_count)
    np.testing.assert_allclose(result.score, points / result.comparisons)
    assert result.comparisons.min() >= 1
    # Settled items stay settled, in one group, and are not compared again while others are active.
    assert ((result.settled_round > 0) == (result.group >= 0)).all()
    assert list(result.active_counts) == sorted(result.active_counts, reverse=True)
    for number, entry in enumerate(record, start=1):
        earlier = np.flatnonzero((result.settled_round > 0) & (result.settled_round < number))
        if result.active_counts[number - 1] > 0:
            assert not np.isin(entry["left"], earlier).any()


def test_opponents_are_drawn_uniformly_from_the_whole_pool():
    # 90,000 draws for item 3 of 10: the other nine items equally often (chi-square), never itself.
    opponents = draw_opponents(np.full(90_000, 3), 10, np.random.default_rng(1))
    counts = np.bincount(opponents, minlength=10)
    assert counts[3] == 0
    assert chisquare(np.delete(counts, 3)).pvalue > 0.001


def test_in_a_run_the_opponents_include_settled_items_as_often_as_any_other():
    # 60 items of the §4.1 crowd, a large budget: most items settle early. The offset of the opponent
    # from its active item, (right - left) mod N, must be uniform on 1 … N-1 in every round.
    voters = crowd(60, seed=3)
    record: list = []
    result = run_elimination(
        voters,
        comparison_budget=60_000,
        round_count=5,
        cutoffs=(5,),
        rng=np.random.default_rng(2),
        record=record,
    )
    assert result.active_counts[-1] < 60  # something settled
    left = np.concatenate([r["left"] for r in record])
    right = np.concatenate([r["right"] for r in record])
    offsets = np.bincount((right - left) % 60, minlength=60)
    assert offsets[0] == 0
    assert chisquare(offsets[1:]).pvalue > 0.001
    # In the last round, settled items are drawn as opponents in proportion to their number.
    last = record[-1]
    settled_before = (result.settled_round > 0) & (result.settled_round < len(record))
    share = settled_before[last["right"]].mean()
    expected = (
        settled_before.sum() / 59
    )  # an active item's opponents: the 59 others, all settled ones among them
    assert share == pytest.approx(expected, abs=0.02)


# --- known answers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_noiseless_voters_find_the_top_k_exactly(seed):
    # 40 items with distinct relatedness; voters who never err. The final top 5 is the true top 5.
    rng = np.random.default_rng(100 + seed)
    relatedness = rng.permutation(np.linspace(0.05, 0.95, 40))
    result = run_elimination(
        noiseless(relatedness),
        comparison_budget=200_000,
        round_count=6,
        cutoffs=(5,),
        rng=np.random.default_rng(seed),
    )
    found = np.argsort(-result.score, kind="stable")[:5]
    assert set(found.tolist()) == set(np.argsort(-relatedness)[:5].tolist())
    # Most of the bottom settled early; the items near the cutoff took most of the budget.
    assert result.active_counts[-1] < 40


def test_every_item_settles_and_the_rest_of_the_budget_refines_the_top_group():
    # Four noiseless items: true Borda scores 1, 2/3, 1/3, 0. After the first round (250 comparisons
    # each, radius sqrt(ln(2·4·4/0.1)/500) = 0.107) every rank is known and settles in its group of
    # K = 2; rounds 2-4 then compare only the current top two.
    relatedness = np.array([0.2, 0.9, 0.1, 0.6])
    record: list = []
    result = run_elimination(
        noiseless(relatedness),
        comparison_budget=4_000,
        round_count=4,
        cutoffs=(2,),
        rng=np.random.default_rng(0),
        record=record,
    )
    assert result.active_counts == (4, 0, 0, 0)
    np.testing.assert_array_equal(result.group, [1, 0, 1, 0])
    for entry in record[1:]:
        np.testing.assert_array_equal(entry["compared"], [1, 3])
    np.testing.assert_array_equal(result.comparisons, [250, 1750, 250, 1750])
    assert result.comparisons.sum() == 4_000
    np.testing.assert_array_equal(ranks_from_scores(result.score), [3, 1, 4, 2])


@pytest.mark.parametrize("seed", range(3))
def test_settled_items_of_a_noisy_crowd_are_in_their_true_borda_group(seed):
    # 100 items, the paper's noisy §4.1 crowd; true τ by brute force over voters and opponents.
    voters = crowd(100, seed)
    result = run_elimination(
        voters,
        comparison_budget=150_000,
        round_count=5,
        cutoffs=(10, 50),
        rng=np.random.default_rng(seed),
    )
    tau = true_borda(voters)
    true_group = np.searchsorted([10, 50], ranks_from_scores(tau), side="left")
    done = result.group >= 0
    assert done.sum() > 20
    np.testing.assert_array_equal(result.group[done], true_group[done])


# --- refusals --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"comparison_budget": 63}, "every item needs a comparison in the first round"),
        ({"round_count": 0}, "the number of rounds R must be a positive whole number"),
        ({"delta": 1.0}, "must lie strictly between 0 and 1"),
        ({"cutoffs": (0, 5)}, r"cutoffs K must lie from 1 to N-1 = 9"),
        ({"cutoffs": (10,)}, r"cutoffs K must lie from 1 to N-1 = 9"),
        ({"cutoffs": ()}, "give at least one whole-number cutoff"),
    ],
)
def test_bad_parameters_are_refused_with_the_reason(changes, message):
    arguments = {"comparison_budget": 100, "round_count": 7, "cutoffs": (3,), "delta": 0.1}
    arguments.update(changes)
    with pytest.raises(ValueError, match=message):
        run_elimination(crowd(10, 0), rng=np.random.default_rng(0), **arguments)


def test_the_smallest_budget_gives_every_item_one_comparison_in_the_first_round():
    # N = 10, R = 7: ⌈B/7⌉ ≥ 10 first at B = 64.
    result = run_elimination(
        crowd(10, 0), comparison_budget=64, round_count=7, cutoffs=(3,), rng=np.random.default_rng(0)
    )
    assert result.comparisons.min() >= 1 and result.comparisons.sum() == 64
    with pytest.raises(ValueError, match="the budget must be at least 64"):
        run_elimination(
            crowd(10, 0), comparison_budget=63, round_count=7, cutoffs=(3,), rng=np.random.default_rng(0)
        )
