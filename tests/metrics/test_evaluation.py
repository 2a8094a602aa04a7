"""Evaluating a model: coefficients, graded relevance, chance, intervals, leaderboard, annotators."""

import numpy as np
import pytest
from scipy import stats

from metrics.correlation import first_rank_weight
from metrics.evaluation import (
    annotator_agreement,
    evaluate,
    graded_relevance,
    indistinguishable_groups,
    leaderboard,
)
from metrics.metrology import chance_level


def test_grades_are_equal_width_bands_of_the_top_k_scores():
    human = np.array([0.95, 0.1, 0.8, 0.5, 0.7, 0.2, 0.65])
    # Top 5: 0.95, 0.8, 0.7, 0.65, 0.5 → band [0.5, 0.95]: S ≥ 0.8, A ≥ 0.65, B below.
    assert graded_relevance(human, 5).tolist() == [3, 0, 3, 1, 2, 0, 2]
    assert graded_relevance(np.array([0.3, 0.3, 0.1]), 2).tolist() == [3, 3, 0]
    with pytest.raises(ValueError, match="K must lie between 1 and the 3 evaluated items"):
        graded_relevance(np.array([0.3, 0.3, 0.1]), 4)


def test_a_perfect_model_scores_one_everywhere_and_far_above_chance():
    rng = np.random.default_rng(0)
    human = rng.random(200)
    replicates = human[None, :] + rng.normal(0, 0.01, (300, 200))
    chance = chance_level(200, rng, draws=500)
    result = evaluate(human, human, top_k=20, human_replicates=replicates, chance=chance)
    for name in ("rho_w", "tau_w", "rho", "tau"):
        assert result[name]["value"] == pytest.approx(1.0)
        low, high = result[name]["interval"]
        assert low < 1.0 and high == 1.0  # value ± 1.96 SD, clipped at 1
    assert result["rho_w"]["p_value"] == pytest.approx(1 / 501)
    assert result["rho_w"]["chance_mean"] < 0  # unrelated rankings correlate negatively on average
    assert result["retrieval"]["average_precision"] == 1.0 and result["retrieval"]["ndcg_at_k"] == 1.0
    assert result["first_rank_weight"] == pytest.approx(first_rank_weight(2.0))
    assert result["coverage"] == 1.0 and result["top_k"] == 20


def test_only_covered_items_are_evaluated():
    human = np.linspace(1, 0, 10)
    model = human.copy()
    model[[0, 5]] = np.nan
    result = evaluate(model, human, top_k=3)
    assert (result["covered"], result["coverage"]) == (8, 0.8)
    assert result["tau"]["value"] == pytest.approx(1.0) and "interval" not in result["tau"]
    with pytest.raises(ValueError, match="only 1 item"):
        evaluate(np.r_[1.0, np.full(9, np.nan)], human, top_k=3)


def test_the_interval_is_centred_on_the_value_even_when_replicates_are_noisier():
    rng = np.random.default_rng(1)
    truth = rng.random(300)
    human = truth + rng.normal(0, 0.05, 300)
    noisier = human[None, :] + rng.normal(0, 0.05, (200, 300))  # bootstrap replicates add noise
    result = evaluate(truth, human, top_k=30, human_replicates=noisier)
    low, high = result["rho"]["interval"]
    assert low < result["rho"]["value"] < high
    assert high - result["rho"]["value"] == pytest.approx(result["rho"]["value"] - low)
    assert result["rho"]["standard_error"] == pytest.approx(np.std(result["replicates"]["rho"], ddof=1))


def entry(name, value, replicates):
    return {"name": name, "value": value, "replicates": replicates}


def test_leaderboard_ranks_by_significantly_better_models():
    rng = np.random.default_rng(2)
    base = rng.normal(0, 0.05, 400)
    entries = [
        entry("weak", 0.30, 0.30 + base + rng.normal(0, 0.01, 400)),
        entry("strong", 0.70, 0.70 + base + rng.normal(0, 0.01, 400)),
        entry("strong twin", 0.701, 0.701 + base + rng.normal(0, 0.01, 400)),
    ]
    rows = {row["name"]: row for row in leaderboard(entries, "tau_w")}
    assert rows["strong"]["rank"] == 1 and rows["strong twin"]["rank"] == 1
    assert rows["strong"]["rank_range"] == [1, 2] and rows["weak"]["rank_range"] == [3, 3]
    assert rows["strong"]["indistinguishable_from"] == ["strong twin"]
    assert rows["weak"]["indistinguishable_from"] == []
    assert [row["name"] for row in leaderboard(entries, "tau_w")] == ["strong twin", "strong", "weak"]
    with pytest.raises(ValueError, match="metric must be one of"):
        leaderboard(entries, "accuracy")


def test_annotator_agreement_on_a_hand_worked_example():
    # Items 0..2; decisive votes (chosen, rejected, annotator).
    chosen, rejected, annotator = [0, 0, 1, 2], [1, 2, 2, 0], [0, 0, 1, 1]
    models = {"a": np.array([3.0, 2.0, 1.0]), "b": np.array([1.0, 1.0, 2.0])}
    view = annotator_agreement(models, chosen, rejected, annotator, 2)
    # Model a agrees with 0>1, 0>2, 1>2 and not with 2>0: annotator 0 → 1.0, annotator 1 → 0.5.
    assert view["models"]["a"]["per_annotator"].tolist() == [1.0, 0.5]
    # Model b: 0>1 is a tie (½), 0>2 no, 1>2 no, 2>0 yes: annotator 0 → 0.25, annotator 1 → 0.5.
    assert view["models"]["b"]["per_annotator"].tolist() == [0.25, 0.5]
    assert view["models"]["a"]["mean"] == 0.75 and view["models"]["a"]["min"] == 0.5
    test = view["paired_tests"][0]
    expected = stats.ttest_rel([1.0, 0.5], [0.25, 0.5])
    assert (test["first"], test["second"], test["annotators"]) == ("a", "b", 2)
    assert test["t_statistic"] == pytest.approx(expected.statistic) and test["p_value"] == pytest.approx(
        expected.pvalue
    )


def test_plain_rho_and_tau_get_a_p_value_counted_by_hand_on_three_items():
    # Three items have 6 rankings; against the identity, Spearman's ρ takes 1, ½, ½, -½, -½, -1 and
    # Kendall's τ 1, ⅓, ⅓, -⅓, -⅓, -1 (Eq. 7). A model that ranks like the people has ρ = τ = 1, and only
    # the draws that are the identity itself score as high: p = (1 + their number) / (1 + 60).
    draws = 60
    chance = chance_level(3, np.random.default_rng(7), draws=draws)
    permuted = np.argsort(np.random.default_rng(7).random((draws, 3)), axis=1)  # chance_level's own draws
    identity = int((permuted == [0, 1, 2]).all(axis=1).sum())
    assert 0 < identity < draws
    # The draws come from the compiled kernels at a very large n0: equal to the exact values to 10^-11.
    assert set(np.round(chance["rho"]["draws"], 9)) <= {-1.0, -0.5, 0.5, 1.0}
    assert set(np.round(chance["tau"]["draws"], 9)) <= {-1.0, round(-1 / 3, 9), round(1 / 3, 9), 1.0}

    result = evaluate([3.0, 2.0, 1.0], [0.9, 0.5, 0.1], top_k=1, chance=chance)

    assert (result["rho"]["value"], result["tau"]["value"]) == (1.0, 1.0)
    assert result["rho"]["p_value"] == result["tau"]["p_value"] == (1 + identity) / (1 + draws)
    assert result["rho"]["chance_mean"] == pytest.approx(float(np.mean(chance["rho"]["draws"])))
    assert result["tau"]["chance_sd"] == pytest.approx(float(np.std(chance["tau"]["draws"], ddof=1)))


def test_a_reversed_model_has_every_random_ranking_at_least_as_good():
    chance = chance_level(3, np.random.default_rng(7), draws=60)

    result = evaluate([1.0, 2.0, 3.0], [0.9, 0.5, 0.1], top_k=1, chance=chance)

    assert (result["rho"]["value"], result["tau"]["value"]) == pytest.approx((-1.0, -1.0))
    assert result["rho"]["p_value"] == result["tau"]["p_value"] == 1.0  # (1 + 60) / (1 + 60)


def test_the_weighted_chance_level_is_unchanged_by_the_plain_one_beside_it():
    from metrics.correlation import weighted_kendall_rows, weighted_spearman_rows

    chance = chance_level(40, np.random.default_rng(3), weight_offset=2.0, draws=200)
    permuted = np.argsort(np.random.default_rng(3).random((200, 40)), axis=1).astype(float) + 1.0
    reference = np.arange(1.0, 41.0)
    assert (
        chance["rho_w"]["draws"].tolist()
        == np.sort(weighted_spearman_rows(reference, permuted, 2.0)).tolist()
    )
    assert (
        chance["tau_w"]["draws"].tolist() == np.sort(weighted_kendall_rows(reference, permuted, 2.0)).tolist()
    )


def test_indistinguishable_models_are_grouped_down_the_leaderboard():
    rows = [
        {"name": "a", "indistinguishable_from": ["b"]},
        {"name": "b", "indistinguishable_from": ["a", "c"]},
        {"name": "c", "indistinguishable_from": ["b", "d"]},  # c cannot join a's group: a is better
        {"name": "d", "indistinguishable_from": ["c"]},
        {"name": "e", "indistinguishable_from": []},
    ]

    assert indistinguishable_groups(rows) == [0, 0, 1, 1, 2]
    assert indistinguishable_groups([]) == []
