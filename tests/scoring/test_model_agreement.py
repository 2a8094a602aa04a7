"""scoring.model_agreement: the score models' agreement, against metrics.correlation and scipy computed here."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from metrics.correlation import ranks_from_scores, weighted_kendall, weighted_spearman
from scoring.model_agreement import agreement_table, model_ranks, ranking_agreement, top_overlap


def test_model_ranks_order_by_score_and_break_ties_by_the_later_ballot_then_the_lower_index():
    score = np.array([0.2, 0.9, np.nan, 0.5, 0.5, 0.5])
    last_ballot = np.array([1, 3, 0, 1, 2, 2])
    # 0.9 first; of the three 0.5s the two of ballot 2 (indices 4, 5, lower index first), then index 3.
    assert model_ranks(score, last_ballot).tolist() == [5, 1, 0, 4, 2, 3]


def test_the_agreement_of_two_rankings_is_that_of_the_correlation_functions_and_of_scipy():
    rng = np.random.default_rng(7)
    first = rng.normal(size=60)
    second = first + rng.normal(scale=0.8, size=60)
    second[[3, 11]] = np.nan  # scored by one model only: left out of both rankings
    both = np.isfinite(second)
    agreement = ranking_agreement(first, second, weight_offset=2.0)
    ranks_a, ranks_b = ranks_from_scores(first[both]), ranks_from_scores(second[both])
    assert agreement["items"] == 58
    assert agreement["rho_w"] == pytest.approx(weighted_spearman(ranks_a, ranks_b, 2.0), abs=1e-12)
    assert agreement["tau_w"] == pytest.approx(weighted_kendall(ranks_a, ranks_b, 2.0), abs=1e-12)
    assert agreement["rho"] == pytest.approx(stats.spearmanr(first[both], second[both]).statistic, abs=1e-12)
    assert agreement["tau"] == pytest.approx(stats.kendalltau(first[both], second[both]).statistic, abs=1e-12)


def test_a_ranking_agrees_fully_with_itself_and_reversed_it_disagrees_fully():
    score = np.arange(20, dtype=float)
    same = ranking_agreement(score, score * 3 + 1)
    reverse = ranking_agreement(score, -score)
    assert (same["rho_w"], same["tau_w"], same["rho"], same["tau"]) == pytest.approx((1, 1, 1, 1))
    assert (reverse["rho_w"], reverse["tau_w"], reverse["rho"], reverse["tau"]) == pytest.approx(
        (-1, -1, -1, -1)
    )


def test_too_few_items_or_a_constant_ranking_give_no_coefficient():
    assert ranking_agreement([1.0, np.nan], [np.nan, 2.0])["rho_w"] is None
    assert ranking_agreement([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])["rho"] is None


def test_the_top_overlap_counts_the_shared_items_of_the_two_first_ks():
    reference = np.array([10.0, 9, 8, 7, 6, 5])
    model = np.array([10.0, 1, 8, 7, 9, 5])  # its top 3: items 0, 4, 2; the reference's: 0, 1, 2
    assert top_overlap(model, reference, 3) == {"k": 3, "shared": 2, "share": 2 / 3}
    assert top_overlap(model, reference, 50)["k"] == 6  # k is cut to the items both score


def test_the_table_holds_each_model_against_the_reference_and_every_pair_in_a_symmetric_matrix():
    rng = np.random.default_rng(3)
    reference = rng.normal(size=40)
    scores = {
        "a": reference + rng.normal(scale=0.3, size=40),
        "b": reference + rng.normal(scale=1.0, size=40),
        "c": -reference,
    }
    mask = np.arange(40) < 30  # ten items left out of every ranking
    table = agreement_table(scores, reference, weight_offset=2.0, top_k=10, mask=mask)
    assert table["items"] == 30
    assert [entry["model"] for entry in table["models"]] == ["a", "b", "c"]
    assert [(pair["a"], pair["b"]) for pair in table["pairs"]] == [("a", "b"), ("a", "c"), ("b", "c")]
    for entry in table["models"]:
        model = scores[entry["model"]][mask]
        expected = weighted_spearman(ranks_from_scores(model), ranks_from_scores(reference[mask]), 2.0)
        assert entry["reference"]["rho_w"] == pytest.approx(expected, abs=1e-12)
        assert entry["top"] == top_overlap(model, reference[mask], 10)
    matrix = np.array(table["matrix"]["rho_w"], dtype=float)
    assert np.allclose(matrix, matrix.T) and np.allclose(np.diag(matrix), 1.0)
    expected_ab = weighted_spearman(
        ranks_from_scores(scores["a"][mask]), ranks_from_scores(scores["b"][mask]), 2.0
    )
    assert matrix[0, 1] == pytest.approx(expected_ab, abs=1e-12)
    assert table["models"][2]["reference"]["rho"] == pytest.approx(-1.0)
