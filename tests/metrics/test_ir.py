"""Retrieval measures (seed 002) and Sakai's Q-measure and R-measure (seed 003, Eq. 15-24).

Exact numbers come from the seeds' worked examples, from small cases worked by hand in the comments,
from trec_eval (through pytrec_eval, the `test` extra) and from brute-force versions of the formulas
written below with loops and exact fractions.
"""

import json
import math
from fractions import Fraction

import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.ir import (
    DEFAULT_GAINS,
    STANDARD_RECALL_LEVELS,
    average_precision,
    bpref,
    dcg_at_k,
    f_measure,
    interpolated_precision_recall_curve,
    ndcg_at_k,
    precision_at_k,
    precision_recall_points,
    q_measure,
    r_measure,
    r_precision,
    ranking_from_scores,
    recall_at_k,
    reciprocal_rank,
    retrieval_report,
)

# --- seed 002's worked example ---------------------------------------------------------------------

SEED_RANKING_DOCS = [123, 84, 56, 6, 8, 9, 511, 129, 187, 25, 38, 48, 250, 113, 3]
SEED_RELEVANT_DOCS = {3, 5, 9, 25, 39, 44, 56, 71, 89, 123}
# Items: the 15 retrieved documents, then the 5 relevant documents the system did not retrieve.
SEED_DOCS = SEED_RANKING_DOCS + sorted(SEED_RELEVANT_DOCS - set(SEED_RANKING_DOCS))
SEED_RANKING = np.arange(len(SEED_RANKING_DOCS))


def seed_relevance(relevant_docs):
    return np.array([doc in relevant_docs for doc in SEED_DOCS])


def fractions_to_floats(values):
    return [float(Fraction(value)) for value in values]


def test_seed_002_first_example_precision_at_each_recall_level():
    # Relevant documents at ranks 1 (d123), 3 (d56), 6 (d9), 10 (d25), 15 (d3); five are not retrieved.
    # "d123 gives 100% precision at 10% recall, d56 gives 66.7% precision at 20% recall ..."
    recall, precision = precision_recall_points(SEED_RANKING, seed_relevance(SEED_RELEVANT_DOCS))
    assert recall.tolist() == fractions_to_floats(["1/10", "2/10", "3/10", "4/10", "5/10"])
    assert precision.tolist() == fractions_to_floats(["1/1", "2/3", "3/6", "4/10", "5/15"])
    assert (round(precision[0], 3), round(precision[1], 3)) == (1.0, 0.667)


def test_seed_002_first_example_eleven_point_curve():
    # max precision at recall ≥ r_j: 1 at 0-10%, 2/3 at 20%, 1/2 at 30%, 2/5 at 40%, 1/3 at 50%, none after.
    levels, precision = interpolated_precision_recall_curve(SEED_RANKING, seed_relevance(SEED_RELEVANT_DOCS))
    assert levels.tolist() == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    assert precision.tolist() == fractions_to_floats(["1", "1", "2/3", "1/2", "2/5", "1/3", 0, 0, 0, 0, 0])


def test_seed_002_second_example_eleven_point_curve_gives_the_seeds_numbers():
    # Rel = {d3, d56, d129} at ranks 3, 8, 15: 1/3 at recall 1/3, 2/8 at 2/3, 3/15 at 1 (the seed's
    # 33.3%, 25%, 20%), so 33.3% at 0-30%, 25% at 40-60% and 20% at 70-100%.
    relevant = seed_relevance({3, 56, 129})
    recall, precision = precision_recall_points(SEED_RANKING, relevant)
    assert recall.tolist() == fractions_to_floats(["1/3", "2/3", "1"])
    assert precision.tolist() == fractions_to_floats(["1/3", "1/4", "1/5"])
    levels, curve = interpolated_precision_recall_curve(SEED_RANKING, relevant)
    assert curve.tolist() == fractions_to_floats(["1/3"] * 4 + ["1/4"] * 3 + ["1/5"] * 4)
    assert [round(value, 3) for value in curve] == [0.333] * 4 + [0.25] * 3 + [0.2] * 4


def test_seed_002_first_example_single_number_measures():
    relevant = seed_relevance(SEED_RELEVANT_DOCS)
    # AP = (1/1 + 2/3 + 3/6 + 4/10 + 5/15 + 0·5) / 10 = 2.9 / 10: unretrieved relevant documents add 0.
    assert average_precision(SEED_RANKING, relevant) == pytest.approx(0.29, abs=1e-15)
    # R = 10; the first 10 ranks hold d123, d56, d9, d25.
    assert r_precision(SEED_RANKING, relevant) == 0.4
    # Non-relevant above each retrieved relevant document: 0, 1, 3, 6, 10 (capped at R = 10):
    # (1 + 0.9 + 0.7 + 0.4 + 0) / 10.
    assert bpref(SEED_RANKING, relevant) == pytest.approx(0.3, abs=1e-15)
    assert reciprocal_rank(SEED_RANKING, relevant) == 1.0
    assert precision_at_k(SEED_RANKING, relevant, 5) == 2 / 5
    assert recall_at_k(SEED_RANKING, relevant, 15) == 5 / 10


# --- a small case worked by hand -------------------------------------------------------------------

# Six items; items 0 (S, grade 3), 4 (A, grade 2) and 2 (B, grade 1) are relevant, R = 3.
HAND_GRADES = np.array([3, 0, 1, 0, 2, 0])
# The system ranks 1, 0, 3, 4, 5, 2: grades along the ranking 0, 3, 0, 2, 0, 1 (relevant at ranks 2, 4, 6).
HAND_RANKING = np.array([1, 0, 3, 4, 5, 2])


def test_hand_worked_precision_recall_and_f():
    assert [precision_at_k(HAND_RANKING, HAND_GRADES, k) for k in (1, 2, 3, 4, 6)] == [
        0,
        1 / 2,
        1 / 3,
        2 / 4,
        3 / 6,
    ]
    assert [recall_at_k(HAND_RANKING, HAND_GRADES, k) for k in (1, 2, 4, 6)] == [0, 1 / 3, 2 / 3, 1]
    # At k = 4: P = 1/2, R = 2/3. F1 = 2·(1/3)/(1/2 + 2/3) = 4/7; F2 = 5·(1/3)/(4·1/2 + 2/3) = 5/8.
    assert f_measure(1 / 2, 2 / 3) == pytest.approx(4 / 7, abs=1e-15)
    assert f_measure(1 / 2, 2 / 3, beta=2) == pytest.approx(5 / 8, abs=1e-15)
    # β → 0 weighs precision only; precision = recall gives that common value for every β.
    assert f_measure(1 / 2, 2 / 3, beta=1e-9) == pytest.approx(1 / 2, abs=1e-12)
    assert f_measure(0.3, 0.3, beta=5) == pytest.approx(0.3, abs=1e-15)
    assert f_measure(0.0, 0.0) == 0.0


def test_a_cutoff_beyond_the_ranking_counts_missing_positions_as_non_relevant():
    # Ranking of 2 of the 6 items: [0 (S), 1]; P@4 = 1/4 (trec_eval's P_k divides by k), R@4 = 1/3.
    assert precision_at_k([0, 1], HAND_GRADES, 4) == 1 / 4
    assert recall_at_k([0, 1], HAND_GRADES, 4) == 1 / 3
    # R-precision looks at ranks 1-3 of which only rank 1 exists and holds a relevant item.
    assert r_precision([0, 1], HAND_GRADES) == 1 / 3


def test_hand_worked_ap_r_precision_bpref_and_reciprocal_rank():
    # AP = (1/2 + 2/4 + 3/6) / 3 = 1/2.
    assert average_precision(HAND_RANKING, HAND_GRADES) == pytest.approx(1 / 2, abs=1e-15)
    # First R = 3 ranks hold one relevant item.
    assert r_precision(HAND_RANKING, HAND_GRADES) == 1 / 3
    # Non-relevant items above the relevant ones: 1, 2, 3; (1 - 1/3) + (1 - 2/3) + (1 - 3/3) = 1, over R = 3.
    assert bpref(HAND_RANKING, HAND_GRADES) == pytest.approx(1 / 3, abs=1e-15)
    assert reciprocal_rank(HAND_RANKING, HAND_GRADES) == 1 / 2
    assert reciprocal_rank(HAND_RANKING, HAND_GRADES, k=1) == 0.0
    assert reciprocal_rank(HAND_RANKING, HAND_GRADES, k=2) == 1 / 2


def test_bpref_considers_only_the_first_r_non_relevant_items():
    # R = 1, the relevant item 3 is ranked below 3 non-relevant items: N_r = min(3, R) = 1, bpref = 0.
    assert bpref([0, 1, 2, 3], [0, 0, 0, 1]) == 0.0
    # R = 2, relevant items at ranks 2 and 5 with 1 and 3 non-relevant items above: N = 1 and min(3, 2) = 2:
    # ((1 - 1/2) + (1 - 2/2)) / 2 = 1/4.
    assert bpref([0, 1, 2, 3, 4], [0, 1, 0, 0, 1]) == 1 / 4
    # Fewer non-relevant (1) than relevant (3) items: the seed divides by R, so a reversed ranking keeps
    # (1 - 1/3)·3 / 3 = 2/3 (trec_eval divides by min(R, N) = 1 and would give 0).
    assert bpref([3, 0, 1, 2], [1, 1, 1, 0]) == pytest.approx(2 / 3, abs=1e-15)


def test_hand_worked_dcg_and_ndcg_in_both_conventions():
    # Grades along the ranking 0, 3, 0, 2; ideal grades 3, 2, 1, 0.
    # Seed: DCG@4 = 0 + 3/log2 2 + 0 + 2/log2 4 = 4; IDCG@4 = 3 + 2/log2 2 + 1/log2 3 = 5 + 1/log2 3.
    assert dcg_at_k(HAND_RANKING, HAND_GRADES, 4) == 4.0
    assert ndcg_at_k(HAND_RANKING, HAND_GRADES, 4) == pytest.approx(4 / (5 + 1 / math.log2(3)), abs=1e-15)
    # trec_eval: DCG@4 = 3/log2 3 + 2/log2 5; IDCG@4 = 3/log2 2 + 2/log2 3 + 1/log2 4.
    trec_dcg = 3 / math.log2(3) + 2 / math.log2(5)
    assert dcg_at_k(HAND_RANKING, HAND_GRADES, 4, discount="trec") == pytest.approx(trec_dcg, abs=1e-15)
    assert ndcg_at_k(HAND_RANKING, HAND_GRADES, 4, discount="trec") == pytest.approx(
        trec_dcg / (3 + 2 / math.log2(3) + 1 / 2), abs=1e-15
    )
    # The seed's formula leaves ranks 1 and 2 undiscounted: swapping them changes nothing.
    assert dcg_at_k([4, 0], HAND_GRADES, 2) == dcg_at_k([0, 4], HAND_GRADES, 2) == 5.0
    assert dcg_at_k([4, 0], HAND_GRADES, 2, discount="trec") < dcg_at_k(
        [0, 4], HAND_GRADES, 2, discount="trec"
    )


def test_hand_worked_q_measure_and_r_measure_with_grades():
    # Gains along the ranking (S, A, B = 3, 2, 1): 0, 3, 0, 2, 0, 1.
    # cg = 0, 3, 3, 5, 5, 6; count = 0, 1, 1, 2, 2, 3; ideal gains 3, 2, 1 so cig = 3, 5, 6, 6, 6, 6.
    # Q = ((3+1)/(5+2) + (5+2)/(6+4) + (6+3)/(6+6)) / 3 = (4/7 + 7/10 + 3/4) / 3 = 283/420.
    assert q_measure(HAND_RANKING, HAND_GRADES) == pytest.approx(float(Fraction(283, 420)), abs=1e-15)
    # R-measure: R = 3, cg(3) = 3, count(3) = 1, cig(3) = 6: (3 + 1)/(6 + 3) = 4/9.
    assert r_measure(HAND_RANKING, HAND_GRADES) == pytest.approx(4 / 9, abs=1e-15)
    # β = 2: Q = ((6+1)/(10+2) + (10+2)/(12+4) + (12+3)/(12+6)) / 3 = (7/12 + 3/4 + 5/6) / 3 = 13/18.
    assert q_measure(HAND_RANKING, HAND_GRADES, beta=2) == pytest.approx(13 / 18, abs=1e-15)
    # R-measure β = 2: (6 + 1)/(12 + 3) = 7/15.
    assert r_measure(HAND_RANKING, HAND_GRADES, beta=2) == pytest.approx(7 / 15, abs=1e-15)


def test_eq_23_and_24_need_binary_relevance():
    # Item 0 is B (gain 1) and ranked first, item 1 is S (gain 3): at rank 1 cg/cig = 1/3 < count/r = 1.
    # Q = ((1+1)/(3+1) + (4+2)/(4+2)) / 2 = 3/4 while AWP = (1/3 + 4/4) / 2 = 2/3: Q > AWP.
    assert q_measure([0, 1], [1, 3]) == pytest.approx(3 / 4, abs=1e-15)
    assert brute_awp([0, 1], [1, 3], DEFAULT_GAINS) == Fraction(2, 3)
    # R-measure: ranking 0 (B), 2 (non-relevant): (1 + 1)/(4 + 2) = 1/3 > R-WP = cg(2)/cig(2) = 1/4.
    assert r_measure([0, 2, 1], [1, 3, 0]) == pytest.approx(1 / 3, abs=1e-15)


# --- ranking_from_scores and retrieval_report ------------------------------------------------------


def test_ranking_from_scores_orders_best_first_and_breaks_ties_by_item_index():
    assert ranking_from_scores([1.0, 3.0, 3.0, 2.0]).tolist() == [1, 2, 3, 0]
    assert ranking_from_scores([1.0, 3.0, 3.0, 2.0], higher_is_better=False).tolist() == [0, 3, 1, 2]
    assert ranking_from_scores([0.5, 0.5, 0.5]).tolist() == [0, 1, 2]
    # Long runs of ties, where an unstable sort would shuffle them.
    scores = np.repeat([3.0, 1.0, 2.0], 50)
    expected = [*range(0, 50), *range(100, 150), *range(50, 100)]
    assert ranking_from_scores(scores).tolist() == expected
    assert ranking_from_scores(-scores, higher_is_better=False).tolist() == expected


def test_retrieval_report_gathers_every_measure_of_one_cutoff():
    report = retrieval_report(HAND_GRADES, 4, ranking=HAND_RANKING)
    assert report == {
        "k": 4,
        "item_count": 6,
        "ranked_count": 6,
        "relevant_count": 3,
        "precision_at_k": 1 / 2,
        "recall_at_k": 2 / 3,
        "f_measure_at_k": f_measure(1 / 2, 2 / 3),
        "average_precision": average_precision(HAND_RANKING, HAND_GRADES),
        "r_precision": 1 / 3,
        "bpref": bpref(HAND_RANKING, HAND_GRADES),
        "dcg_at_k": 4.0,
        "ndcg_at_k": ndcg_at_k(HAND_RANKING, HAND_GRADES, 4),
        "reciprocal_rank": 1 / 2,
        "q_measure": q_measure(HAND_RANKING, HAND_GRADES),
        "r_measure": r_measure(HAND_RANKING, HAND_GRADES),
        "recall_levels": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
        # Points (1/3, 1/2), (2/3, 1/2), (1, 1/2).
        "interpolated_precision": [0.5] * 11,
        "f_beta": 1.0,
        "q_beta": 1.0,
        "gains": [1.0, 2.0, 3.0],
        "discount": "seed",
    }
    assert json.loads(json.dumps(report)) == report


def test_retrieval_report_from_scores_equals_the_report_of_their_ranking():
    scores = [0.9, 0.95, 0.1, 0.5, 0.5, 0.2]  # items 3 and 4 tie: item 3 first
    assert ranking_from_scores(scores).tolist() == [1, 0, 3, 4, 5, 2]
    by_scores = retrieval_report(HAND_GRADES, 3, scores=scores, f_beta=2, q_beta=0.5, discount="trec")
    by_ranking = retrieval_report(HAND_GRADES, 3, ranking=HAND_RANKING, f_beta=2, q_beta=0.5, discount="trec")
    assert by_scores == by_ranking
    assert by_scores["f_measure_at_k"] == f_measure(1 / 3, 1 / 3, beta=2)
    assert by_scores["q_measure"] == q_measure(HAND_RANKING, HAND_GRADES, beta=0.5)


# --- validation ------------------------------------------------------------------------------------

EVERY_MEASURE = [
    lambda ranking, grades: precision_at_k(ranking, grades, 2),
    lambda ranking, grades: recall_at_k(ranking, grades, 2),
    average_precision,
    r_precision,
    bpref,
    reciprocal_rank,
    precision_recall_points,
    interpolated_precision_recall_curve,
    lambda ranking, grades: dcg_at_k(ranking, grades, 2),
    lambda ranking, grades: ndcg_at_k(ranking, grades, 2),
    q_measure,
    r_measure,
    lambda ranking, grades: retrieval_report(grades, 2, ranking=ranking),
]


@pytest.mark.parametrize("measure", EVERY_MEASURE)
def test_every_measure_refuses_a_reference_without_relevant_items(measure):
    with pytest.raises(ValueError, match="no item is relevant"):
        measure([0, 1, 2], [0, 0, 0])


@pytest.mark.parametrize("measure", EVERY_MEASURE)
@pytest.mark.parametrize(
    ("ranking", "grades", "message"),
    [
        ([0, 1, 1], [1, 0, 0], r"item 1 appears more than once in the ranking \(positions 1 and 2\)"),
        ([0, 3], [1, 0, 0], r"ranking position 1 holds 3, which is not an item index"),
        ([0, -1], [1, 0, 0], r"ranking position 1 holds -1"),
        ([0.0, 1.0], [1, 0, 0], "ranking must hold integer item indices.*ranking_from_scores"),
        ([], [1, 0, 0], "ranking must be a non-empty"),
        ([0, 1], [1, -1, 0], r"must be whole numbers ≥ 0 \(0 = not relevant\); position 1 holds -1"),
        ([0, 1], [1, 0.5, 0], "position 1 holds 0.5"),
        ([0, 1], [1, float("nan"), 0], "position 1 holds nan"),
        ([0, 1], [], "must be a non-empty one-dimensional array"),
        ([0, 1], ["a", "b"], "must be whole numbers"),
    ],
)
def test_every_measure_names_the_bad_input(measure, ranking, grades, message):
    with pytest.raises(ValueError, match=message):
        measure(ranking, grades)


def test_whole_float_grades_and_bools_are_accepted():
    assert average_precision([1, 0], [1.0, 0.0]) == average_precision([1, 0], [True, False]) == 1 / 2


@pytest.mark.parametrize("k", [0, -1, 1.5, "3", True, None])
def test_a_cutoff_must_be_a_whole_number_of_at_least_one(k):
    for measure in (precision_at_k, recall_at_k, dcg_at_k, ndcg_at_k):
        with pytest.raises(ValueError, match="the cutoff k must be"):
            measure([0, 1], [1, 0], k)
    with pytest.raises(ValueError, match="the cutoff k must be"):
        reciprocal_rank([0, 1], [1, 0], k=k if k is not None else 0)


def test_cutoffs_accept_numpy_integers():
    assert precision_at_k([0, 1], [1, 0], np.int64(2)) == 1 / 2


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((1.5, 0.5), r"precision must lie in \[0, 1\], got 1.5"),
        ((0.5, -0.1), r"recall must lie in \[0, 1\], got -0.1"),
        ((float("nan"), 0.5), "precision must lie in"),
        ((0.5, 0.5, 0.0), "beta must be a positive finite number, got 0.0"),
        ((0.5, 0.5, float("inf")), "beta must be a positive finite number"),
    ],
)
def test_f_measure_validates_its_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        f_measure(*arguments)


def test_graded_options_are_validated():
    with pytest.raises(ValueError, match=r"discount must be one of \('seed', 'trec'\), got 'exp'"):
        ndcg_at_k([0, 1], [1, 0], 2, discount="exp")
    with pytest.raises(ValueError, match=r"item 1 has grade 4 but gains gives values for grades 1 … 3 only"):
        q_measure([0, 1], [1, 4])
    with pytest.raises(ValueError, match="every gain must be a finite number > 0"):
        r_measure([0, 1], [1, 0], gains=(1.0, 0.0))
    with pytest.raises(ValueError, match="gains must be a non-empty sequence"):
        q_measure([0, 1], [1, 0], gains=())
    with pytest.raises(ValueError, match="beta must be a finite number ≥ 0, got -1.0"):
        q_measure([0, 1], [1, 0], beta=-1)


def test_retrieval_report_wants_exactly_one_of_ranking_and_scores():
    with pytest.raises(ValueError, match="give exactly one of ranking"):
        retrieval_report([1, 0], 1)
    with pytest.raises(ValueError, match="give exactly one of ranking"):
        retrieval_report([1, 0], 1, ranking=[0, 1], scores=[0.1, 0.2])
    with pytest.raises(
        ValueError, match=r"scores must hold one score per item: got shape \(3,\) for 2 items"
    ):
        retrieval_report([1, 0], 1, scores=[0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="scores must be finite; position 1 holds nan"):
        retrieval_report([1, 0], 1, scores=[0.1, float("nan")])


# --- trec_eval as the trusted implementation -------------------------------------------------------


def trec_eval(ranking, grades, measures):
    """trec_eval's figures for one query: every item judged (grade 0 = judged non-relevant)."""
    qrels = {"q": {f"item{item}": int(grade) for item, grade in enumerate(grades)}}
    # Distinct decreasing scores, so that trec_eval's own tie rule never applies.
    run = {"q": {f"item{item}": float(len(ranking) - position) for position, item in enumerate(ranking)}}
    return pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(run)["q"]


@st.composite
def graded_cases(draw, max_items=30, max_grade=3, full_ranking=False):
    """(ranking, grades, k): a ranking of some or all items, at least one relevant item, 1 ≤ k ≤ n + 2."""
    item_count = draw(st.integers(1, max_items))
    grades = draw(st.lists(st.integers(0, max_grade), min_size=item_count, max_size=item_count).filter(any))
    order = draw(st.permutations(range(item_count)))
    length = item_count if full_ranking else draw(st.integers(1, item_count))
    k = draw(st.integers(1, item_count + 2))
    return np.array(order[:length]), np.array(grades), k


@settings(max_examples=300, deadline=None)
@given(graded_cases())
def test_binary_measures_equal_trec_eval(case):
    ranking, grades, k = case
    relevant_count = int(np.count_nonzero(grades))
    trec = trec_eval(ranking, grades, {f"P.{k}", f"recall.{k}", "map", "Rprec", "recip_rank", "bpref"})
    assert precision_at_k(ranking, grades, k) == pytest.approx(trec[f"P_{k}"], abs=1e-12)
    assert recall_at_k(ranking, grades, k) == pytest.approx(trec[f"recall_{k}"], abs=1e-12)
    assert average_precision(ranking, grades) == pytest.approx(trec["map"], abs=1e-12)
    assert r_precision(ranking, grades) == pytest.approx(trec["Rprec"], abs=1e-12)
    assert reciprocal_rank(ranking, grades) == pytest.approx(trec["recip_rank"], abs=1e-12)
    if grades.size - relevant_count >= relevant_count:  # trec_eval divides by min(R, N): same when N ≥ R
        assert bpref(ranking, grades) == pytest.approx(trec["bpref"], abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(graded_cases(), st.sampled_from([0.5, 1.0, 2.0, 3.0]))
def test_f_measure_equals_trec_evals_set_f_whose_parameter_is_beta_squared(case, beta):
    ranking, grades, _ = case
    everything = ranking.size
    trec = trec_eval(ranking, grades, {f"set_F.{beta * beta}"})
    precision = precision_at_k(ranking, grades, everything)
    recall = recall_at_k(ranking, grades, everything)
    assert f_measure(precision, recall, beta) == pytest.approx(trec["set_F"], abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(graded_cases())
def test_ndcg_with_the_trec_discount_equals_trec_evals_ndcg_cut(case):
    ranking, grades, k = case
    trec = trec_eval(ranking, grades, {f"ndcg_cut.{k}"})
    assert ndcg_at_k(ranking, grades, k, discount="trec") == pytest.approx(trec[f"ndcg_cut_{k}"], abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(graded_cases(max_items=40, max_grade=1))
def test_eleven_point_curve_equals_trec_eval_when_r_is_even_or_a_multiple_of_five(case):
    ranking, grades, _ = case
    relevant_count = int(np.count_nonzero(grades))
    trec = trec_eval(ranking, grades, {"iprec_at_recall"})
    _, curve = interpolated_precision_recall_curve(ranking, grades)
    expected = [trec[f"iprec_at_recall_{level:.2f}"] for level in STANDARD_RECALL_LEVELS]
    if relevant_count % 2 == 0 or relevant_count % 5 == 0:
        assert curve.tolist() == pytest.approx(expected, abs=1e-12)
    else:
        # trec_eval's count of relevant items per level, (long)(level·R + 0.9), can fall one short here.
        # Where trec_eval's count is short it may report a higher precision, never a lower one.
        assert all(ours <= theirs + 1e-12 for ours, theirs in zip(curve, expected, strict=True))


def test_eleven_point_curve_on_seeds_first_example_equals_trec_eval():
    relevant = seed_relevance(SEED_RELEVANT_DOCS).astype(int)
    trec = trec_eval(SEED_RANKING, relevant, {"iprec_at_recall", "map", "bpref", "Rprec"})
    _, curve = interpolated_precision_recall_curve(SEED_RANKING, relevant)
    assert curve.tolist() == [trec[f"iprec_at_recall_{level:.2f}"] for level in STANDARD_RECALL_LEVELS]
    assert trec["map"] == pytest.approx(0.29, abs=1e-12)
    assert trec["bpref"] == pytest.approx(0.3, abs=1e-12)
    assert trec["Rprec"] == pytest.approx(0.4, abs=1e-12)


# --- brute force from the formulas ------------------------------------------------------------------


def gain_list(ranking, grades, gains):
    return [Fraction(0) if grades[item] == 0 else Fraction(gains[grades[item] - 1]) for item in ranking]


def ideal_cumulative_gain(grades, gains, rank):
    """cig(r): the cumulative gain of the relevant items sorted by gain, best first (constant after R)."""
    ideal = sorted((Fraction(gains[grade - 1]) for grade in grades if grade > 0), reverse=True)
    return sum(ideal[:rank], Fraction(0))


def brute_q_measure(ranking, grades, gains, beta):
    """Sakai's Eq. 17, rank by rank, in exact fractions."""
    beta = Fraction(beta)
    relevant_count = sum(1 for grade in grades if grade > 0)
    ranked_gains = gain_list(ranking, grades, gains)
    total = Fraction(0)
    for rank in range(1, len(ranking) + 1):
        if ranked_gains[rank - 1] == 0:
            continue
        cg = sum(ranked_gains[:rank], Fraction(0))
        count = sum(1 for gain in ranked_gains[:rank] if gain > 0)
        cig = ideal_cumulative_gain(grades, gains, rank)
        total += (beta * cg + count) / (beta * cig + rank)
    return total / relevant_count


def brute_r_measure(ranking, grades, gains, beta):
    """Sakai's Eq. 18 in exact fractions."""
    beta = Fraction(beta)
    relevant_count = sum(1 for grade in grades if grade > 0)
    top_gains = gain_list(ranking, grades, gains)[:relevant_count]
    cg = sum(top_gains, Fraction(0))
    count = sum(1 for gain in top_gains if gain > 0)
    cig = ideal_cumulative_gain(grades, gains, relevant_count)
    return (beta * cg + count) / (beta * cig + relevant_count)


def brute_awp(ranking, grades, gains):
    """Average weighted precision: (1/R) Σ_r isrel(r)·cg(r)/cig(r) (the AWP of seed 003's Eq. 23)."""
    relevant_count = sum(1 for grade in grades if grade > 0)
    ranked_gains = gain_list(ranking, grades, gains)
    total = Fraction(0)
    for rank in range(1, len(ranking) + 1):
        if ranked_gains[rank - 1] > 0:
            total += sum(ranked_gains[:rank], Fraction(0)) / ideal_cumulative_gain(grades, gains, rank)
    return total / relevant_count


def brute_dcg(ranking, grades, k, discount):
    total = 0.0
    for rank, item in enumerate(ranking[:k], start=1):
        if discount == "seed":
            total += grades[item] if rank == 1 else grades[item] / math.log2(rank)
        else:
            total += grades[item] / math.log2(rank + 1)
    return total


gain_tables = st.sampled_from([DEFAULT_GAINS, (0.3, 0.2, 0.1), (10, 20, 30), (1, 1, 1), (1, 5, 10)])


@settings(max_examples=300, deadline=None)
@given(graded_cases(), gain_tables, st.sampled_from([0, 0.5, 1, 2, 10]))
def test_q_and_r_measure_equal_the_brute_force_formulas(case, gains, beta):
    ranking, grades, _ = case
    expected_q = brute_q_measure(ranking.tolist(), grades.tolist(), gains, beta)
    expected_r = brute_r_measure(ranking.tolist(), grades.tolist(), gains, beta)
    assert q_measure(ranking, grades, beta=beta, gains=gains) == pytest.approx(float(expected_q), abs=1e-12)
    assert r_measure(ranking, grades, beta=beta, gains=gains) == pytest.approx(float(expected_r), abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(graded_cases(), st.sampled_from(["seed", "trec"]))
def test_dcg_and_ndcg_equal_the_brute_force_formula(case, discount):
    ranking, grades, k = case
    ideal = np.argsort(-grades, kind="stable")
    expected = brute_dcg(ranking, grades, k, discount)
    assert dcg_at_k(ranking, grades, k, discount=discount) == pytest.approx(expected, rel=1e-12)
    assert ndcg_at_k(ranking, grades, k, discount=discount) == pytest.approx(
        expected / brute_dcg(ideal, grades, k, discount), rel=1e-12
    )


@settings(max_examples=200, deadline=None)
@given(graded_cases(), st.sampled_from([0.5, 1, 3]), st.sampled_from([2, 10, 0.1]))
def test_scaling_every_gain_is_scaling_beta(case, beta, factor):
    # Seed 003: gains 30:20:10 with β = 1 equal gains 3:2:1 with β = 10 (Eq. 17, 18).
    ranking, grades, _ = case
    scaled = tuple(factor * gain for gain in DEFAULT_GAINS)
    assert q_measure(ranking, grades, beta=beta, gains=scaled) == pytest.approx(
        q_measure(ranking, grades, beta=beta * factor), abs=1e-12
    )
    assert r_measure(ranking, grades, beta=beta, gains=scaled) == pytest.approx(
        r_measure(ranking, grades, beta=beta * factor), abs=1e-12
    )


@settings(max_examples=200, deadline=None)
@given(graded_cases())
def test_with_beta_zero_q_is_average_precision_and_r_is_r_precision(case):
    ranking, grades, _ = case
    assert q_measure(ranking, grades, beta=0) == pytest.approx(average_precision(ranking, grades), abs=1e-12)
    assert r_measure(ranking, grades, beta=0) == pytest.approx(r_precision(ranking, grades), abs=1e-12)


# --- seed 003's properties with binary relevance (Eq. 19-24) -----------------------------------------


@settings(max_examples=300, deadline=None)
@given(graded_cases(max_grade=1), st.sampled_from([0.5, 1, 3]))
def test_binary_r_measure_is_r_precision_and_q_lies_between_ap_and_awp(case, beta):
    ranking, grades, _ = case
    assert r_measure(ranking, grades, beta=beta) == pytest.approx(r_precision(ranking, grades), abs=1e-12)
    q = q_measure(ranking, grades, beta=beta)
    assert (
        average_precision(ranking, grades) - 1e-12
        <= q
        <= float(brute_awp(ranking, grades, DEFAULT_GAINS)) + 1e-12
    )


@settings(max_examples=300, deadline=None)
@given(graded_cases(max_grade=1), st.sampled_from([0.5, 1, 3]), st.sampled_from([1, 2, 3]))
def test_binary_q_measure_is_average_precision_without_relevant_items_below_rank_r(case, beta, grade):
    # Eq. 22: with binary relevance (one grade, whichever gain it has) and no relevant item retrieved
    # below rank R, Q-measure equals AP. Relevant items ranked below R are dropped from the ranking.
    ranking, binary, _ = case
    grades = binary * grade
    relevant_count = int(np.count_nonzero(grades))
    keep = (np.arange(ranking.size) < relevant_count) | (grades[ranking] == 0)
    ranking = ranking[keep]
    assert q_measure(ranking, grades, beta=beta) == pytest.approx(
        average_precision(ranking, grades), abs=1e-12
    )


# --- invariants ------------------------------------------------------------------------------------


MEASURE_KEYS = [
    "precision_at_k",
    "recall_at_k",
    "f_measure_at_k",
    "average_precision",
    "r_precision",
    "bpref",
    "ndcg_at_k",
    "reciprocal_rank",
    "q_measure",
    "r_measure",
]


def assert_same_report(actual, expected):
    assert actual.keys() == expected.keys()
    for key, value in expected.items():
        if isinstance(value, float) or isinstance(value, list) and isinstance(value[0], float):
            assert actual[key] == pytest.approx(value, abs=1e-12), key
        else:
            assert actual[key] == value, key


@settings(max_examples=300, deadline=None)
@given(graded_cases(), st.sampled_from(["seed", "trec"]))
def test_every_measure_lies_between_zero_and_one(case, discount):
    ranking, grades, k = case
    report = retrieval_report(grades, k, ranking=ranking, discount=discount, f_beta=2.0, q_beta=3.0)
    numbers = [report[key] for key in MEASURE_KEYS] + report["interpolated_precision"]
    assert all(0.0 <= value <= 1.0 + 1e-12 for value in numbers), report
    assert report["dcg_at_k"] >= 0.0


@settings(max_examples=200, deadline=None)
@given(graded_cases(full_ranking=True), st.sampled_from(["seed", "trec"]), gain_tables)
def test_the_ideal_ranking_scores_one(case, discount, gains):
    _, grades, k = case
    ideal = ranking_from_scores(grades)  # by grade, best first
    relevant_count = int(np.count_nonzero(grades))
    for measure in (average_precision, r_precision, bpref, reciprocal_rank):
        assert measure(ideal, grades) == pytest.approx(1.0, abs=1e-12)
    assert q_measure(ideal, grades, gains=sorted(gains)) == pytest.approx(1.0, abs=1e-12)
    assert r_measure(ideal, grades, gains=gains) == pytest.approx(1.0, abs=1e-12)
    assert ndcg_at_k(ideal, grades, k, discount=discount) == pytest.approx(1.0, abs=1e-12)
    assert precision_at_k(ideal, grades, min(k, relevant_count)) == 1.0
    assert recall_at_k(ideal, grades, max(k, relevant_count)) == 1.0
    assert interpolated_precision_recall_curve(ideal, grades)[1].tolist() == [1.0] * 11


@settings(max_examples=200, deadline=None)
@given(graded_cases(), st.randoms(use_true_random=False))
def test_renumbering_the_items_changes_nothing(case, random):
    ranking, grades, k = case
    new_number = np.array(random.sample(range(grades.size), grades.size))  # item i becomes new_number[i]
    renumbered_grades = np.empty_like(grades)
    renumbered_grades[new_number] = grades
    before = retrieval_report(grades, k, ranking=ranking)
    after = retrieval_report(renumbered_grades, k, ranking=new_number[ranking])
    assert_same_report(after, before)


@settings(max_examples=200, deadline=None)
@given(graded_cases(), st.randoms(use_true_random=False))
def test_reordering_items_of_one_grade_within_the_ranking_changes_nothing(case, random):
    ranking, grades, k = case
    reordered = ranking.copy()
    for grade in np.unique(grades[ranking]):
        positions = np.flatnonzero(grades[ranking] == grade)
        reordered[positions] = ranking[random.sample(list(positions), positions.size)]
    assert_same_report(
        retrieval_report(grades, k, ranking=reordered), retrieval_report(grades, k, ranking=ranking)
    )


@settings(max_examples=300, deadline=None)
@given(graded_cases(), st.data())
def test_raising_a_relevant_item_above_a_less_relevant_one_never_lowers_a_measure(case, data):
    ranking, grades, k = case
    ranked_grades = grades[ranking]
    # Adjacent pairs whose lower item has the higher grade.
    swappable = np.flatnonzero(ranked_grades[1:] > ranked_grades[:-1])
    if swappable.size == 0:
        return
    position = data.draw(st.sampled_from(swappable.tolist()))
    improved = ranking.copy()
    improved[[position, position + 1]] = improved[[position + 1, position]]
    before = retrieval_report(grades, k, ranking=ranking, discount="trec")
    after = retrieval_report(grades, k, ranking=improved, discount="trec")
    for key in [*MEASURE_KEYS, "dcg_at_k"]:
        assert after[key] >= before[key] - 1e-12, key
