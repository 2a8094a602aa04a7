"""The pure math of semantic areas as strata (Lombardo et al. §2.1-2.2): the per-area schedule, plan,
survivors, rescaling, ranks within an area and the coefficients restricted to an area."""

import numpy as np
import pytest
from scipy import stats

from collection.schedule import stratified_schedule
from metrics.correlation import ranks_from_scores, weighted_kendall, weighted_spearman
from metrics.evaluation import coefficients_by_stratum
from metrics.metrology import BallotVotes, bootstrap_scores
from scoring.borda import (
    ranks_within,
    score_ballot,
    score_ballot_by_stratum,
    select_survivors_by_stratum,
)
from scoring.plan import area_plans, ballot_plan, cross_area_share


@pytest.mark.parametrize("sizes, appearances", [((15, 10), 4), ((5, 7, 2), 3), ((3, 4), 5)])
def test_a_stratified_schedule_pairs_items_of_one_stratum_and_shows_each_m_times(sizes, appearances):
    strata = np.repeat(np.arange(len(sizes)), sizes)
    rng = np.random.default_rng(7)
    order = rng.permutation(strata.size)  # the ballot lists its items in any order
    strata = strata[order]
    pairs = stratified_schedule(strata, appearances, rng)
    assert np.all(strata[pairs[:, 0]] == strata[pairs[:, 1]])  # no comparison crosses areas
    assert np.all(pairs[:, 0] != pairs[:, 1])
    shown = np.bincount(pairs.ravel(), minlength=strata.size)
    for label, size in enumerate(sizes):
        counts = np.sort(shown[strata == label])
        # Every item M times; one item M+1 times in an area whose M·N_a is odd (footnote 6).
        extra = (size * appearances) % 2
        assert counts.tolist() == [appearances] * (size - extra) + [appearances + 1] * extra
    # ⌈M·N_a/2⌉ comparisons per area (Eq. 3 per area).
    assert pairs.shape[0] == sum((appearances * size + 1) // 2 for size in sizes)


def test_a_stratified_schedule_refuses_a_stratum_of_one_item():
    with pytest.raises(ValueError, match="at least two items"):
        stratified_schedule(np.array([0, 0, 1]), 2, np.random.default_rng(0))


def test_the_per_area_plan_applies_eq_2_and_3_to_each_area_and_sums_them():
    plans = area_plans(
        area_item_counts={"animals": 15, "tools": 10}, ballot_count=3, keep_fraction=0.5, appearances=4
    )
    # animals: 15 → round(7.5) = 8 → 4; tools: 10 → 5 → round(2.5) = 3 (halves up).
    assert plans.by_area["animals"].sizes == (15, 8, 4)
    assert plans.by_area["tools"].sizes == (10, 5, 3)
    # Comparisons ⌈4·N/2⌉: animals 30, 16, 8; tools 20, 10, 6.
    assert plans.total.sizes == (25, 13, 7)
    assert plans.total.comparisons == (50, 26, 14)
    assert plans.total.total_comparisons == 90
    # A joint plan of the same 25 items would keep 13 then 7 too, but its survivors could all be animals.
    assert ballot_plan(item_count=25, ballot_count=3, keep_fraction=0.5, appearances=4).comparisons == (
        50,
        26,
        14,
    )


def test_the_per_area_warnings_name_their_areas():
    plans = area_plans(
        area_item_counts={"animals": 15, "tools": 10}, ballot_count=3, keep_fraction=0.5, appearances=5
    )
    warnings = plans.total.warnings
    # M_top = 15 < 100 in both areas: once, for both.
    assert [w for w in warnings if "M_top" in w] == [
        "areas animals and tools: M_top = n_b·M = 3·5 = 15 < 100: the top items are compared fewer than "
        "100 times, too few for precise top ranks (§2.7)."
    ]
    # M = 5 odd: ballot 1 of animals (15 items) and ballots 2, 3 of tools (5, 3 items) have an odd N.
    assert any(w.startswith("area animals: appearances M = 5 is odd: in ballot 1 ") for w in warnings)
    assert any(w.startswith("area tools: appearances M = 5 is odd: in ballots 2 and 3 ") for w in warnings)


def test_the_per_area_plan_says_which_area_is_too_small():
    with pytest.raises(ValueError) as error:
        area_plans(
            area_item_counts={"animals": 15, "tools": 3}, ballot_count=3, keep_fraction=0.5, appearances=4
        )
    message = str(error.value)
    assert "area 'tools' (3 items): ballot 3 would hold 1 item" in message
    assert "animals" not in message


def test_a_budget_gives_the_largest_even_m_over_every_areas_ballots():
    # Σ_a Σ_k N_a(k) = (15 + 8 + 4) + (10 + 5 + 3) = 45; M = 2·⌊500 / 45⌋ = 22.
    plans = area_plans(
        area_item_counts={"animals": 15, "tools": 10},
        ballot_count=3,
        keep_fraction=0.5,
        comparison_budget=500,
    )
    assert plans.total.appearances == 22
    assert plans.total.total_comparisons == 11 * 45 <= 500


def test_the_expected_share_of_cross_area_comparisons():
    # 3 and 2 items: 10 pairs, of which 3 + 1 within an area: 60% cross.
    assert cross_area_share([3, 2]) == pytest.approx(0.6)
    assert cross_area_share([15]) == 0.0
    # Two areas of 15 items: 1 - 2·15·14 / (30·29) = 1 - 420/870.
    assert cross_area_share([15, 15]) == pytest.approx(1 - 420 / 870)


def test_the_survivors_are_the_top_alpha_of_each_area_hand_worked():
    # Area 0: items 0-4 (N = 5, keeps round(2.5) = 3); area 1: items 5-8 (N = 4, keeps 2).
    strata = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1])
    score = np.array([0.9, 0.1, 0.5, 0.5, 0.3, 0.2, 0.8, 0.15, 0.7])
    in_ballot = np.ones(9, dtype=bool)
    survivors = select_survivors_by_stratum(score, in_ballot, strata, {0: 3, 1: 2})
    # Area 0: 0.9 (item 0), then 0.5 and 0.5 (items 2, 3: the tie goes to the lower index).
    # Area 1: 0.8 (item 6), 0.7 (item 8). A joint top 5 would be 0, 6, 8, 2, 3: the same here, but
    # with area 1 at 0.95, 0.9, 0.85, 0.8 the joint top 5 would take only one item of area 0.
    assert sorted(survivors.tolist()) == [0, 2, 3, 6, 8]
    strong = np.array([0.9, 0.1, 0.5, 0.5, 0.3, 0.95, 0.9, 0.85, 0.8])
    assert sorted(select_survivors_by_stratum(strong, in_ballot, strata, {0: 3, 1: 2}).tolist()) == [
        0,
        2,
        3,
        5,
        6,
    ]


def test_each_area_is_its_own_chain_of_eq_6_hand_worked():
    # Two areas of two items each, ballot 2. Area 0: x = (0.75, 0.25), ȳ(1) = (0.8, 0.4).
    # b = Σ(1-x)(1-ȳ) / Σ(1-x)² = (0.25·0.2 + 0.75·0.6) / (0.0625 + 0.5625) = 0.5 / 0.625 = 0.8.
    # Area 1: x = (0.5, 0.5), ȳ(1) = (0.6, 0.6): b = (0.5·0.4·2) / (0.25·2) = 0.8 too; make it differ:
    # ȳ(1) = (0.7, 0.3): b = (0.5·0.3 + 0.5·0.7) / 0.5 = 1.0.
    strata = np.array([0, 0, 1, 1])
    wins, ties, appearances = np.array([3, 1, 2, 2]), np.zeros(4), np.array([4, 4, 4, 4])
    previous = np.array([0.8, 0.4, 0.7, 0.3])
    scores, slopes = score_ballot_by_stratum(
        ballot=2,
        wins=wins,
        ties=ties,
        appearances=appearances,
        strata=strata,
        previous_score=previous,
        previous_measured=np.ones(4, dtype=np.int64),
    )
    assert slopes == {0: pytest.approx(0.8), 1: pytest.approx(1.0)}
    # y = 1 - b + b·x: area 0: 0.2 + 0.8·0.75 = 0.8, 0.2 + 0.8·0.25 = 0.4; area 1: 0.5, 0.5.
    np.testing.assert_allclose(scores.rescaled_score, [0.8, 0.4, 0.5, 0.5])
    # ȳ(2) = (ȳ(1) + y(2)) / 2.
    np.testing.assert_allclose(scores.score, [0.8, 0.4, 0.6, 0.4])
    # The joint chain fits one b over all four items: (0.05 + 0.45 + 0.15 + 0.35) / (0.625 + 0.5) = 0.888…
    joint = score_ballot(
        ballot=2,
        wins=wins,
        ties=ties,
        appearances=appearances,
        previous_score=previous,
        previous_measured=np.ones(4, dtype=np.int64),
    )
    assert joint.rescale_slope == pytest.approx(1.0 / 1.125)


def test_ranks_within_an_area_restrict_the_ranking_to_it():
    strata = np.array([1, 0, 1, 0, 1, 0])
    rank = np.array([1, 2, 3, 4, 6, 0])  # item 5 unranked
    assert ranks_within(strata, rank).tolist() == [1, 1, 2, 2, 3, 0]


def test_the_coefficients_per_area_are_scipys_on_the_areas_items():
    rng = np.random.default_rng(3)
    strata = np.repeat([0, 1], [12, 9])
    human = rng.random(21)
    model = human + rng.normal(0, 0.3, 21)
    model[4] = np.nan  # not covered
    by_area = coefficients_by_stratum(model, human, strata, weight_offset=2.0)
    for label in (0, 1):
        covered = (strata == label) & np.isfinite(model)
        entry = by_area[label]
        assert (entry["items"], entry["covered"]) == ((12, 9)[label], int(covered.sum()))
        assert entry["rho"]["value"] == pytest.approx(
            stats.spearmanr(model[covered], human[covered])[0], abs=1e-12
        )
        assert entry["tau"]["value"] == pytest.approx(
            stats.kendalltau(model[covered], human[covered])[0], abs=1e-12
        )
        model_ranks, human_ranks = ranks_from_scores(model[covered]), ranks_from_scores(human[covered])
        assert entry["rho_w"]["value"] == pytest.approx(
            weighted_spearman(model_ranks, human_ranks, 2.0), abs=1e-12
        )
        assert entry["tau_w"]["value"] == pytest.approx(
            weighted_kendall(model_ranks, human_ranks, 2.0), abs=1e-12
        )


def test_the_coefficients_per_area_get_intervals_from_the_shared_replicates():
    rng = np.random.default_rng(5)
    strata = np.repeat([0, 1], [10, 10])
    human = rng.random(20)
    replicates = human[None, :] + rng.normal(0, 0.05, (200, 20))
    by_area = coefficients_by_stratum(human, human, strata, human_replicates=replicates)
    for label in (0, 1):
        entry = by_area[label]["rho"]
        assert entry["value"] == pytest.approx(1.0)
        low, high = entry["interval"]
        assert low < 1.0 == high and entry["standard_error"] > 0


def test_an_area_with_one_covered_item_has_no_values_and_says_why():
    strata = np.array([0, 0, 0, 1])
    by_area = coefficients_by_stratum(np.array([1.0, 2, 3, 4]), np.array([3.0, 2, 1, 0]), strata)

    def undefined(symbol):
        return {"value": None, "undefined": f"{symbol} is undefined: only 1 item has both scores here; it needs two"}

    assert by_area[1] == {
        "items": 1,
        "covered": 1,
        "rho_w": undefined("ρ_w"),
        "tau_w": undefined("τ_w"),
        "rho": undefined("ρ"),
        "tau": undefined("τ"),
    }
    assert by_area[0]["rho"]["value"] == pytest.approx(-1.0)


def test_a_per_area_bootstrap_rescales_each_area_on_its_own():
    # Two ballots; area 0 = items 0-3, area 1 = items 4-7; every vote within an area.
    left1, right1 = np.array([0, 2, 0, 1, 4, 6, 4, 5]), np.array([1, 3, 2, 3, 5, 7, 6, 7])
    outcome1 = np.array([1.0, 1, 1, 0, 1, 0, 1, 1])
    left2, right2 = np.array([0, 2, 1, 4, 6, 5]), np.array([2, 1, 0, 6, 5, 4])
    outcome2 = np.array([1.0, 0, 0.5, 0, 1, 1])
    zeros = np.zeros(8, dtype=np.int64)
    ballots = [
        BallotVotes(items=np.arange(8), left=left1, right=right1, outcome=outcome1, annotator=zeros),
        BallotVotes(items=np.arange(6), left=left2, right=right2, outcome=outcome2, annotator=zeros[:6]),
    ]
    strata = np.repeat([0, 1], 4)
    replicates = 20
    joint = bootstrap_scores(ballots, 8, np.random.default_rng(1), replicates)
    single = bootstrap_scores(ballots, 8, np.random.default_rng(1), replicates, strata=np.zeros(8, int))
    np.testing.assert_array_equal(joint, single)  # one stratum is the joint chain
    per_area = bootstrap_scores(ballots, 8, np.random.default_rng(1), replicates, strata=strata)
    # The same draws (ballot after ballot, R × V_k), scored replicate by replicate by scoring.borda.
    rng = np.random.default_rng(1)
    counts = [
        np.apply_along_axis(
            np.bincount,
            1,
            rng.integers(0, b.vote_count, (replicates, b.vote_count), dtype=np.int32),
            minlength=b.vote_count,
        )
        for b in ballots
    ]
    for r in range(replicates):
        previous = None
        for number, (ballot, count) in enumerate(zip(ballots, counts, strict=True), start=1):
            weights = count[r].astype(float)
            points = np.bincount(ballot.left, weights * ballot.outcome, 8) + np.bincount(
                ballot.right, weights * (1 - ballot.outcome), 8
            )
            shown = np.bincount(ballot.left, weights, 8) + np.bincount(ballot.right, weights, 8)
            previous, _ = score_ballot_by_stratum(
                ballot=number,
                wins=points,
                ties=np.zeros(8),
                appearances=shown,
                strata=strata,
                previous_score=None if previous is None else previous.score,
                previous_measured=None if previous is None else previous.measured,
            )
        np.testing.assert_allclose(per_area[r], previous.score, atol=1e-12)
    assert not np.allclose(per_area, joint, equal_nan=True)
