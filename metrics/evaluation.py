"""A model's ranking against a study's final ranking, with what the instrument can resolve.

PURE module: numpy, scipy and the standard library only.

* point values of ρ_w, τ_w (Lombardo et al., Eq. 8-9, weight offset n0), ρ and τ over the items the
  model covers, with R(n0), the first rank's share of the weight;
* retrieval measures (``metrics.ir``) with the human top-K of the covered items as relevant, graded
  S/A/B by equal-width bands of their human scores (S: the top third of the band [ȳ_K, ȳ_1], A: the
  middle third, B: the lowest third; gains 3/2/1 as in Sakai 2004);
* chance level: each of the four coefficients between unrelated rankings of the same size
  (``metrology.chance_level``: ρ_w and τ_w of Eq. 8, ρ and τ of Eq. 7 on the same random permutations)
  and the one-sided Monte Carlo p-value of the observed value, (1 + #{random ≥ observed}) / (1 + draws);
* intervals: every coefficient recomputed on bootstrap replicates of the human scores (the same
  replicates for every model of a study: a paired bootstrap); the interval is the value ± 1.96 times
  the replicates' standard deviation. Not the replicates' percentiles: a bootstrap replicate adds
  vote noise to a ranking that already has it, so every model correlates less with the replicates
  than with the observed ranking, and percentile intervals would sit below the value they qualify.
  The standard deviation carries the uncertainty without that shift;
* the leaderboard: paired differences between models on the shared replicates (where the shift
  cancels); a difference d whose interval d ± 1.96·SD(d*) excludes zero is significant;
  rank = 1 + the number of models significantly better (as Chatbot Arena ranks), rank range
  [rank, M - number significantly worse];
* agreement with each annotator (Welty et al., Tables 2-3): the share of an annotator's decisive
  votes whose chosen item the model scores higher, and paired t-tests between models across annotators.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from common.numbers import counted, finite_or_none, listed
from metrics.correlation import (
    first_rank_weight,
    kendall,
    kendall_rows,
    ranks_from_scores,
    ranks_from_scores_rows,
    spearman,
    spearman_rows,
    weighted_kendall,
    weighted_kendall_rows,
    weighted_spearman,
    weighted_spearman_rows,
)
from metrics.ir import retrieval_report
from metrics.metrology import permutation_p_value

__all__ = [
    "CHANCE_P",
    "COEFFICIENTS",
    "annotator_agreement",
    "chance_sentence",
    "chance_summary",
    "chance_verdict",
    "coefficient_replicates",
    "coefficients_by_stratum",
    "evaluate",
    "variant_adjusted_interval",
    "graded_relevance",
    "indistinguishable_groups",
    "leaderboard",
    "undefined_reason",
    "undefined_summary",
]

COEFFICIENTS = ("rho_w", "tau_w", "rho", "tau")
SYMBOLS = {"rho_w": "ρ_w", "tau_w": "τ_w", "rho": "ρ", "tau": "τ"}

# Why a coefficient has no value: σ or Z of Eq. 7 is 0, so Γ divides by nothing.
CONSTANT_SCORES = "every score is the same, so the scores rank nothing"
CONSTANT_HUMAN = "every item has the same final score, so the people's ranking ranks nothing"
LOPSIDED_WEIGHTS = "at this n0 the first rank takes so nearly all the weight that 64-bit floats lose the others"


def undefined_reason(name: str, why: str) -> str:
    """The sentence that reports coefficient ``name`` as undefined: "ρ_w is undefined: <why>"."""
    return f"{SYMBOLS[name]} is undefined: {why}"


def undefined_summary(entries: dict) -> list[str]:
    """One sentence per reason for the undefined coefficients among ``entries`` (name → entry, as
    ``evaluate`` gives them): "ρ_w, τ_w, ρ and τ are undefined: every score is the same, …"."""
    symbols_by_why: dict[str, list[str]] = {}
    for name in COEFFICIENTS:
        sentence = (entries.get(name) or {}).get("undefined")
        if sentence:
            why = sentence.removeprefix(undefined_reason(name, ""))
            symbols_by_why.setdefault(why, []).append(SYMBOLS[name])
    return [
        f"{listed(symbols)} {'is' if len(symbols) == 1 else 'are'} undefined: {why}"
        for why, symbols in symbols_by_why.items()
    ]


# At chance, in words: a figure is above chance when at most this share of the random rankings of the
# chance column score as high (p ≤ 0.05), below chance when at least 1 − it do (p ≥ 0.95: the bottom 5% of
# what random orders reach), and at chance in between, the central 90%.
CHANCE_P = 0.05


def chance_verdict(entry: dict) -> str | None:
    """Whether a coefficient ``entry`` of ``evaluate`` (or of a leaderboard standing) is "above", "at" or
    "below" chance, from its one-sided permutation p-value p = (1 + #{random ≥ value}) / (1 + draws):
    above when p ≤ ``CHANCE_P``, below when p ≥ 1 − ``CHANCE_P``, at chance otherwise; None without a
    value or a p."""
    p_value = entry.get("p_value")
    if entry.get("value") is None or p_value is None:
        return None
    if p_value <= CHANCE_P:
        return "above"
    return "below" if p_value >= 1 - CHANCE_P else "at"


def chance_sentence(name: str, entry: dict) -> str | None:
    """The sentence that says coefficient ``name`` is at or below chance ("τ_w = -0.541 is at chance: p =
    0.634, …"); None above chance or without a verdict (``chance_verdict``)."""
    verdict = chance_verdict(entry)
    if verdict not in ("at", "below"):
        return None
    meaning = (
        "it does not tell the model from a random order"
        if verdict == "at"
        else "the model orders the items against the people's ranking"
    )
    p_value = entry["p_value"]
    return (
        f"{SYMBOLS[name]} = {entry['value']:.3f} is {verdict} chance: p = {p_value:.3f}, so "
        f"{100 * p_value:.1f}% of random rankings of these items score at least as high; {meaning}"
    )


def chance_summary(entries: dict) -> list[str]:
    """One sentence per coefficient among ``entries`` (name → entry) at or below chance, in the order of
    ``COEFFICIENTS``."""
    sentences = (chance_sentence(name, entries[name]) for name in COEFFICIENTS if name in entries)
    return [sentence for sentence in sentences if sentence]


def _why_undefined(model_ranks: np.ndarray, human_ranks: np.ndarray) -> str:
    """Why a coefficient of these rankings is NaN: a constant ranking (σ = 0, Eq. 7), else weights too
    lopsided for 64-bit floats (an n0 near -1)."""
    if model_ranks.min() == model_ranks.max():
        return CONSTANT_SCORES
    if human_ranks.min() == human_ranks.max():
        return CONSTANT_HUMAN
    return LOPSIDED_WEIGHTS


def graded_relevance(human_score: np.ndarray, top_k: int) -> np.ndarray:
    """Grades 3/2/1 (S/A/B) for the human top-K items by equal-width score bands, 0 for the rest.

    The top-K are the K highest human scores (ties at the boundary broken by item index, lower
    first). Their score range [ȳ_K, ȳ_1] is cut in three equal bands; a range of zero gives all S.
    """
    human_score = np.asarray(human_score, dtype=np.float64)
    n = human_score.size
    if not 1 <= top_k <= n:
        raise ValueError(f"K must lie between 1 and the {n} evaluated items, got {top_k}")
    order = np.lexsort((np.arange(n), -human_score))
    top = order[:top_k]
    grades = np.zeros(n, dtype=np.int64)
    high, low = human_score[top[0]], human_score[top[-1]]
    if high == low:
        grades[top] = 3
        return grades
    position = (human_score[top] - low) / (high - low)  # 0 at ȳ_K, 1 at ȳ_1
    grades[top] = np.where(position >= 2 / 3, 3, np.where(position >= 1 / 3, 2, 1))
    return grades


def _point_values(model_ranks: np.ndarray, human_ranks: np.ndarray, weight_offset: float) -> dict:
    return {
        "rho_w": weighted_spearman(model_ranks, human_ranks, weight_offset),
        "tau_w": weighted_kendall(model_ranks, human_ranks, weight_offset),
        "rho": spearman(model_ranks, human_ranks),
        "tau": kendall(model_ranks, human_ranks),
    }


def coefficient_replicates(
    model_ranks: np.ndarray, human_replicates: np.ndarray, weight_offset: float
) -> dict[str, np.ndarray]:
    """The four coefficients of one model against every bootstrap replicate of the human scores.

    ``human_replicates`` is R × n (the covered items only); each row is turned into ranks first.
    ρ_w and τ_w use the row-wise implementations; ρ and τ are their uniform-weight cases.
    """
    human_ranks = ranks_from_scores_rows(human_replicates)
    return {
        "rho_w": weighted_spearman_rows(model_ranks, human_ranks, weight_offset),
        "tau_w": weighted_kendall_rows(model_ranks, human_ranks, weight_offset),
        "rho": spearman_rows(model_ranks, human_ranks),
        "tau": kendall_rows(model_ranks, human_ranks),
    }


Z_95 = 1.959963984540054  # the standard normal's 97.5% quantile


def _standard_error(values: np.ndarray) -> float | None:
    finite = np.asarray(values, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    return float(finite.std(ddof=1)) if finite.size >= 2 else None


def _interval(center: float | None, values: np.ndarray, *, bounded: bool = True) -> list[float] | None:
    """center ± 1.96·SD of the replicate values (clipped to [-1, 1] for a coefficient)."""
    error = _standard_error(values)
    if center is None or error is None:
        return None
    low, high = center - Z_95 * error, center + Z_95 * error
    if bounded:
        low, high = max(-1.0, low), min(1.0, high)
    return [float(low), float(high)]


def variant_adjusted_interval(center: float | None, values, variants: int) -> list[float] | None:
    """The 95% interval widened for an owner's ``variants`` models (Bonferroni): center ± z·SD of the
    replicate values, z the standard normal's 1 - 0.025/variants quantile (1.96 for one model, 2.58 for
    five), clipped to [-1, 1].

    An owner who tries m variants and shows the best has m chances to land high by chance ("The
    Leaderboard Illusion", Singh et al. 2025); the family-wise 95% level over the m intervals keeps one
    owner's best variant from reading as better than it is.
    """
    if variants < 1:
        raise ValueError(f"variants must be at least 1, got {variants}")
    error = _standard_error(np.asarray(values, dtype=np.float64))
    if center is None or error is None:
        return None
    z = NormalDist().inv_cdf(1.0 - 0.025 / variants)
    return [float(max(-1.0, center - z * error)), float(min(1.0, center + z * error))]


def evaluate(
    model_score,
    human_score,
    *,
    weight_offset: float = 2.0,
    top_k: int,
    human_replicates: np.ndarray | None = None,
    chance: dict | None = None,
) -> dict:
    """Evaluate a model's scores against the human final scores ȳ (both over the study's items).

    Items without a model score (NaN) or without a human score are left out; the coverage is
    reported. ``human_replicates`` (R × N bootstrap replicates of ȳ) adds 95% intervals and the
    replicate values (for the leaderboard); ``chance`` (from ``metrology.chance_level`` for the
    covered size and this n0) adds the chance mean, SD and p-value of every coefficient it has draws
    of (ρ_w, τ_w, ρ and τ): p = (1 + #{draws ≥ observed}) / (1 + draws), ``metrology.permutation_p_value``.

    A coefficient without a value (σ or Z of Eq. 7 is 0: a ranking that puts every item on one rank) has
    ``value`` None and ``undefined``, the sentence that says why; its interval and p-value are None.
    """
    model_score = np.asarray(model_score, dtype=np.float64)
    human_score = np.asarray(human_score, dtype=np.float64)
    if model_score.shape != human_score.shape:
        raise ValueError("the model must score the same items as the study")
    covered = np.isfinite(model_score) & np.isfinite(human_score)
    count = int(covered.sum())
    if count < 2:
        raise ValueError(
            f"only {counted(count, 'item')} {'has' if count == 1 else 'have'} both a model and a human score; at least two are needed"
        )
    model_ranks = ranks_from_scores(model_score[covered])
    human_ranks = ranks_from_scores(human_score[covered])
    k = min(top_k, count)
    grades = graded_relevance(human_score[covered], k)

    result: dict = {
        "items": int(model_score.size),
        "covered": count,
        "coverage": count / model_score.size,
        "weight_offset": weight_offset,
        "first_rank_weight": first_rank_weight(weight_offset),
        "top_k": k,
        "grade_counts": {
            "S": int((grades == 3).sum()),
            "A": int((grades == 2).sum()),
            "B": int((grades == 1).sum()),
        },
        "retrieval": retrieval_report(grades, k, scores=model_score[covered]),
    }
    points = _point_values(model_ranks, human_ranks, weight_offset)
    replicates = None
    if human_replicates is not None:
        # An item that drew no vote in a replicate (rare: all its votes left out) keeps its observed score.
        filled = np.asarray(human_replicates, dtype=np.float64)[:, covered]
        filled = np.where(np.isfinite(filled), filled, human_score[covered][None, :])
        replicates = coefficient_replicates(model_ranks, filled, weight_offset)
        result["replicates"] = {name: values.tolist() for name, values in replicates.items()}
        result["replicate_count"] = int(np.asarray(human_replicates).shape[0])
    for name in COEFFICIENTS:
        entry = {"value": finite_or_none(points[name])}
        if entry["value"] is None:
            entry["undefined"] = undefined_reason(name, _why_undefined(model_ranks, human_ranks))
        if replicates is not None:
            entry["standard_error"] = _standard_error(replicates[name])
            entry["interval"] = _interval(entry["value"], replicates[name])
        if chance is not None and name in chance:
            entry["chance_mean"] = chance[name]["mean"]
            entry["chance_sd"] = chance[name]["sd"]
            entry["p_value"] = (
                permutation_p_value(points[name], chance[name]["draws"])
                if entry["value"] is not None
                else None
            )
        result[name] = entry
    return result


def coefficients_by_stratum(
    model_score,
    human_score,
    strata,
    *,
    weight_offset: float = 2.0,
    human_replicates: np.ndarray | None = None,
) -> dict:
    """ρ_w, τ_w, ρ and τ (Eq. 7-9) restricted to the items of each stratum (semantic area), by label.

    Within a stratum both rankings are re-ranked over its covered items only (rank 1 = the area's
    first), so ρ_w and τ_w weigh the area's own top. With ``human_replicates`` (R × N, the study's
    shared bootstrap replicates) each coefficient gets its standard error and the 95% interval
    value ± 1.96·SE, as ``evaluate`` gives them. A stratum with fewer than two covered items has
    no values. Per label: ``items``, ``covered`` and one entry per coefficient; an undefined one has
    ``value`` None and ``undefined``, the reason.
    """
    model_score = np.asarray(model_score, dtype=np.float64)
    human_score = np.asarray(human_score, dtype=np.float64)
    strata = np.asarray(strata)
    if not (model_score.shape == human_score.shape == strata.shape):
        raise ValueError("the model, the human scores and the strata must cover the same items")
    scored = np.isfinite(model_score) & np.isfinite(human_score)
    result = {}
    for label in np.unique(strata).tolist():  # a loop over areas; the items are arrays
        inside = strata == label
        covered = inside & scored
        count = int(covered.sum())
        entry: dict = {"items": int(inside.sum()), "covered": count}
        if count < 2:
            few = f"only {counted(count, 'item')} {'has' if count == 1 else 'have'} both scores here; it needs two"
            result[label] = entry | {
                name: {"value": None, "undefined": undefined_reason(name, few)} for name in COEFFICIENTS
            }
            continue
        model_ranks = ranks_from_scores(model_score[covered])
        human_ranks = ranks_from_scores(human_score[covered])
        points = _point_values(model_ranks, human_ranks, weight_offset)
        replicates = None
        if human_replicates is not None:
            filled = np.asarray(human_replicates, dtype=np.float64)[:, covered]
            filled = np.where(np.isfinite(filled), filled, human_score[covered][None, :])
            replicates = coefficient_replicates(model_ranks, filled, weight_offset)
        for name in COEFFICIENTS:
            value = finite_or_none(points[name])
            entry[name] = {"value": value}
            if value is None:
                entry[name]["undefined"] = undefined_reason(name, _why_undefined(model_ranks, human_ranks))
            if replicates is not None:
                entry[name]["standard_error"] = _standard_error(replicates[name])
                entry[name]["interval"] = _interval(value, replicates[name])
        result[label] = entry
    return result


def leaderboard(entries: list[dict], metric: str) -> list[dict]:
    """Rank models by ``metric`` with paired-bootstrap significance (Chatbot-Arena style ranks).

    ``entries`` hold ``name``, ``value`` and ``replicates`` (the metric on the study's shared
    bootstrap replicates, index-aligned across models). For every pair of models the difference of
    their values d gets the interval d ± 1.96·SD(d*), d* the differences replicate by replicate;
    when it excludes zero the better model is significantly better. Each row gets ``rank`` = 1 + the number of models significantly better,
    ``rank_range`` = [rank, M - number significantly worse], and ``indistinguishable_from``: the
    models whose difference interval contains zero.

    A model whose value is undefined (None) is compared with none: it comes last, with ``rank``,
    ``rank_range`` and ``interval`` None, and M counts the models with a value.
    """
    if metric not in COEFFICIENTS:
        raise ValueError(f"metric must be one of {', '.join(COEFFICIENTS)}, got {metric!r}")
    count = len(entries)
    defined = [entry["value"] is not None for entry in entries]
    ranked = sum(defined)
    better = np.zeros((count, count), dtype=bool)  # better[i, j]: i significantly better than j
    for i, j in ((i, j) for i in range(count) for j in range(count) if i != j and defined[i] and defined[j]):
        a = np.asarray(entries[i]["replicates"], dtype=np.float64)  # a stored null reads as NaN
        b = np.asarray(entries[j]["replicates"], dtype=np.float64)
        if a.size == 0 or a.size != b.size:
            continue
        interval = _interval(entries[i]["value"] - entries[j]["value"], a - b, bounded=False)
        better[i, j] = interval is not None and interval[0] > 0
    rows = []
    for i, entry in enumerate(entries):
        if not defined[i]:
            rows.append(
                {
                    "name": entry["name"],
                    "value": None,
                    "interval": None,
                    "rank": None,
                    "rank_range": None,
                    "indistinguishable_from": [],
                }
            )
            continue
        significantly_better = int(better[:, i].sum())
        significantly_worse = int(better[i, :].sum())
        replicates = np.asarray(entry["replicates"], dtype=np.float64)
        rows.append(
            {
                "name": entry["name"],
                "value": entry["value"],
                "interval": _interval(entry["value"], replicates) if replicates.size else None,
                "rank": 1 + significantly_better,
                "rank_range": [1 + significantly_better, ranked - significantly_worse],
                "indistinguishable_from": [
                    entries[j]["name"]
                    for j in range(count)
                    if j != i and defined[j] and not better[i, j] and not better[j, i]
                ],
            }
        )
    rows.sort(
        key=lambda row: (
            row["rank"] is None,
            row["rank"] or 0,
            -(row["value"] if row["value"] is not None else -math.inf),
            row["name"],
        )
    )
    return rows


def indistinguishable_groups(rows: list[dict]) -> list[int]:
    """Groups of models that cannot be told apart, for the leaderboard's plot: one group index per row.

    ``rows`` are the leaderboard's rows in its order (``leaderboard``), each with ``name`` and
    ``indistinguishable_from``. Walking down the order, a row joins the current group when it cannot
    be told apart from every model already in it (the difference interval of each pair contains zero),
    else it starts the next group. So every group is a run of consecutive rows whose every pair is
    indistinguishable; a model that stands apart is a group of its own. (Being indistinguishable is not
    transitive: A ~ B and B ~ C with A better than C puts C in a group after A's.)
    """
    groups: list[int] = []
    members: list[str] = []
    for row in rows:
        ties = set(row["indistinguishable_from"])
        if groups and all(member in ties for member in members):
            members.append(row["name"])
            groups.append(groups[-1])
        else:
            members = [row["name"]]
            groups.append(groups[-1] + 1 if groups else 0)
    return groups


def annotator_agreement(
    model_scores: dict[str, np.ndarray], chosen, rejected, annotator, annotator_count: int
) -> dict:
    """Each model's agreement with each annotator's votes, and paired tests across annotators.

    A decisive vote prefers item ``chosen`` to item ``rejected``; the model agrees when it scores
    the chosen item higher (a tie in the model's scores counts one half; a vote on an item the model
    does not score is left out). Per model: the agreement of every annotator (NaN without usable
    votes) and its min, max, mean and SD over annotators (Welty et al., Table 2). Per pair of
    models: a two-sided paired t-test over the annotators both can be scored on (Table 3).
    """
    chosen = np.asarray(chosen, dtype=np.int64)
    rejected = np.asarray(rejected, dtype=np.int64)
    annotator = np.asarray(annotator, dtype=np.int64)
    per_model = {}
    for name, score in model_scores.items():
        score = np.asarray(score, dtype=np.float64)
        usable = np.isfinite(score[chosen]) & np.isfinite(score[rejected])
        agree = np.where(
            score[chosen] > score[rejected], 1.0, np.where(score[chosen] == score[rejected], 0.5, 0.0)
        )
        votes = np.bincount(annotator[usable], minlength=annotator_count).astype(float)
        agreed = np.bincount(annotator[usable], weights=agree[usable], minlength=annotator_count)
        per_annotator = np.divide(agreed, votes, out=np.full(annotator_count, np.nan), where=votes > 0)
        finite = per_annotator[np.isfinite(per_annotator)]
        per_model[name] = {
            "per_annotator": per_annotator,
            "min": float(finite.min()) if finite.size else None,
            "max": float(finite.max()) if finite.size else None,
            "mean": float(finite.mean()) if finite.size else None,
            "sd": float(finite.std(ddof=1)) if finite.size > 1 else None,
            "annotators": int(finite.size),
        }
    tests = []
    names = list(model_scores)
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            a, b = per_model[first]["per_annotator"], per_model[second]["per_annotator"]
            both = np.isfinite(a) & np.isfinite(b)
            if both.sum() < 2 or np.all(a[both] == b[both]):
                statistic, p_value = (0.0, 1.0) if both.sum() >= 2 else (None, None)
            else:
                from scipy import stats  # here, not at import: web workers need not load scipy

                statistic, p_value = stats.ttest_rel(a[both], b[both])
            tests.append(
                {
                    "first": first,
                    "second": second,
                    "annotators": int(both.sum()),
                    "t_statistic": finite_or_none(statistic),
                    "p_value": finite_or_none(p_value),
                }
            )
    return {"models": per_model, "paired_tests": tests}
