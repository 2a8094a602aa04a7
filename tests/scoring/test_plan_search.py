"""Plans from a target precision (scoring.plan_search): the confidence bounds by hand, the search against
brute force, the confirmation on fresh seeds, the preference for plans without §2.7 warnings, per area."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.ir import precision_at_k, recall_at_k
from scoring.plan import area_plans, ballot_plan
from scoring.plan_search import (
    Candidate,
    PlanGrid,
    Target,
    confirmation_seeds,
    figure_summary,
    grid_lines,
    minimum_repetitions,
    order_statistic_rank,
    parse_target,
    search_plan,
    search_seeds,
    simulated_figures,
    top_k_overlap,
)
from scoring.simulation import SimulationConfig, underlying_similarity

SMALL_GRID = PlanGrid(
    ballot_counts=(1, 2, 3, 4),
    keep_fractions=(0.4, 0.5, 0.6),
    appearance_step=2,
    max_appearances=60,
    max_total_comparisons=5_000,
)


def noise(seed: np.random.SeedSequence, spread: float) -> float:
    """A repetition's own disagreement, fixed by its seed: uniform in [-spread, spread]."""
    return (seed.generate_state(1)[0] / 2**32 * 2 - 1) * spread


def stub(figure, *, confirmation=None, spread=0.02):
    """An evaluate() whose value in repetition r is figure(n_b, α, M) plus the seed's noise, clipped to
    [-1, 1]; on the fresh seeds of a confirmation (spawn key (1, …)) ``confirmation`` replaces ``figure``
    when given. Records (candidate, seeds) of every call."""
    calls = []

    def evaluate(candidate: Candidate, seeds) -> list[dict]:
        calls.append((candidate, list(seeds)))
        values = []
        for seed in seeds:
            of = figure if confirmation is None or seed.spawn_key[0] == 0 else confirmation
            value = of(candidate.ballot_count, candidate.keep_fraction, candidate.appearances)
            values.append(min(1.0, max(-1.0, value + noise(seed, spread))))
        return [{"rho_w": np.array(values)}]

    return evaluate, calls


def monotone_figure(n_b, alpha, m):
    # Grows with M on every line; lines differ in how fast (more ballots help, up to a point).
    speed = {1: 1.0, 2: 2.0, 3: 2.6, 4: 2.4}[n_b] * (1.0 + (alpha or 0.5) - 0.5)
    return 1.0 - 1.0 / (1.0 + speed * m / 10.0)


def order_of(plan: Candidate) -> tuple:
    return (plan.total_comparisons, plan.ballot_count, plan.keep_fraction or 0.0, plan.appearances)


def brute_force(item_count, grid, target, figure, *, spread=0.02, seed=0, repetitions=20, confidence=0.9):
    """Every plan of the grid, priced and warned by scoring.plan.ballot_plan (Eq. 3, §2.7), judged by its
    bound on every search repetition: the cheapest that reaches, by (N_comp, warned, n_b, α, M)."""
    seeds = search_seeds(seed, repetitions)
    best = None
    for n_b in grid.ballot_counts:
        for alpha in (None,) if n_b == 1 else grid.keep_fractions:
            for m in range(grid.appearance_step, grid.max_appearances + 1, grid.appearance_step):
                try:
                    plan = ballot_plan(
                        item_count=item_count, ballot_count=n_b, keep_fraction=alpha or 0.5, appearances=m
                    )
                except ValueError:
                    break
                if plan.total_comparisons > grid.max_total_comparisons:
                    break
                values = [min(1.0, max(-1.0, figure(n_b, alpha, m) + noise(s, spread))) for s in seeds]
                order = (plan.total_comparisons, bool(plan.warnings), n_b, alpha or 0.0, m)
                if target.lower_bound(values, confidence) >= target.threshold and (
                    best is None or order < best
                ):
                    best = order
    return None if best is None else (best[0], best[2], best[3], best[4])


# --- the bounds, by hand ---------------------------------------------------------------------------


def test_the_mean_bound_is_students_t_from_the_table():
    # x̄ = 0.8, s = 0.1, n = 3; t_{0.90, 2} = 1.886 (Student's table): 0.8 - 1.886·0.1/√3 = 0.69111.
    assert Target("rho", 0.5).lower_bound([0.7, 0.8, 0.9], 0.9) == pytest.approx(0.69111, abs=2e-4)
    # t_{0.95, 2} = 2.920: 0.8 - 2.920·0.1/√3 = 0.63142.
    assert Target("rho", 0.5).lower_bound([0.7, 0.8, 0.9], 0.95) == pytest.approx(0.63142, abs=2e-4)
    # A constant figure is its own bound; NaN and a single value give none.
    assert Target("rho", 0.5).lower_bound([0.6, 0.6, 0.6], 0.9) == 0.6
    assert math.isnan(Target("rho", 0.5).lower_bound([0.6, float("nan")], 0.9))
    assert math.isnan(Target("rho", 0.5).lower_bound([0.6], 0.9))


def test_the_quantile_bound_is_the_order_statistic_of_the_binomial_worked_by_hand():
    # n = 20, q = 0.2, c = 0.9: P(B ≥ 1) = 1 - 0.8^20 = 0.98847; P(B ≥ 2) = 0.98847 - 20·0.2·0.8^19 = 0.93082;
    # P(B ≥ 3) = 0.93082 - 190·0.2²·0.8^18 = 0.79392 < 0.9. So j = 2: the second smallest value.
    assert order_statistic_rank(20, 0.2, 0.9) == 2
    values = np.arange(20) / 20.0  # 0, 0.05, … 0.95
    assert Target("tau_w", 0.0, quantile=0.2).lower_bound(values[::-1], 0.9) == 0.05
    # n = 22, q = 0.1: 1 - 0.9^22 = 0.9015 ≥ 0.9, the smallest value; n = 21: 1 - 0.9^21 = 0.8906, none.
    assert order_statistic_rank(22, 0.1, 0.9) == 1 and order_statistic_rank(21, 0.1, 0.9) == 0
    assert minimum_repetitions(0.1, 0.9) == 22
    assert minimum_repetitions(0.2, 0.9) == 11  # 0.8^11 = 0.0859 ≤ 0.1 < 0.8^10 = 0.1074
    assert minimum_repetitions(0.05, 0.975) == 72  # 0.95^72 = 0.0249 ≤ 0.025 < 0.95^71 = 0.0262
    assert math.isnan(Target("tau_w", 0.0, quantile=0.1).lower_bound(np.ones(21), 0.9))


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=120),
    q=st.floats(min_value=0.01, max_value=0.99),
    c=st.floats(min_value=0.5, max_value=0.999),
)
def test_the_order_statistic_rank_is_the_largest_that_covers(n, q, c):
    def covered(j):  # P(Binomial(n, q) ≥ j), summed exactly
        return sum(math.comb(n, i) * q**i * (1 - q) ** (n - i) for i in range(j, n + 1))

    j = order_statistic_rank(n, q, c)
    assert j == 0 or covered(j) >= c - 1e-12
    assert j == n or covered(j + 1) < c + 1e-12


def test_the_quantile_bound_covers_its_confidence_on_a_discrete_figure():
    # A top-10 recall takes the values 0.6 … 1.0; its true 10th percentile is 0.7 (P(X ≤ 0.6) = 0.05,
    # P(X ≤ 0.7) = 0.25). The bound of 30 repetitions must lie at or below 0.7 in at least 90% of draws.
    rng = np.random.default_rng(5)
    draws = rng.choice([0.6, 0.7, 0.8, 0.9, 1.0], p=[0.05, 0.2, 0.35, 0.3, 0.1], size=(4000, 30))
    target = Target("recall", 0.7, k=10, quantile=0.1)
    bounds = np.array([target.lower_bound(row, 0.9) for row in draws])
    assert (bounds <= 0.7).mean() >= 0.9


def test_a_plan_is_dropped_only_when_its_remaining_repetitions_cannot_bring_the_bound_up():
    mean = Target("rho_w", 0.8)
    # 5 of 10 at 0.5: at best (2.5 + 5·1)/10 = 0.75 < 0.8. At 0.7: (3.5 + 5)/10 = 0.85, still possible.
    assert mean.cannot_reach([0.5] * 5, 10, 0.9)
    assert not mean.cannot_reach([0.7] * 5, 10, 0.9)
    quantile = Target("rho_w", 0.8, quantile=0.2)  # n = 20 at 90%: the 2nd smallest value (j = 2)
    assert not quantile.cannot_reach([0.7, 0.9, 0.9], 20, 0.9)
    assert quantile.cannot_reach([0.7, 0.79, 0.9], 20, 0.9)
    assert mean.cannot_reach([0.9, float("nan")], 10, 0.9)


# --- the grid ----------------------------------------------------------------------------------------


def test_it_prices_the_grid_by_eq_3():
    # 10 items; uniform: N_comp = 5·M; n_b = 2, α = 0.5: ballots of 10 and 5 items, ⌈10M/2⌉ + ⌈5M/2⌉.
    lines = grid_lines(10, PlanGrid(ballot_counts=(1, 2), keep_fractions=(0.5,), max_appearances=6))
    by_line = {(line.ballot_count, line.keep_fraction): line for line in lines}
    assert by_line[(1, None)].costs.tolist() == [10, 20, 30]
    assert by_line[(2, 0.5)].sizes == (10, 5)
    assert by_line[(2, 0.5)].costs.tolist() == [15, 30, 45]


def test_per_area_a_plan_costs_the_sum_of_the_areas_eq_3():
    # Areas of 10 and 7 items, n_b = 2, α = 0.5: 10 → 5 and 7 → 4 (3.5 rounds up); M = 2: 15 + 11.
    lines = grid_lines(
        {"a": 10, "b": 7}, PlanGrid(ballot_counts=(2,), keep_fractions=(0.5,), max_appearances=4)
    )
    [line] = lines
    assert line.costs.tolist() == [26, 52]
    expected = area_plans(
        area_item_counts={"a": 10, "b": 7}, ballot_count=2, keep_fraction=0.5, appearances=2
    )
    assert line.candidate(0).total_comparisons == expected.total.total_comparisons
    assert line.candidate(0).warnings == expected.total.warnings
    assert line.candidate(0).sizes == (17, 9)


def test_the_grid_leaves_out_plans_the_items_do_not_allow():
    # 10 items, n_b = 4, α = 0.3: 10 → 3 → 1, too few; n_b = 3, α = 0.4: 10 → 4 → 2 is allowed.
    lines = grid_lines(10, PlanGrid(ballot_counts=(3, 4), keep_fractions=(0.3, 0.4), max_appearances=4))
    assert sorted((line.ballot_count, line.keep_fraction) for line in lines) == [(3, 0.4)]
    assert list(itertools.chain.from_iterable(line.sizes for line in lines)) == [10, 4, 2]
    # Per area, every area must allow the line: an area of 5 items cannot run n_b = 3 at α = 0.4.
    assert grid_lines({"a": 10, "b": 5}, PlanGrid(ballot_counts=(3,), keep_fractions=(0.4,))) == []


# --- the search against answers by hand and by brute force -------------------------------------------

HAND_GRID = PlanGrid(ballot_counts=(1, 2), keep_fractions=(0.5,), max_appearances=8)  # 10 items


@pytest.mark.parametrize(
    ("reaching", "expected"),
    [
        # uniform reaches from M = 4 (20 comparisons), adaptive from M = 2 (15): adaptive, M = 2.
        ({(1, 4), (1, 6), (1, 8), (2, 2), (2, 4), (2, 6), (2, 8)}, (2, 0.5, 2, 15)),
        # adaptive only from M = 4 (30): uniform M = 4 (20) is cheaper.
        ({(1, 4), (1, 6), (1, 8), (2, 4), (2, 6), (2, 8)}, (1, None, 4, 20)),
        # uniform M = 6 and adaptive M = 4 both cost 30 (both warned): the tie goes to fewer ballots.
        ({(1, 6), (1, 8), (2, 4), (2, 6), (2, 8)}, (1, None, 6, 30)),
        # Not monotone in M: adaptive reaches at M = 2, misses at 4, reaches again at 6.
        ({(1, 8), (2, 2), (2, 6), (2, 8)}, (2, 0.5, 2, 15)),
    ],
)
def test_the_scan_finds_the_hand_worked_cheapest_plan(reaching, expected):
    evaluate, _ = stub(lambda n_b, alpha, m: 1.0 if (n_b, m) in reaching else 0.0)
    found = search_plan(item_counts=10, target=Target("rho_w", 0.5), evaluate=evaluate, grid=HAND_GRID)
    plan = found.plan
    assert (plan.ballot_count, plan.keep_fraction, plan.appearances, plan.total_comparisons) == expected
    assert found.complete and found.unsimulated_cheaper == 0


def test_bisection_misses_the_cheapest_plan_when_the_figure_is_not_monotone_and_says_so():
    # Uniform reaches only at M = 8 (40); adaptive at M = 2 (15), not at 4 (30), again from 6. Bisection
    # gallops to uniform M = 8 as its bound, tries adaptive M = 4 (the largest cheaper), sees it miss
    # and skips the line; the scan finds adaptive M = 2.
    reaching = {(1, 8), (2, 2), (2, 6), (2, 8)}
    evaluate, _ = stub(lambda n_b, alpha, m: 1.0 if (n_b, m) in reaching else 0.0)
    target = Target("rho_w", 0.5)
    bisected = search_plan(
        item_counts=10, target=target, evaluate=evaluate, grid=HAND_GRID, strategy="bisect"
    )
    scanned = search_plan(item_counts=10, target=target, evaluate=evaluate, grid=HAND_GRID)
    assert order_of(bisected.plan) == (40, 1, 0.0, 8)
    # The gallop simulated uniform M = 2, 6, 8 and the line adaptive M = 4: adaptive M = 2 (15) and
    # uniform M = 4 (20) are the cheaper plans it never simulated, and the answer counts them.
    assert bisected.unsimulated_cheaper == 2
    assert order_of(scanned.plan) == (15, 2, 0.5, 2)


@pytest.mark.parametrize("threshold", [0.3, 0.55, 0.8, 0.9, 0.97])
@pytest.mark.parametrize("quantile", [None, 0.2])
def test_the_scan_and_bisection_equal_brute_force_when_the_figure_grows_with_m(threshold, quantile):
    target = Target("rho_w", threshold, quantile=quantile)
    evaluate, _ = stub(monotone_figure, confirmation=lambda *plan: 1.0)
    expected = brute_force(50, SMALL_GRID, target, monotone_figure)
    for strategy in ("scan", "bisect"):
        found = search_plan(
            item_counts=50, target=target, evaluate=evaluate, grid=SMALL_GRID, strategy=strategy
        )
        assert (order_of(found.plan) if found.plan else None) == expected
    # Bisection simulates far fewer plans than the grid holds.
    assert found.simulations < found.candidate_count / 5


def test_the_scan_equals_brute_force_on_a_figure_with_no_shape():
    # Reaches on a scattered set of plans, noisily: bisection's premise fails, the scan holds.
    def figure(n_b, alpha, m):
        return 0.9 if (m * 7 + n_b * 3 + int(10 * (alpha or 0))) % 11 == 0 and m > 10 else 0.3

    evaluate, _ = stub(figure, confirmation=lambda *plan: 1.0, spread=0.3)
    target = Target("rho_w", 0.5)
    expected = brute_force(50, SMALL_GRID, target, figure, spread=0.3)
    found = search_plan(
        item_counts=50, target=target, evaluate=evaluate, grid=SMALL_GRID, max_simulations=2_000
    )
    assert order_of(found.plan) == expected and found.complete


def test_no_plan_simulated_twice_and_hopeless_plans_stop_early():
    evaluate, calls = stub(monotone_figure)
    found = search_plan(item_counts=50, target=Target("rho_w", 0.9), evaluate=evaluate, grid=SMALL_GRID)
    searched = [candidate for candidate, seeds in calls if seeds[0].spawn_key[0] == 0]
    starts = [(candidate, seeds[0].spawn_key) for candidate, seeds in calls if seeds[0].spawn_key[0] == 0]
    assert len(starts) == len(set(starts))  # each repetition of each plan simulated once
    assert len(set(searched)) == found.simulations
    # A plan at 0.5 of a 0.9 target is dropped after its first 5 repetitions: (2.5 + 15)/20 < 0.9.
    assert any(entry["repetitions"] == 5 and not entry["reached"] for entry in found.trail)
    assert found.repetitions_simulated < found.simulations * 20


# --- the confirmation on fresh seeds -----------------------------------------------------------------


def test_the_plan_is_confirmed_on_fresh_seeds_that_took_no_part_in_the_search():
    evaluate, calls = stub(monotone_figure)
    found = search_plan(item_counts=50, target=Target("rho_w", 0.9), evaluate=evaluate, grid=SMALL_GRID)
    keys = {tuple(seed.spawn_key) for _, seeds in calls for seed in seeds}
    fresh = {tuple(seed.spawn_key) for seed in confirmation_seeds(0, 0, 100)}
    assert found.confirmation.passed and found.confirmation.repetitions == 100
    assert fresh <= keys and not fresh & {tuple(seed.spawn_key) for seed in search_seeds(0, 20)}
    # Four confirmations at most, each at 1 - 0.1/4: the answer's 90% holds for all of them together.
    assert found.confirmation_level == pytest.approx(0.975)
    assert found.confirmation.bounds[0] == pytest.approx(
        Target("rho_w", 0.9).lower_bound(found.confirmation.figures[0]["rho_w"], 0.975)
    )


def test_a_plan_that_fails_its_confirmation_is_not_returned_and_the_search_goes_on():
    # Adaptive n_b = 2, α = 0.5, M = 2 (15 comparisons) looks fine on the search's seeds and falls apart
    # on fresh ones; everything from 30 comparisons up reaches everywhere.
    def search_figure(n_b, alpha, m):
        return 1.0 if (n_b, m) == (2, 2) or m * (10 if n_b == 1 else 15) / 2 >= 30 else 0.0

    def fresh_figure(n_b, alpha, m):
        return 0.0 if (n_b, m) == (2, 2) else search_figure(n_b, alpha, m)

    evaluate, calls = stub(search_figure, confirmation=fresh_figure)
    found = search_plan(item_counts=10, target=Target("rho_w", 0.5), evaluate=evaluate, grid=HAND_GRID)
    [failed] = found.failed
    assert order_of(failed.candidate) == (15, 2, 0.5, 2) and not failed.passed
    assert failed.statistics[0] == pytest.approx(0.0, abs=0.02)
    # Next in order: uniform M = 4 (20) misses; uniform M = 6 (30) reaches on the 20 + 100 repetitions.
    assert order_of(found.plan) == (30, 1, 0.0, 6)
    assert found.confirmation.attempt == 1 and found.search_repetitions == 120
    assert found.judgement.sample == 120


def test_when_every_confirmation_fails_nothing_is_returned():
    # Fresh repetitions give 0.45 where the search's gave 1: the first plan fails; on the 20 + 100
    # repetitions the next still reaches (mean 0.54, bound 0.516) and fails too; two confirmations allowed.
    evaluate, _ = stub(lambda *plan: 1.0, confirmation=lambda *plan: 0.45)
    found = search_plan(
        item_counts=10, target=Target("rho_w", 0.5), evaluate=evaluate, grid=HAND_GRID, max_confirmations=2
    )
    assert found.plan is None and len(found.failed) == found.confirmations == 2
    assert [order_of(c.candidate) for c in found.failed] == [(10, 1, 0.0, 2), (15, 2, 0.5, 2)]


def test_a_failed_confirmation_can_show_that_no_plan_reaches():
    # Fresh repetitions give 0 for every plan: after the first failure no plan reaches on the search's
    # repetitions with those 100 added, and the search ends there without a plan.
    evaluate, _ = stub(lambda *plan: 1.0, confirmation=lambda *plan: 0.0)
    found = search_plan(item_counts=10, target=Target("rho_w", 0.5), evaluate=evaluate, grid=HAND_GRID)
    assert found.plan is None and found.confirmations == 1 and found.complete


def test_a_quantile_target_needs_enough_repetitions_for_its_bound():
    evaluate, _ = stub(monotone_figure)
    target = Target("rho_w", 0.9, quantile=0.1)
    with pytest.raises(ValueError, match=r"repetitions must be at least 22 for a 0\.9 lower bound"):
        search_plan(item_counts=50, target=target, evaluate=evaluate, grid=SMALL_GRID, repetitions=20)
    with pytest.raises(ValueError, match=r"confirmation repetitions must be at least 36 for a 0\.975"):
        search_plan(
            item_counts=50,
            target=target,
            evaluate=evaluate,
            grid=SMALL_GRID,
            repetitions=22,
            confirmation_repetitions=30,
        )


# --- §2.7 warnings -----------------------------------------------------------------------------------

TIE_GRID = PlanGrid(ballot_counts=(2, 8), keep_fractions=(0.4, 0.7), max_appearances=40)


def test_at_equal_cost_a_plan_without_warnings_comes_first():
    # 200 items: n_b = 2, α = 0.4, M = 36 and n_b = 8, α = 0.7, M = 16 both cost 5,040 comparisons; the
    # first has two §2.7 warnings, the second none. Reaching from 5,040 up, the second is the answer.
    warned = ballot_plan(item_count=200, ballot_count=2, keep_fraction=0.4, appearances=36)
    clean = ballot_plan(item_count=200, ballot_count=8, keep_fraction=0.7, appearances=16)
    assert warned.total_comparisons == clean.total_comparisons == 5_040
    assert len(warned.warnings) == 2 and clean.warnings == ()

    def figure(n_b, alpha, m):
        sizes = ballot_plan(item_count=200, ballot_count=n_b, keep_fraction=alpha, appearances=m)
        return 1.0 if sizes.total_comparisons >= 5_040 else 0.0

    evaluate, _ = stub(figure)
    found = search_plan(item_counts=200, target=Target("rho_w", 0.5), evaluate=evaluate, grid=TIE_GRID)
    assert (found.plan.ballot_count, found.plan.keep_fraction, found.plan.appearances) == (8, 0.7, 16)
    assert found.plan.warnings == () and found.alternative is None


def test_a_warned_answer_comes_with_the_cheapest_plan_without_warnings_beside_it():
    # Everything reaches: the cheapest plan (n_b = 2, α = 0.4, M = 2) is warned; the cheapest without
    # warnings, found by brute force over the grid with scoring.plan, stands beside it, confirmed.
    evaluate, _ = stub(lambda *plan: 1.0)
    found = search_plan(item_counts=200, target=Target("rho_w", 0.5), evaluate=evaluate, grid=TIE_GRID)
    clean = []
    for n_b, alpha, m in itertools.product((2, 8), (0.4, 0.7), range(2, 41, 2)):
        try:
            plan = ballot_plan(item_count=200, ballot_count=n_b, keep_fraction=alpha, appearances=m)
        except ValueError:  # 200 items at α = 0.4 run out of items before ballot 8
            continue
        if not plan.warnings:
            clean.append(plan)
    cheapest = min(clean, key=lambda p: (p.total_comparisons, p.ballot_count, p.keep_fraction, p.appearances))
    assert found.plan.warnings and (found.plan.ballot_count, found.plan.appearances) == (2, 2)
    assert (
        found.alternative.ballot_count,
        found.alternative.keep_fraction,
        found.alternative.appearances,
    ) == (
        cheapest.ballot_count,
        cheapest.keep_fraction,
        cheapest.appearances,
    )
    assert found.alternative_confirmation.passed and found.warning_free_in_grid


def test_when_no_plan_of_the_grid_is_free_of_warnings_the_answer_says_so():
    # 10 items: the last ballot is too small for n_b·M ≥ 100 without repeated pairs.
    evaluate, _ = stub(lambda *plan: 1.0)
    found = search_plan(item_counts=10, target=Target("rho_w", 0.5), evaluate=evaluate, grid=HAND_GRID)
    assert found.plan.warnings and found.alternative is None and found.warning_free_in_grid is False


# --- per area ----------------------------------------------------------------------------------------


def test_per_area_the_plan_reaches_in_every_area_and_the_worst_area_decides():
    # Area "big" (10 items) reaches from M = 4, area "small" (7 items) only from M = 8: the common plan is
    # the cheapest whose M is at least 8 on its line, by the areas' summed N_comp.
    def evaluate(candidate, seeds):
        return [
            {"rho_w": np.full(len(seeds), 1.0 if candidate.appearances >= need else 0.0)} for need in (4, 8)
        ]

    grid = PlanGrid(ballot_counts=(1, 2), keep_fractions=(0.5,), max_appearances=10)
    found = search_plan(
        item_counts={"big": 10, "small": 7}, target=Target("rho_w", 0.5), evaluate=evaluate, grid=grid
    )
    # Uniform M = 8: 40 + 28 = 68; adaptive M = 8: (40 + 20) + (28 + 16) = 104. Uniform wins.
    assert (found.plan.ballot_count, found.plan.appearances, found.plan.total_comparisons) == (1, 8, 68)
    assert [name for name, _, _ in found.plan.parts] == ["big", "small"]
    assert found.confirmation.bounds == [1.0, 1.0]


# --- bounds on the work ------------------------------------------------------------------------------


def test_the_bound_on_simulations_stops_the_search_and_says_so():
    evaluate, _ = stub(monotone_figure)
    found = search_plan(
        item_counts=50, target=Target("rho_w", 0.9), evaluate=evaluate, grid=SMALL_GRID, max_simulations=12
    )
    assert found.simulations == 12 and not found.complete
    # The bisection found a plan before the bound; it is returned, confirmed, with the count of cheaper
    # plans the scan did not reach.
    assert found.plan is not None and found.confirmation.passed and found.unsimulated_cheaper > 0


def test_progress_counts_the_plans_simulated():
    evaluate, _ = stub(monotone_figure)
    seen = []
    found = search_plan(
        item_counts=50,
        target=Target("rho_w", 0.9),
        evaluate=evaluate,
        grid=SMALL_GRID,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert seen == [(done, 300) for done in range(1, found.simulations + 1)] + [(found.simulations,) * 2]


# --- the real simulator ------------------------------------------------------------------------------


def tiny_evaluate(item_count=24):
    z = underlying_similarity("exponential", item_count)
    model = SimulationConfig(item_count=item_count, ballot_count=1, appearances=2, voter_count=20)
    return lambda c, seeds: [
        simulated_figures(c.sizes, c.appearances, similarity=z, voter_model=model, seeds=seeds, top_ks=(5,))
    ]


def test_the_real_simulator_agrees_with_brute_force_on_a_tiny_study():
    grid = PlanGrid(ballot_counts=(1, 2, 3), keep_fractions=(0.5,), max_appearances=16)
    evaluate = tiny_evaluate()
    target = Target("rho", 0.8)
    seeds = search_seeds(0, 20)
    bounds = {}
    for line in grid_lines(24, grid):
        for index in range(line.costs.size):
            candidate = line.candidate(index)
            bounds[candidate] = target.lower_bound(evaluate(candidate, seeds)[0]["rho"], 0.9)
    expected = min((c.order for c, bound in bounds.items() if bound >= 0.8), default=None)
    found = search_plan(item_counts=24, target=target, evaluate=evaluate, grid=grid)
    assert found.plan.order == expected and not found.failed
    # Its confirmation ran on 100 fresh repetitions, and the plan reaches there too.
    fresh = evaluate(found.plan, confirmation_seeds(0, 0, 100))[0]["rho"]
    np.testing.assert_array_equal(found.confirmation.figures[0]["rho"], fresh)
    assert target.lower_bound(fresh, 0.975) >= 0.8


def test_every_plan_is_simulated_on_the_same_voters_reproducibly():
    evaluate = tiny_evaluate()
    line = grid_lines(24, PlanGrid(ballot_counts=(2,), keep_fractions=(0.5,), max_appearances=8))[0]
    candidate = line.candidate(3)
    seeds = search_seeds(7, 6)
    [first], [second] = evaluate(candidate, seeds), evaluate(candidate, seeds)
    assert set(first) == {"rho_w", "tau_w", "rho", "tau", "recall@5", "precision@5"}
    for key in first:
        np.testing.assert_array_equal(first[key], second[key])
    # In chunks, the same values: repetition r depends on its own seed only.
    [head], [tail] = evaluate(candidate, seeds[:4]), evaluate(candidate, seeds[4:])
    np.testing.assert_array_equal(np.concatenate([head["rho"], tail["rho"]]), first["rho"])
    # recall@K and P@K coincide: both the reference and the retrieved set hold K items.
    np.testing.assert_array_equal(first["recall@5"], first["precision@5"])


# --- top-K overlap, targets, summaries ---------------------------------------------------------------


def test_top_k_overlap_splits_ties_at_the_cutoff():
    # K = 2; the best score is item 0's; items 1, 2, 3 tie for the one place left; items 0 and 1 are
    # the true top 2. Item 0 is in; item 1 gets a third of the place: 1 + 1/3.
    overlap = top_k_overlap(np.array([[5.0, 4.0, 4.0, 4.0, 1.0]]), np.array([1, 1, 0, 0, 0], bool), 2)
    assert overlap.tolist() == pytest.approx([4 / 3])


def test_top_k_overlap_without_ties_is_recall_and_precision_at_k():
    rng = np.random.default_rng(3)
    scores = rng.random((5, 40))
    truth_top = np.zeros(40, bool)
    truth_top[rng.choice(40, 10, replace=False)] = True
    shares = top_k_overlap(scores, truth_top, 10) / 10
    for row, share in zip(scores, shares, strict=True):
        ranking = np.argsort(-row)
        assert share == pytest.approx(recall_at_k(ranking, truth_top, 10))
        assert share == pytest.approx(precision_at_k(ranking, truth_top, 10))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("rho_w>=0.95", Target("rho_w", 0.95)),
        ("  τ_w ≥ 0.8 ", Target("tau_w", 0.8)),
        ("recall@50>=0.9", Target("recall", 0.9, k=50)),
        ("P@10>=.7", Target("precision", 0.7, k=10)),
        ("RHO >= -0.2", Target("rho", -0.2)),
    ],
)
def test_it_reads_targets(text, expected):
    assert parse_target(text) == expected


@pytest.mark.parametrize(
    ("text", "quantile", "message"),
    [
        ("rho_w = 0.9", None, "cannot read the target"),
        ("ndcg>=0.9", None, "must be one of"),
        ("recall>=0.9", None, "needs a cutoff K"),
        ("rho@5>=0.9", None, "takes no cutoff"),
        ("recall@5>=1.5", None, "must lie in [0, 1]"),
        ("rho_w>=0.9", 1.0, "quantile must lie strictly between 0 and 1"),
    ],
)
def test_it_refuses_bad_targets_saying_why(text, quantile, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_target(text, quantile=quantile)


def test_the_target_statistic_is_the_mean_or_numpys_linear_quantile():
    values = [0.0, 1.0, 2.0, 3.0, 4.0]
    assert Target("rho", 0.5).statistic(values) == 2.0
    # Linear interpolation: position 0.1·(5-1) = 0.4 between 0 and 1.
    assert Target("rho", 0.5, quantile=0.1).statistic(values) == pytest.approx(0.4)
    assert math.isnan(Target("rho", 0.0).statistic([0.5, float("nan")]))


def test_a_cutoff_as_large_as_the_smallest_area_is_refused():
    evaluate, _ = stub(monotone_figure)
    with pytest.raises(ValueError, match="smaller than the number of items"):
        search_plan(item_counts=10, target=Target("recall", 0.9, k=10), evaluate=evaluate)
    with pytest.raises(ValueError, match=r"\(8 in the smallest area\)"):
        search_plan(item_counts={"a": 20, "b": 8}, target=Target("recall", 0.9, k=8), evaluate=evaluate)


def test_figure_summary_hand_worked():
    summary = figure_summary([0.8, 0.9, 1.0], quantile=0.5)
    assert summary["mean"] == pytest.approx(0.9)
    assert summary["sd"] == pytest.approx(0.1)  # sqrt(((0.1)² + 0 + (0.1)²) / 2)
    assert summary["p10"] == pytest.approx(0.82) and summary["p90"] == pytest.approx(0.98)
    assert summary["quantile"] == pytest.approx(0.9)
