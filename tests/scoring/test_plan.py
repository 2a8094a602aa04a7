"""Ballot plan: Eq. 2, 3, 4, 10 and the §2.7 heuristics."""

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.plan import ballot_plan, ballot_sizes, comparisons_for, plan_for_budget, round_half_up


def paper_plan(**overrides):
    parameters = dict(item_count=990, ballot_count=7, keep_fraction=0.5, appearances=20)
    parameters.update(overrides)
    return ballot_plan(**parameters)


def test_the_papers_plan_follows_eq_2_and_3():
    plan = paper_plan(seconds_per_comparison=5.0)
    # N(k) = round(α·N(k-1)): 247.5 → 248, 15.5 → 16.
    assert plan.sizes == (990, 495, 248, 124, 62, 31, 16)
    assert plan.survivors == (495, 248, 124, 62, 31, 16)
    assert plan.comparisons == (9900, 4950, 2480, 1240, 620, 310, 160)
    assert plan.total_comparisons == 19_660  # Eq. 3; the paper's text says 39,000
    assert plan.top_appearances == 140  # M_top = n_b·M (Eq. 4)
    assert plan.uniform_appearances == pytest.approx(39_320 / 990)  # M_unif = 2·N_comp/N_items ≈ 40
    assert plan.cost_seconds == 98_300.0  # Eq. 10 with 5 s per comparison


def test_eq_4_holds_approximately_for_the_papers_plan():
    plan = paper_plan()
    alpha = plan.keep_fraction
    assert plan.top_appearances == pytest.approx(
        (1 - alpha) * plan.ballot_count * plan.uniform_appearances, rel=0.01
    )


def test_eq_3_closed_form_approximates_the_exact_sum():
    plan = paper_plan()
    alpha, n_b, m = 0.5, 7, 20
    approximation = (1 - alpha**n_b) / (2 * (1 - alpha)) * m * 990
    assert plan.total_comparisons == pytest.approx(approximation, rel=0.01)


def test_rounding_is_half_up():
    assert round_half_up(Fraction(45, 2)) == 23 and round(22.5) == 22
    assert ballot_sizes(45, 3, 0.5) == (45, 23, 12)


def test_eq_2_rounds_the_exact_product_of_alpha_as_entered():
    # 0.7·45 = 31.5 exactly, so 32; in floats 0.7 * 45 = 31.499999999999996, which once gave 31.
    assert 0.7 * 45 < 31.5
    assert ballot_sizes(45, 2, 0.7) == (45, 32)
    assert ballot_sizes(10, 2, 0.35) == (10, 4)  # 3.5 exactly; 0.35 * 10 = 3.4999999999999996


@settings(max_examples=400, deadline=None)
@given(
    item_count=st.integers(min_value=2, max_value=2_000),
    ballot_count=st.integers(min_value=1, max_value=10),
    hundredths=st.integers(min_value=1, max_value=99),
)
def test_ballot_sizes_are_eq_2_in_fractions(item_count, ballot_count, hundredths):
    alpha = Fraction(hundredths, 100)
    sizes = [item_count]
    for _ in range(1, ballot_count):
        sizes.append(math.floor(alpha * sizes[-1] + Fraction(1, 2)))
    if min(sizes) < 2:
        with pytest.raises(ValueError, match="would hold"):
            ballot_sizes(item_count, ballot_count, hundredths / 100)
    else:
        assert ballot_sizes(item_count, ballot_count, hundredths / 100) == tuple(sizes)


def test_an_odd_ballot_with_odd_m_gets_one_extra_appearance():
    assert comparisons_for(45, 3) == 68  # ⌈135/2⌉: one item appears 4 times
    assert comparisons_for(44, 3) == 66


def test_the_papers_plan_only_warns_about_repeated_pairs_in_the_last_ballot():
    assert paper_plan().warnings == (
        "ballot 7 holds 16 items and M = 20 > 15: some pairs of items are compared more than once in that ballot, each time by a different annotator.",
    )


def test_warnings_carry_the_numbers_of_section_2_7():
    plan = ballot_plan(item_count=45, ballot_count=3, keep_fraction=0.5, appearances=3)
    assert plan.warnings == (
        "keep_fraction α = 0.5 > 0.1^(1/(n_b-1)) = 0.316: 12 of 45 items (27%) reach the last ballot; "
        "§2.7 suggests at most 10%.",
        "M_top = n_b·M = 3·3 = 9 < 100: the top items are compared fewer than 100 times, too few for "
        "precise top ranks (§2.7).",
        "appearances M = 3 is odd: in ballots 1 and 2 one item appears M+1 = 4 times (footnote 6 "
        "recommends an even M).",
    )


def test_it_warns_about_too_many_ballots_and_a_too_small_fraction():
    # (2/100000)^(1/11) = 0.374; with α = 0.37 the last of 12 ballots still holds 2 items.
    plan = ballot_plan(item_count=100_000, ballot_count=12, keep_fraction=0.37, appearances=10)
    assert plan.sizes[-1] == 2
    assert plan.warnings[:2] == (
        "ballot_count n_b = 12 > 10: every ballot pauses the collection while it closes; §2.7 suggests n_b ≲ 10.",
        "keep_fraction α = 0.37 < (2/N_items)^(1/(n_b-1)) = 0.374: the last ballot holds only 2 items "
        "(§2.7 lower bound).",
    )


def test_a_single_ballot_is_a_uniform_plan_and_says_so():
    plan = ballot_plan(item_count=990, ballot_count=1, keep_fraction=0.5, appearances=40)
    assert plan.sizes == (990,) and plan.total_comparisons == 19_800
    assert plan.warnings[0].startswith("ballot_count n_b = 1")


def test_the_budget_gives_the_largest_even_m_that_fits():
    assert (
        plan_for_budget(
            item_count=990, ballot_count=7, keep_fraction=0.5, comparison_budget=19_660
        ).appearances
        == 20
    )
    assert (
        plan_for_budget(
            item_count=990, ballot_count=7, keep_fraction=0.5, comparison_budget=19_659
        ).appearances
        == 18
    )
    assert (
        plan_for_budget(
            item_count=990, ballot_count=7, keep_fraction=0.5, comparison_budget=39_000
        ).appearances
        == 38
    )


def test_a_budget_too_small_for_m_2_is_refused():
    with pytest.raises(ValueError, match="budget of 1965 comparisons is too small: .* needs 1966"):
        plan_for_budget(item_count=990, ballot_count=7, keep_fraction=0.5, comparison_budget=1965)


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        (dict(item_count=1), "at least two items"),
        (dict(keep_fraction=1.0), "strictly between 0 and 1"),
        (dict(ballot_count=0), "positive whole number"),
        (dict(appearances=0), "positive whole number"),
        (dict(item_count=10, ballot_count=5), "ballot 5 would hold 1 item: with 10 items"),
    ],
)
def test_impossible_plans_are_refused_with_the_reason(parameters, message):
    with pytest.raises(ValueError, match=message):
        paper_plan(**parameters)


def test_as_dict_carries_every_derived_figure():
    data = paper_plan().as_dict()
    assert (
        data["total_comparisons"] == 19_660 and data["survivors"][0] == 495 and data["top_appearances"] == 140
    )


def test_the_reason_of_an_impossible_plan_counts_in_words():
    # 2 items, α = 0.5: ballot 2 would hold one. Before: "1 item(s)" and "at most 1 ballots keep".
    with pytest.raises(ValueError) as raised:
        ballot_sizes(item_count=2, ballot_count=2, keep_fraction=0.5)

    assert str(raised.value) == (
        "ballot 2 would hold 1 item: with 2 items and keep_fraction α = 0.5, at most 1 ballot keeps two or "
        "more items (§2.7 asks α ≳ (2/N_items)^(1/(n_b-1)) = 1.000)"
    )
    with pytest.raises(ValueError, match=r"ballot 3 would hold 1 item: .* at most 2 ballots keep two"):
        ballot_sizes(item_count=3, ballot_count=3, keep_fraction=0.5)


def test_an_odd_m_names_its_one_ballot_without_brackets():
    plan = ballot_plan(item_count=46, ballot_count=2, keep_fraction=0.5, appearances=3)

    assert plan.warnings[-1] == (
        "appearances M = 3 is odd: in ballot 2 one item appears M+1 = 4 times (footnote 6 recommends an even M)."
    )


def test_a_budget_too_small_lists_the_ballot_sizes_as_a_sentence():
    with pytest.raises(ValueError) as raised:
        plan_for_budget(item_count=45, ballot_count=3, keep_fraction=0.5, comparison_budget=10)

    assert str(raised.value) == (
        "a budget of 10 comparisons is too small: the smallest even M (2) already needs 80 comparisons "
        "for ballots of 45, 23 and 12 items"
    )
