"""The pure quality-control math (scoring/quality.py): hand-worked cases, scipy, and invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binomtest

from scoring import quality
from scoring.quality import binomial_two_sided_p, holm_adjusted, judged, self_agreement


def test_nine_left_choices_of_ten_have_two_sided_p_22_over_1024():
    # P(X ≥ 9) = (C(10,9) + C(10,10)) / 2^10 = 11/1024, doubled for the two sides.
    assert binomial_two_sided_p(9, 10) == pytest.approx(22 / 1024, abs=1e-15)
    assert binomial_two_sided_p(1, 10) == pytest.approx(22 / 1024, abs=1e-15)


def test_all_ten_on_one_side_have_p_2_over_1024_and_an_even_split_p_1():
    assert binomial_two_sided_p([10, 0, 5], [10, 10, 10]).tolist() == pytest.approx([2 / 1024, 2 / 1024, 1.0])


def test_no_trial_has_no_p_value():
    assert np.isnan(binomial_two_sided_p(0, 0))


@pytest.mark.parametrize(("successes", "trials"), [(3, 17), (0, 1), (12, 20), (40, 47), (7, 7), (250, 480)])
def test_the_p_value_is_scipys_binomtest(successes, trials):
    assert binomial_two_sided_p(successes, trials) == pytest.approx(
        binomtest(successes, trials).pvalue, rel=1e-12
    )


@given(st.integers(0, 300).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_the_p_value_lies_in_0_1_and_is_symmetric_in_left_and_right(case):
    successes, trials = case
    p_value = float(binomial_two_sided_p(successes, trials))
    if trials == 0:
        assert np.isnan(p_value)
        return
    assert 0.0 < p_value <= 1.0
    assert p_value == pytest.approx(float(binomial_two_sided_p(trials - successes, trials)), rel=1e-12)


@given(st.integers(1, 200).flatmap(lambda n: st.tuples(st.integers(0, n - 1), st.just(n))))
def test_a_count_further_from_half_never_has_a_larger_p_value(case):
    successes, trials = case
    nearer, further = sorted([successes, successes + 1], key=lambda k: abs(k - trials / 2))
    if abs(nearer - trials / 2) == abs(further - trials / 2):
        return
    assert binomial_two_sided_p(further, trials) <= binomial_two_sided_p(nearer, trials)


def test_holm_adjusts_by_hand():
    # Sorted: 0.01 × 4 = 0.04; 0.03 × 3 = 0.09; 0.04 × 2 = 0.08 → 0.09 (monotone); 0.5 × 1 = 0.5.
    adjusted = holm_adjusted([0.01, 0.04, np.nan, 0.03, 0.5])
    assert adjusted[[0, 1, 3, 4]].tolist() == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert np.isnan(adjusted[2])


def test_holm_caps_at_1_and_keeps_an_empty_family_empty():
    assert holm_adjusted([0.6, 0.7]).tolist() == [1.0, 1.0]
    assert holm_adjusted([np.nan]).tolist() == pytest.approx([np.nan], nan_ok=True)


@given(st.lists(st.floats(0, 1), min_size=1, max_size=40))
def test_holm_is_at_least_the_p_value_at_most_bonferroni_and_keeps_the_order(p_values):
    p_values = np.asarray(p_values)
    adjusted = holm_adjusted(p_values)
    assert np.all(adjusted >= p_values - 1e-15)
    assert np.all(adjusted <= np.minimum(1.0, p_values.size * p_values) + 1e-15)
    order = np.argsort(p_values, kind="stable")
    assert np.all(np.diff(adjusted[order]) >= -1e-15)


def test_judged_needs_ten_observations():
    assert judged([0, 9, 10, 11]).tolist() == [False, False, True, True]


def test_self_agreement_by_hand():
    # Annotator 0: pair 1 twice, low and low (1 agreeing of 1 pair of judgements); pair 2 three times,
    # low, high, low (C(2,2) = 1 agreeing of C(3,2) = 3); pair 3 once (not repeated) → 2 of 4.
    # Annotator 1: pair 1 once → no repeated pair. Annotator 2: pair 3 twice, a tie and high → 0 of 1.
    group = [0, 0, 0, 0, 0, 0, 1, 2, 2]
    pair = [1, 1, 2, 2, 2, 3, 1, 3, 3]
    outcome = [0, 0, 0, 1, 0, 1, 0, 2, 1]
    agreeing, compared, repeated = self_agreement(group, pair, outcome, 3)
    assert agreeing.tolist() == [2, 0, 0]
    assert compared.tolist() == [4, 0, 1]
    assert repeated.tolist() == [2, 0, 1]


def test_self_agreement_without_votes_is_all_zero():
    assert [part.tolist() for part in self_agreement([], [], [], 2)] == [[0, 0], [0, 0], [0, 0]]


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5), st.integers(0, 2)), min_size=0, max_size=60))
def test_self_agreement_counts_match_a_recount(votes):
    groups = 4
    group, pair, outcome = (
        (np.asarray(column, dtype=np.int64) for column in zip(*votes, strict=True)) if votes else ([], [], [])
    )
    agreeing, compared, repeated = self_agreement(group, pair, outcome, groups)
    for g in range(groups):
        seen: dict[int, list[int]] = {}
        for vote_group, vote_pair, vote_outcome in votes:
            if vote_group == g:
                seen.setdefault(vote_pair, []).append(vote_outcome)
        judgements = [outcomes for outcomes in seen.values() if len(outcomes) >= 2]
        expected_compared = sum(len(o) * (len(o) - 1) // 2 for o in judgements)
        expected_agreeing = sum(sum(a == b for i, a in enumerate(o) for b in o[i + 1 :]) for o in judgements)
        assert (agreeing[g], compared[g], repeated[g]) == (
            expected_agreeing,
            expected_compared,
            len(judgements),
        )
        assert 0 <= agreeing[g] <= compared[g]


# --- checks ----------------------------------------------------------------------------------------


def test_check_accuracy_counts_answers_and_failures_per_annotator():
    # Annotator 0: right, wrong, right (2 of 3); annotator 1: none; annotator 2: wrong, wrong (0 of 2).
    group = [0, 2, 0, 0, 2]
    correct = [True, False, False, True, False]

    answered, failed, accuracy = quality.check_accuracy(group, correct, 3)

    assert answered.tolist() == [3, 0, 2]
    assert failed.tolist() == [1, 0, 2]
    assert accuracy[0] == pytest.approx(2 / 3) and np.isnan(accuracy[1]) and accuracy[2] == 0.0


def test_check_accuracy_of_nobody():
    answered, failed, accuracy = quality.check_accuracy([], [], 2)

    assert answered.tolist() == [0, 0] and failed.tolist() == [0, 0] and np.isnan(accuracy).all()
