"""Plans from a target precision (scoring.plan_search): known answers by hand and by brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from metrics.ir import precision_at_k, recall_at_k
from scoring.plan import ballot_plan
from scoring.plan_search import (
    Candidate,
    PlanGrid,
    Target,
    figure_summary,
    grid_lines,
    parse_target,
    search_plan,
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


def brute_force(item_count: int, grid: PlanGrid, reaches) -> tuple | None:
    """Every plan of the grid, priced with scoring.plan.ballot_plan (Eq. 3); the cheapest that reaches."""
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
                order = (plan.total_comparisons, n_b, alpha or 0.0, m)
                if reaches(n_b, alpha, m) and (best is None or order < best):
                    best = order
    return best


def stub(figure):
    """An evaluate() whose values over three 'repetitions' are figure(n_b, α, M) - 0.02, + 0, + 0.02."""
    calls = []

    def evaluate(candidate: Candidate) -> dict:
        calls.append(candidate)
        value = figure(candidate.ballot_count, candidate.keep_fraction, candidate.appearances)
        return {"rho_w": np.array([value - 0.02, value, value + 0.02])}

    return evaluate, calls


def monotone_figure(n_b, alpha, m):
    # Grows with M on every line; lines differ in how fast (more ballots help, up to a point).
    speed = {1: 1.0, 2: 2.0, 3: 2.6, 4: 2.4}[n_b] * (1.0 + (alpha or 0.5) - 0.5)
    return 1.0 - 1.0 / (1.0 + speed * m / 10.0)


def order_of(plan: Candidate) -> tuple:
    return (plan.total_comparisons, plan.ballot_count, plan.keep_fraction or 0.0, plan.appearances)


# --- hand-worked -----------------------------------------------------------------------------------


def test_it_prices_the_grid_by_eq_3():
    # 10 items; uniform: N_comp = 5·M; n_b = 2, α = 0.5: ballots of 10 and 5 items, ⌈10M/2⌉ + ⌈5M/2⌉.
    lines = grid_lines(10, PlanGrid(ballot_counts=(1, 2), keep_fractions=(0.5,), max_appearances=6))
    by_line = {(line.ballot_count, line.keep_fraction): line for line in lines}
    assert by_line[(1, None)].costs.tolist() == [10, 20, 30]
    assert by_line[(2, 0.5)].sizes == (10, 5)
    assert by_line[(2, 0.5)].costs.tolist() == [15, 30, 45]


@pytest.mark.parametrize(
    ("reaching", "expected"),
    [
        # uniform reaches from M = 4 (20 comparisons), adaptive from M = 2 (15): adaptive, M = 2.
        ({(1, 4), (1, 6), (2, 2), (2, 4), (2, 6)}, (2, 0.5, 2, 15)),
        # adaptive only from M = 4 (30): uniform M = 4 (20) is cheaper.
        ({(1, 4), (1, 6), (2, 4), (2, 6)}, (1, None, 4, 20)),
        # uniform M = 6 and adaptive M = 4 both cost 30: the tie goes to fewer ballots.
        ({(1, 6), (2, 4), (2, 6)}, (1, None, 6, 30)),
        # only adaptive M = 6 (45).
        ({(2, 6)}, (2, 0.5, 6, 45)),
    ],
)
def test_it_finds_the_hand_worked_cheapest_plan(reaching, expected):
    evaluate, _ = stub(lambda n_b, alpha, m: 1.0 if (n_b, m) in reaching else 0.0)
    grid = PlanGrid(ballot_counts=(1, 2), keep_fractions=(0.5,), max_appearances=6)
    for strategy in ("bisect", "scan"):
        found = search_plan(
            item_count=10, target=Target("rho_w", 0.5), evaluate=evaluate, grid=grid, strategy=strategy
        )
        plan = found.plan
        assert (plan.ballot_count, plan.keep_fraction, plan.appearances, plan.total_comparisons) == expected
        assert found.complete


def test_no_plan_reaches_an_impossible_target():
    evaluate, calls = stub(lambda n_b, alpha, m: 0.5)
    found = search_plan(item_count=50, target=Target("rho_w", 0.9), evaluate=evaluate, grid=SMALL_GRID)
    assert found.plan is None and found.figures == {} and found.complete
    # One line gallops up its M; every other line is not simulated at all (no best to beat, the
    # gallop of each line stops at its last M): each line costs at most ⌈log2(30)⌉ + 2 simulations.
    assert len(calls) <= found.line_count * 7


# --- brute force -------------------------------------------------------------------------------------


@pytest.mark.parametrize("threshold", [0.3, 0.55, 0.7, 0.8, 0.9, 0.95, 0.97])
@pytest.mark.parametrize("quantile", [None, 0.1])
def test_bisection_equals_brute_force_when_the_figure_grows_with_m(threshold, quantile):
    target = Target("rho_w", threshold, quantile=quantile)
    evaluate, calls = stub(monotone_figure)

    def reaches(n_b, alpha, m):
        value = monotone_figure(n_b, alpha, m)
        return target.reached([value - 0.02, value, value + 0.02])

    expected = brute_force(50, SMALL_GRID, reaches)
    found = search_plan(item_count=50, target=target, evaluate=evaluate, grid=SMALL_GRID)
    assert (order_of(found.plan) if found.plan else None) == expected
    assert len(calls) == len(set(calls)) == found.simulations  # no plan simulated twice
    assert found.simulations < found.candidate_count / 5  # and far fewer than the whole grid


def test_the_scan_equals_brute_force_without_monotonicity():
    # Reaches on a scattered set of plans: bisection's assumption fails, the cheapest-first scan holds.
    def figure(n_b, alpha, m):
        return 1.0 if (m * 7 + n_b * 3 + int(10 * (alpha or 0))) % 11 == 0 and m > 10 else 0.0

    evaluate, _ = stub(figure)
    expected = brute_force(50, SMALL_GRID, lambda n_b, alpha, m: figure(n_b, alpha, m) >= 0.5)
    found = search_plan(
        item_count=50,
        target=Target("rho_w", 0.5),
        evaluate=evaluate,
        grid=SMALL_GRID,
        strategy="scan",
        max_simulations=2_000,
    )
    assert order_of(found.plan) == expected


def test_the_bound_on_simulations_stops_the_search_and_says_so():
    evaluate, calls = stub(monotone_figure)
    found = search_plan(
        item_count=50, target=Target("rho_w", 0.97), evaluate=evaluate, grid=SMALL_GRID, max_simulations=4
    )
    assert len(calls) == 4 and found.simulations == 4
    assert not found.complete


def test_progress_counts_the_lines():
    evaluate, _ = stub(monotone_figure)
    seen = []
    found = search_plan(
        item_count=50,
        target=Target("rho_w", 0.9),
        evaluate=evaluate,
        grid=SMALL_GRID,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert seen == [(done, found.line_count) for done in range(1, found.line_count + 1)]


# --- the real simulator ------------------------------------------------------------------------------


def tiny_evaluate(item_count=24, repetitions=6):
    z = underlying_similarity("exponential", item_count)
    model = SimulationConfig(item_count=item_count, ballot_count=1, appearances=2, voter_count=20)
    seeds = np.random.SeedSequence(7).spawn(repetitions)
    return lambda c: simulated_figures(c, similarity=z, voter_model=model, seeds=seeds, top_ks=(5,))


def test_the_real_simulator_agrees_with_brute_force_on_a_tiny_study():
    grid = PlanGrid(ballot_counts=(1, 2, 3), keep_fractions=(0.5,), max_appearances=16)
    evaluate = tiny_evaluate()
    target = Target("rho", 0.8)
    values = {}
    for line in grid_lines(24, grid):
        for index in range(line.costs.size):
            candidate = line.candidate(index)
            values[candidate] = target.statistic(evaluate(candidate)["rho"])
    expected = min((order_of(c) for c, value in values.items() if value >= 0.8), default=None)
    assert expected is not None
    assert (
        order_of(
            search_plan(item_count=24, target=target, evaluate=evaluate, grid=grid, strategy="scan").plan
        )
        == expected
    )
    # Bisection's premise holds here (the figure grows with M on each line), so it finds the same plan.
    for line in grid_lines(24, grid):
        reached = [values[line.candidate(i)] >= 0.8 for i in range(line.costs.size)]
        assert reached == sorted(reached)
    assert order_of(search_plan(item_count=24, target=target, evaluate=evaluate, grid=grid).plan) == expected


def test_every_plan_is_simulated_on_the_same_voters_reproducibly():
    evaluate = tiny_evaluate()
    candidate = grid_lines(24, PlanGrid(ballot_counts=(2,), keep_fractions=(0.5,), max_appearances=8))[
        0
    ].candidate(3)
    first, second = evaluate(candidate), evaluate(candidate)
    assert set(first) == {"rho_w", "tau_w", "rho", "tau", "recall@5", "precision@5"}
    for key in first:
        np.testing.assert_array_equal(first[key], second[key])
    # recall@K and P@K coincide: both the reference and the retrieved set hold K items.
    np.testing.assert_array_equal(first["recall@5"], first["precision@5"])
    assert first["rho"].shape == (6,)


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
    assert not Target("rho", 0.5, quantile=0.1).reached(values)
    assert not Target("rho", 0.0).reached([0.5, float("nan")])


def test_a_cutoff_as_large_as_the_items_is_refused():
    evaluate, _ = stub(monotone_figure)
    with pytest.raises(ValueError, match="smaller than the number of items"):
        search_plan(item_count=10, target=Target("recall", 0.9, k=10), evaluate=evaluate)


def test_figure_summary_hand_worked():
    summary = figure_summary([0.8, 0.9, 1.0], quantile=0.5)
    assert summary["mean"] == pytest.approx(0.9)
    assert summary["sd"] == pytest.approx(0.1)  # sqrt(((0.1)² + 0 + (0.1)²) / 2)
    assert summary["p10"] == pytest.approx(0.82) and summary["p90"] == pytest.approx(0.98)
    assert summary["quantile"] == pytest.approx(0.9)


def test_the_grid_leaves_out_plans_the_items_do_not_allow():
    # 10 items, n_b = 4, α = 0.3: 10 → 3 → 1, too few; n_b = 3, α = 0.4: 10 → 4 → 2 is allowed.
    lines = grid_lines(10, PlanGrid(ballot_counts=(3, 4), keep_fractions=(0.3, 0.4), max_appearances=4))
    assert sorted((line.ballot_count, line.keep_fraction) for line in lines) == [(3, 0.4)]
    assert list(itertools.chain.from_iterable(line.sizes for line in lines)) == [10, 4, 2]
