"""Retrieval measures of a system ranking against the human top-K (seed 002; Sakai 2004, seed 003).

PURE module: numpy, scipy and the standard library only.

Inputs
------
Items are numbered ``0 … n-1``. Relevance comes as one value per item:

* ``relevant`` (binary measures): bool, or whole numbers ≥ 0 where any non-zero value means relevant, so
  a ``grades`` array can be passed as it is;
* ``grades`` (graded measures): whole numbers ≥ 0, 0 = not relevant, higher = more relevant. The
  platform maps Sakai's levels S/A/B to grades 3/2/1 (score bands of the human top-K).

The system's output is a ``ranking``: the item indices best first, each at most once. It may list only
some of the items (the answer list A of seed 002); an item it leaves out is *not retrieved*. Scores become a
ranking with ``ranking_from_scores``. R, the number of relevant items, always counts every relevant item,
retrieved or not. Ranks are 1-based in the formulas below.

Conventions shared by every measure
-----------------------------------
* Every measure needs at least one relevant item and raises ``ValueError`` when there is none (recall,
  AP, R-precision, bpref, nDCG, Q and R-measure divide by R or by the ideal gain; the others raise too, so
  that a reference without relevant items is always reported instead of silently scoring 0).
* A cutoff ``k`` is a whole number ≥ 1 and may exceed the length of the ranking: the missing positions
  count as non-relevant (trec_eval does the same: P@k always divides by k).
* Every item is judged: the reference ranks all items, so every item outside the top-K is *judged*
  non-relevant. This matters for bpref (see ``bpref``).
* A relevant item that is not retrieved adds 0 to AP, bpref and Q-measure.

Where trec_eval (the TREC reference implementation) follows another convention, the docstring says so:
its F parameter is β², its nDCG discounts every rank by log2(rank + 1), its bpref divides by
min(R, number of judged non-relevant items), and its 11-point curve counts the relevant items a recall
level needs as (long)(level·R + 0.9), which can fall one short in floating point.
"""

from __future__ import annotations

import math
import operator

import numpy as np

__all__ = [
    "DEFAULT_GAINS",
    "STANDARD_RECALL_LEVELS",
    "average_precision",
    "bpref",
    "dcg_at_k",
    "f_measure",
    "interpolated_precision_recall_curve",
    "ndcg_at_k",
    "precision_at_k",
    "precision_recall_points",
    "q_measure",
    "r_measure",
    "r_precision",
    "ranking_from_scores",
    "recall_at_k",
    "reciprocal_rank",
    "retrieval_report",
]

DEFAULT_GAINS = (1.0, 2.0, 3.0)
"""Sakai's default gain values, indexed by grade - 1: gain(B) = 1, gain(A) = 2, gain(S) = 3."""

STANDARD_RECALL_LEVELS = np.arange(11) / 10
"""The 11 standard recall levels 0.0, 0.1, …, 1.0 of seed 002 (read-only)."""
STANDARD_RECALL_LEVELS.setflags(write=False)

_DISCOUNTS = ("seed", "trec")


def ranking_from_scores(scores, *, higher_is_better: bool = True) -> np.ndarray:
    """Item indices ordered best first by ``scores``, ties broken by item index.

    Parameters
    ----------
    scores : array_like of float
        One finite score per item.
    higher_is_better : bool
        If True (the default) the highest score comes first.

    Returns
    -------
    numpy.ndarray of int64
        A permutation of ``0 … n-1``.

    Raises
    ------
    ValueError
        If ``scores`` is not a non-empty one-dimensional array of finite numbers.

    Notes
    -----
    Tied items keep the order of their indices: the lower index is ranked first (a stable sort). Any rule
    for ties favours some items; this one is deterministic and documented. trec_eval breaks ties by
    document name, in descending order, so results on tied scores can differ from it.
    """
    values = np.asarray(scores, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"scores must be a non-empty one-dimensional array, got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        first_bad = int(np.flatnonzero(~np.isfinite(values))[0])
        raise ValueError(f"scores must be finite; position {first_bad} holds {values[first_bad].item()!r}")
    return np.argsort(-values if higher_is_better else values, kind="stable").astype(np.int64)


def precision_at_k(ranking, relevant, k: int) -> float:
    """Precision at cutoff k: the fraction of the first k positions that hold a relevant item.

    Parameters
    ----------
    ranking : array_like of int
        Item indices, best first, each at most once.
    relevant : array_like of bool or int
        One value per item; non-zero means relevant.
    k : int
        The cutoff, ≥ 1.

    Returns
    -------
    float
        ``P@k = |A_rel ∩ top k| / k`` (seed 002, "precision = |A_rel| / |A|" with A the first k
        positions). If the ranking is shorter than k, the missing positions count as non-relevant
        (as trec_eval's ``P_k``).

    Raises
    ------
    ValueError
        On invalid input (see ``_check_ranking``) or when no item is relevant.
    """
    order, is_relevant = _binary_inputs(ranking, relevant, "precision at k")
    k = _check_cutoff(k)
    return int(np.count_nonzero(is_relevant[order[:k]])) / k


def recall_at_k(ranking, relevant, k: int) -> float:
    """Recall at cutoff k: the fraction of the relevant items found in the first k positions.

    Parameters
    ----------
    ranking : array_like of int
        Item indices, best first, each at most once.
    relevant : array_like of bool or int
        One value per item; non-zero means relevant.
    k : int
        The cutoff, ≥ 1.

    Returns
    -------
    float
        ``R@k = |A_rel ∩ top k| / |Rel|`` (seed 002, "recall = |A_rel| / |Rel|").

    Raises
    ------
    ValueError
        On invalid input or when no item is relevant.
    """
    order, is_relevant = _binary_inputs(ranking, relevant, "recall at k")
    k = _check_cutoff(k)
    return int(np.count_nonzero(is_relevant[order[:k]])) / int(np.count_nonzero(is_relevant))


def f_measure(precision: float, recall: float, beta: float = 1.0) -> float:
    """The F-measure F_β, combining precision and recall (seed 002).

    Parameters
    ----------
    precision, recall : float
        Values in [0, 1], usually of the same cutoff.
    beta : float
        Relative importance of recall against precision, > 0. β = 1 gives F_1, the harmonic mean.

    Returns
    -------
    float
        ``F_β = (β² + 1) · P · R / (β² · P + R)``; 0 when P = R = 0 (the 0/0 case, as trec_eval).

    Raises
    ------
    ValueError
        If precision or recall is outside [0, 1] or beta is not a positive finite number.

    Notes
    -----
    trec_eval's ``set_F.x`` takes x = β², not β: its ``set_F.4`` is ``f_measure(P, R, beta=2)``.
    """
    beta = float(beta)
    if not math.isfinite(beta) or beta <= 0.0:
        raise ValueError(f"beta must be a positive finite number, got {beta!r}")
    precision, recall = float(precision), float(recall)
    for name, value in (("precision", precision), ("recall", recall)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must lie in [0, 1], got {value!r}")
    beta_sq = beta * beta
    denominator = beta_sq * precision + recall
    if denominator == 0.0:
        return 0.0
    return (beta_sq + 1.0) * precision * recall / denominator


def average_precision(ranking, relevant) -> float:
    """Non-interpolated average precision, AP (seed 002).

    Parameters
    ----------
    ranking : array_like of int
        Item indices, best first, each at most once.
    relevant : array_like of bool or int
        One value per item; non-zero means relevant.

    Returns
    -------
    float
        ``AP = (1/|Rel|) Σ_{r=1}^{|Rel|} P_r`` with ``P_r = |Arel_r| / |A_r| = r / rank_r``, the precision
        at the rank of the r-th relevant item; ``P_r = 0`` for a relevant item that is not retrieved.

    Raises
    ------
    ValueError
        On invalid input or when no item is relevant.
    """
    order, is_relevant = _binary_inputs(ranking, relevant, "average precision")
    relevant_ranks = np.flatnonzero(is_relevant[order]) + 1
    found = np.arange(1, relevant_ranks.size + 1)
    return float(np.sum(found / relevant_ranks)) / int(np.count_nonzero(is_relevant))


def r_precision(ranking, relevant) -> float:
    """R-precision: precision at rank R, where R = |Rel| is the number of relevant items (seed 002).

    Parameters
    ----------
    ranking : array_like of int
        Item indices, best first, each at most once.
    relevant : array_like of bool or int
        One value per item; non-zero means relevant.

    Returns
    -------
    float
        ``R-prec = |A_rel ∩ top R| / R``, which is also the recall at rank R. A ranking shorter than R
        is padded with non-relevant positions.

    Raises
    ------
    ValueError
        On invalid input or when no item is relevant.
    """
    order, is_relevant = _binary_inputs(ranking, relevant, "R-precision")
    relevant_count = int(np.count_nonzero(is_relevant))
    return int(np.count_nonzero(is_relevant[order[:relevant_count]])) / relevant_count


def bpref(ranking, relevant) -> float:
    """Binary preference, bpref (seed 002).

    Parameters
    ----------
    ranking : array_like of int
        Item indices, best first, each at most once.
    relevant : array_like of bool or int
        One value per item; non-zero means relevant.

    Returns
    -------
    float
        ``bpref = (1/R) Σ_r (1 - N_r / R)``, the sum over the relevant items r that are retrieved, where
        ``N_r = min(R, number of non-relevant items ranked above r)``: only the first R non-relevant
        items are considered. A relevant item that is not retrieved adds 0.

    Raises
    ------
    ValueError
        On invalid input or when no item is relevant.

    Notes
    -----
    bpref was made for incomplete judgements: unjudged items are skipped, only *judged* non-relevant
    items count in N_r. Here every item is judged (the human reference ranks them all), so every item that
    is not relevant, i.e. every item outside the human top-K, is judged non-relevant and counts.

    trec_eval divides N_r by ``min(R, N)``, N the number of judged non-relevant items, instead of R. The
    two agree whenever N ≥ R; with fewer non-relevant than relevant items (K > n/2) this function, like
    the seed, never reaches 0.
    """
    order, is_relevant = _binary_inputs(ranking, relevant, "bpref")
    relevant_count = int(np.count_nonzero(is_relevant))
    positions = np.flatnonzero(is_relevant[order])  # 0-based positions of the retrieved relevant items
    nonrelevant_above = positions - np.arange(positions.size)
    capped = np.minimum(nonrelevant_above, relevant_count)
    return float(np.sum(1.0 - capped / relevant_count)) / relevant_count


def reciprocal_rank(ranking, relevant, k: int | None = None) -> float:
    """Reciprocal rank of the first relevant item (seed 002, the per-query term of MRAR).

    Parameters
    ----------
    ranking : array_like of int
        Item indices, best first, each at most once.
    relevant : array_like of bool or int
        One value per item; non-zero means relevant.
    k : int, optional
        Only the first k positions are looked at (the seed's α). None (the default) looks at the whole
        ranking.

    Returns
    -------
    float
        ``1 / rank`` of the first relevant item; 0 when none is within the cutoff (rank = ∞ in the seed).

    Raises
    ------
    ValueError
        On invalid input or when no item is relevant.
    """
    order, is_relevant = _binary_inputs(ranking, relevant, "reciprocal rank")
    if k is not None:
        order = order[: _check_cutoff(k)]
    hits = is_relevant[order]
    if not hits.any():
        return 0.0
    return 1.0 / (int(np.argmax(hits)) + 1)


def precision_recall_points(ranking, relevant) -> tuple[np.ndarray, np.ndarray]:
    """Recall and precision at each retrieved relevant item, in rank order (seed 002).

    Parameters
    ----------
    ranking : array_like of int
        Item indices, best first, each at most once.
    relevant : array_like of bool or int
        One value per item; non-zero means relevant.

    Returns
    -------
    recall, precision : numpy.ndarray of float64
        For the r-th relevant item retrieved, at rank ``rank_r``: ``recall = r / R`` and
        ``precision = r / rank_r`` (seed 002's example: "d123 gives 100% precision at 10% recall").
        Both are empty when no relevant item is retrieved.

    Raises
    ------
    ValueError
        On invalid input or when no item is relevant.
    """
    order, is_relevant = _binary_inputs(ranking, relevant, "the precision-recall points")
    relevant_ranks = np.flatnonzero(is_relevant[order]) + 1
    found = np.arange(1, relevant_ranks.size + 1)
    return found / int(np.count_nonzero(is_relevant)), found / relevant_ranks


def interpolated_precision_recall_curve(ranking, relevant) -> tuple[np.ndarray, np.ndarray]:
    """Interpolated precision at the 11 standard recall levels 0.0, 0.1, …, 1.0 (seed 002).

    Parameters
    ----------
    ranking : array_like of int
        Item indices, best first, each at most once.
    relevant : array_like of bool or int
        One value per item; non-zero means relevant.

    Returns
    -------
    recall_levels, precision : numpy.ndarray of float64, shape (11,)
        ``recall_levels`` is ``STANDARD_RECALL_LEVELS``; ``precision[j] = P(r_j) = max {P(r) : r ≥ r_j}``,
        the highest precision at any rank whose recall reaches the level r_j = j/10, and 0 where no rank
        reaches it.

    Raises
    ------
    ValueError
        On invalid input or when no item is relevant.

    Notes
    -----
    The seed writes the rule as ``P(r_j) = max_{r_j ≤ r ≤ r_{j+1}} P(r)``, but its worked example
    (Rel = {d3, d56, d129}: 33.3% at 0-30% recall, 25% at 40-60%, 20% at 70-100%) takes the maximum over
    all recalls r ≥ r_j: at 40% no point lies in [0.4, 0.5], yet the example gives 25% (the point at 66.7%).
    This function follows the worked example, which is also the usual rule (Baeza-Yates & Ribeiro-Neto).
    Precision only rises at a relevant item, so the maximum is taken over the points of
    ``precision_recall_points``. A level is reached when ``r / R ≥ j / 10``, tested exactly in integers
    as ``10 r ≥ j R``. trec_eval's ``iprec_at_recall`` takes the maximum over r ≥ r_j too, but counts the
    relevant items a level needs as ``(long)(level·R + 0.9)``, meant as the same ceiling; in floating point
    it can fall one short when ``j·R mod 10 = 1`` (0.7·3 + 0.9 = 2.9999…): with R = 3 its 70% level needs only
    2 relevant items and gives 25% where the seed gives 20%. The two agree whenever R is even or a
    multiple of 5.
    """
    order, is_relevant = _binary_inputs(ranking, relevant, "the interpolated precision-recall curve")
    relevant_count = int(np.count_nonzero(is_relevant))
    relevant_ranks = np.flatnonzero(is_relevant[order]) + 1
    found = np.arange(1, relevant_ranks.size + 1)
    # best_from[i]: the highest precision at the (i+1)-th relevant item retrieved or later.
    best_from = np.maximum.accumulate((found / relevant_ranks)[::-1])[::-1]
    levels = np.arange(11)
    needed = np.maximum(1, -((-levels * relevant_count) // 10))  # ceil(j·R/10) relevant items, at least 1
    reached = needed <= relevant_ranks.size
    precision = np.zeros(11)
    precision[reached] = best_from[needed[reached] - 1]
    return STANDARD_RECALL_LEVELS.copy(), precision


def dcg_at_k(ranking, grades, k: int, *, discount: str = "seed") -> float:
    """Discounted cumulative gain at cutoff k, with the grades as gains (seed 002).

    Parameters
    ----------
    ranking : array_like of int
        Item indices, best first, each at most once.
    grades : array_like of int
        One grade per item, ≥ 0; the grade is the gain rel_i.
    k : int
        The cutoff, ≥ 1.
    discount : {"seed", "trec"}
        ``"seed"`` (the default): seed 002's ``DCG_k = rel_1 + Σ_{i=2}^{k} rel_i / log2 i``, so ranks 1
        and 2 are both undiscounted. ``"trec"``: trec_eval's ``Σ_{i=1}^{k} rel_i / log2(i + 1)`` at
        every rank (also scikit-learn's ``dcg_score``).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        On invalid input, an unknown discount, or when no item is relevant.

    Notes
    -----
    Both conventions use linear gains (the grade itself), as trec_eval does; the exponential gain
    2^rel - 1 of Burges et al. is not offered.
    """
    order, item_grades = _graded_inputs(ranking, grades, "DCG")
    k = _check_cutoff(k)
    top_grades = item_grades[order[:k]]
    return float(top_grades @ _discounts(top_grades.size, discount))


def ndcg_at_k(ranking, grades, k: int, *, discount: str = "seed") -> float:
    """Normalised DCG at cutoff k: DCG@k divided by the DCG@k of the ideal ranking (seed 002).

    Parameters
    ----------
    ranking : array_like of int
        Item indices, best first, each at most once.
    grades : array_like of int
        One grade per item, ≥ 0; the grade is the gain.
    k : int
        The cutoff, ≥ 1.
    discount : {"seed", "trec"}
        See ``dcg_at_k``. With ``"trec"`` this is trec_eval's ``ndcg_cut.k``.

    Returns
    -------
    float
        ``nDCG@k = DCG@k / IDCG@k`` where IDCG@k is the DCG@k of all items sorted by grade, best first.
        In [0, 1]; 1 for any ranking whose first k grades are the k highest grades in order.

    Raises
    ------
    ValueError
        On invalid input, an unknown discount, or when no item is relevant.
    """
    order, item_grades = _graded_inputs(ranking, grades, "nDCG")
    k = _check_cutoff(k)
    top_grades = item_grades[order[:k]]
    ideal_grades = -np.sort(-item_grades)[:k]
    discounts = _discounts(ideal_grades.size, discount)
    return float(top_grades @ discounts[: top_grades.size]) / float(ideal_grades @ discounts)


def q_measure(ranking, grades, *, beta: float = 1.0, gains=DEFAULT_GAINS) -> float:
    """Sakai's Q-measure (Sakai 2004, seed 003, Eq. 15 and, with β, Eq. 17).

    Parameters
    ----------
    ranking : array_like of int
        Item indices, best first, each at most once (the system output, of length L).
    grades : array_like of int
        One grade per item: 0 = not relevant, g ≥ 1 relevant with gain ``gains[g - 1]``.
    beta : float
        Sakai's β ≥ 0 (Eq. 17); β = 1 gives Eq. 15, β = 0 gives average precision.
    gains : sequence of float
        Gain of each grade, ``gains[g - 1]`` for grade g, all > 0. The default (1, 2, 3) is Sakai's
        gain(B) = 1, gain(A) = 2, gain(S) = 3.

    Returns
    -------
    float
        ``Q = (1/R) Σ_{1≤r≤L} isrel(r) · (β·cg(r) + count(r)) / (β·cig(r) + r)``, where isrel(r) is 1
        when the item at rank r is relevant, cg(r) the cumulative gain of the ranking at rank r,
        count(r) the number of relevant items in the first r ranks, and cig(r) the cumulative gain of
        the ideal ranking (the relevant items by gain, best first), so cig(r) = cig(R) for r > R.
        In [0, 1]; 1 for the ideal ranking.

    Raises
    ------
    ValueError
        On invalid input, β < 0, a gain ≤ 0, a grade without a gain value, or no relevant item.

    Notes
    -----
    Multiplying every gain by c is the same as multiplying β by c (seed 003, Eq. 17).
    With binary relevance (Eq. 19-22: every relevant item has the same gain g, so cg(r) = g·count(r)
    and cig(r) = g·r for r ≤ R) each term is count(r)/r up to rank R, so Q equals average
    precision when no relevant item is ranked below R, and AP ≤ Q ≤ AWP otherwise, where
    ``AWP = (1/R) Σ_r isrel(r)·cg(r)/cig(r)``. With graded relevance Q can exceed AWP, so Eq. 23
    (Q ≤ AWP) holds for binary relevance only: a low-gain item ranked first gives cg/cig < count/r.
    """
    order, item_grades = _graded_inputs(ranking, grades, "Q-measure")
    beta = _check_beta(beta)
    item_gains = _item_gains(item_grades, gains)
    relevant_count = int(np.count_nonzero(item_grades))
    ranked_gains = item_gains[order]
    is_relevant = ranked_gains > 0.0
    cumulative_gain = np.cumsum(ranked_gains)
    count = np.cumsum(is_relevant)
    ideal_cumulative = np.cumsum(-np.sort(-item_gains[item_grades > 0]))
    ranks = np.arange(1, order.size + 1)
    cumulative_ideal = ideal_cumulative[np.minimum(ranks, relevant_count) - 1]
    bonus = (beta * cumulative_gain + count) / (beta * cumulative_ideal + ranks)
    return float(np.sum(bonus[is_relevant])) / relevant_count


def r_measure(ranking, grades, *, beta: float = 1.0, gains=DEFAULT_GAINS) -> float:
    """Sakai's R-measure (Sakai 2004, seed 003, Eq. 16 and, with β, Eq. 18).

    Parameters
    ----------
    ranking : array_like of int
        Item indices, best first, each at most once.
    grades : array_like of int
        One grade per item: 0 = not relevant, g ≥ 1 relevant with gain ``gains[g - 1]``.
    beta : float
        Sakai's β ≥ 0; β = 1 gives Eq. 16, β = 0 gives R-precision.
    gains : sequence of float
        Gain of each grade, ``gains[g - 1]`` for grade g, all > 0; default gain(B, A, S) = (1, 2, 3).

    Returns
    -------
    float
        ``R-measure = (β·cg(R) + count(R)) / (β·cig(R) + R)``, with cg, count and cig as in
        ``q_measure`` and R the number of relevant items; a ranking shorter than R is padded with
        non-relevant positions. In [0, 1]. With binary relevance it equals R-precision (Eq. 19-22).

    Raises
    ------
    ValueError
        On invalid input, β < 0, a gain ≤ 0, a grade without a gain value, or no relevant item.

    Notes
    -----
    Seed 003's Eq. 24 (R-measure ≤ R-WP = cg(R)/cig(R)) holds for binary relevance only, like Eq. 23.
    """
    order, item_grades = _graded_inputs(ranking, grades, "R-measure")
    beta = _check_beta(beta)
    item_gains = _item_gains(item_grades, gains)
    relevant_count = int(np.count_nonzero(item_grades))
    top_gains = item_gains[order[:relevant_count]]
    cumulative_gain = float(top_gains.sum())
    count = int(np.count_nonzero(top_gains))
    cumulative_ideal = float(item_gains.sum())
    return (beta * cumulative_gain + count) / (beta * cumulative_ideal + relevant_count)


def retrieval_report(
    grades,
    k: int,
    *,
    ranking=None,
    scores=None,
    f_beta: float = 1.0,
    q_beta: float = 1.0,
    gains=DEFAULT_GAINS,
    discount: str = "seed",
) -> dict:
    """Every retrieval measure of one system output against one reference, at one cutoff k.

    Parameters
    ----------
    grades : array_like of int
        One grade per item, ≥ 0 (0 = outside the human top-K; 3/2/1 for S/A/B). Binary measures treat
        every grade ≥ 1 as relevant.
    k : int
        The cutoff, ≥ 1, for precision, recall, F, DCG and nDCG.
    ranking : array_like of int, optional
        Item indices, best first. Give exactly one of ``ranking`` and ``scores``.
    scores : array_like of float, optional
        One score per item, higher is better; turned into a ranking by ``ranking_from_scores`` (ties by
        item index).
    f_beta : float
        β of the F-measure (β, not trec_eval's β²).
    q_beta : float
        β of Q-measure and R-measure.
    gains : sequence of float
        Gain per grade for Q-measure and R-measure, default (1, 2, 3).
    discount : {"seed", "trec"}
        DCG discount, see ``dcg_at_k``.

    Returns
    -------
    dict
        Plain Python numbers and lists (JSON-ready): ``k``, ``item_count``, ``ranked_count``,
        ``relevant_count`` (R), ``precision_at_k``, ``recall_at_k``, ``f_measure_at_k`` (F_β of those
        two), ``average_precision``, ``r_precision``, ``bpref``, ``dcg_at_k``, ``ndcg_at_k``,
        ``reciprocal_rank`` (whole ranking), ``q_measure``, ``r_measure``, ``recall_levels`` and
        ``interpolated_precision`` (11 values each), and the conventions ``f_beta``, ``q_beta``,
        ``gains``, ``discount``.

    Raises
    ------
    ValueError
        If both or neither of ``ranking`` and ``scores`` are given, ``scores`` is not one per item, or
        any measure rejects its input.
    """
    if (ranking is None) == (scores is None):
        raise ValueError("give exactly one of ranking (item indices, best first) and scores (one per item)")
    item_grades = _check_grades(grades, "grades")
    if scores is not None:
        score_values = np.asarray(scores)
        if score_values.ndim != 1 or score_values.size != item_grades.size:
            raise ValueError(
                f"scores must hold one score per item: got shape {score_values.shape} "
                f"for {item_grades.size} items"
            )
        ranking = ranking_from_scores(score_values)
    order = _check_ranking(ranking, item_grades.size)
    precision = precision_at_k(order, item_grades, k)
    recall = recall_at_k(order, item_grades, k)
    recall_levels, interpolated = interpolated_precision_recall_curve(order, item_grades)
    return {
        "k": int(k),
        "item_count": int(item_grades.size),
        "ranked_count": int(order.size),
        "relevant_count": int(np.count_nonzero(item_grades)),
        "precision_at_k": precision,
        "recall_at_k": recall,
        "f_measure_at_k": f_measure(precision, recall, f_beta),
        "average_precision": average_precision(order, item_grades),
        "r_precision": r_precision(order, item_grades),
        "bpref": bpref(order, item_grades),
        "dcg_at_k": dcg_at_k(order, item_grades, k, discount=discount),
        "ndcg_at_k": ndcg_at_k(order, item_grades, k, discount=discount),
        "reciprocal_rank": reciprocal_rank(order, item_grades),
        "q_measure": q_measure(order, item_grades, beta=q_beta, gains=gains),
        "r_measure": r_measure(order, item_grades, beta=q_beta, gains=gains),
        "recall_levels": recall_levels.tolist(),
        "interpolated_precision": interpolated.tolist(),
        "f_beta": float(f_beta),
        "q_beta": float(q_beta),
        "gains": [float(gain) for gain in gains],
        "discount": discount,
    }


# --- internals ---------------------------------------------------------------------------------


def _check_grades(values, name: str) -> np.ndarray:
    """Whole numbers ≥ 0 (or bools), one per item, as int64."""
    array = np.asarray(values)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(
            f"{name} must be a non-empty one-dimensional array, one value per item, got shape {array.shape}"
        )
    if array.dtype == np.bool_:
        return array.astype(np.int64)
    if array.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be whole numbers ≥ 0 (0 = not relevant), got dtype {array.dtype}")
    bad = array < 0
    if array.dtype.kind == "f":
        bad |= ~np.isfinite(array) | (array != np.floor(array))
    if bad.any():
        first_bad = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name} must be whole numbers ≥ 0 (0 = not relevant); position {first_bad} holds {array[first_bad].item()!r}"
        )
    return array.astype(np.int64)


def _check_ranking(ranking, item_count: int) -> np.ndarray:
    order = np.asarray(ranking)
    if order.ndim != 1 or order.size == 0:
        raise ValueError(
            f"ranking must be a non-empty one-dimensional array of item indices, got shape {order.shape}"
        )
    if order.dtype.kind not in "iu":
        raise ValueError(
            f"ranking must hold integer item indices, best first, got dtype {order.dtype}; "
            "to rank items by their scores use ranking_from_scores(scores)"
        )
    outside = (order < 0) | (order >= item_count)
    if outside.any():
        first_bad = int(np.flatnonzero(outside)[0])
        raise ValueError(
            f"ranking position {first_bad} holds {int(order[first_bad])}, which is not an item index "
            f"(relevance is given for items 0 … {item_count - 1})"
        )
    order = order.astype(np.int64)
    seen_count = np.bincount(order, minlength=item_count)
    if seen_count.max() > 1:
        repeated = int(np.argmax(seen_count > 1))
        first, second = np.flatnonzero(order == repeated)[:2]
        raise ValueError(
            f"item {repeated} appears more than once in the ranking (positions {int(first)} and {int(second)})"
        )
    return order


def _check_cutoff(k) -> int:
    if isinstance(k, bool | np.bool_):
        raise ValueError(f"the cutoff k must be a whole number ≥ 1, got {k!r}")
    try:
        cutoff = operator.index(k)
    except TypeError:
        raise ValueError(f"the cutoff k must be a whole number ≥ 1, got {k!r}") from None
    if cutoff < 1:
        raise ValueError(f"the cutoff k must be ≥ 1, got {cutoff}")
    return cutoff


def _check_beta(beta) -> float:
    beta = float(beta)
    if not math.isfinite(beta) or beta < 0.0:
        raise ValueError(f"beta must be a finite number ≥ 0, got {beta!r}")
    return beta


def _require_relevant(item_grades: np.ndarray, measure: str) -> None:
    if not item_grades.any():
        raise ValueError(
            f"no item is relevant (every grade is 0): {measure} is undefined without relevant items; "
            "evaluate against a reference with at least one relevant item"
        )


def _binary_inputs(ranking, relevant, measure: str) -> tuple[np.ndarray, np.ndarray]:
    item_grades = _check_grades(relevant, "relevant")
    _require_relevant(item_grades, measure)
    return _check_ranking(ranking, item_grades.size), item_grades > 0


def _graded_inputs(ranking, grades, measure: str) -> tuple[np.ndarray, np.ndarray]:
    item_grades = _check_grades(grades, "grades")
    _require_relevant(item_grades, measure)
    return _check_ranking(ranking, item_grades.size), item_grades


def _item_gains(item_grades: np.ndarray, gains) -> np.ndarray:
    """Gain of each item: 0 for grade 0, ``gains[g - 1]`` for grade g."""
    gain_values = np.asarray(gains, dtype=np.float64)
    if gain_values.ndim != 1 or gain_values.size == 0:
        raise ValueError(f"gains must be a non-empty sequence, one gain per grade 1, 2, …; got {gains!r}")
    if not np.all(np.isfinite(gain_values) & (gain_values > 0.0)):
        raise ValueError(f"every gain must be a finite number > 0, got {gains!r}")
    top_grade = int(item_grades.max())
    if top_grade > gain_values.size:
        item = int(np.argmax(item_grades))
        raise ValueError(
            f"item {item} has grade {top_grade} but gains gives values for grades 1 … {gain_values.size} only; "
            f"pass gains with at least {top_grade} values"
        )
    return np.concatenate(([0.0], gain_values))[item_grades]


def _discounts(length: int, discount: str) -> np.ndarray:
    """The divisors' reciprocals 1/d(i) for ranks i = 1 … length."""
    if discount not in _DISCOUNTS:
        raise ValueError(f"discount must be one of {_DISCOUNTS}, got {discount!r}")
    ranks = np.arange(1, length + 1, dtype=np.float64)
    if discount == "seed":
        return 1.0 / np.log2(np.maximum(ranks, 2.0))  # rank 1 undiscounted, log2 i from rank 2 on
    return 1.0 / np.log2(ranks + 1.0)
