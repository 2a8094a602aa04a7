"""What the instrument can resolve: precision, repeatability, reproducibility, resolution, chance.

PURE module: numpy, scipy and the standard library only; randomness comes in as a
``numpy.random.Generator``.

A study is a measuring instrument (Welty, Paritosh and Aroyo, "Metrology for AI: From Benchmarks to
Instruments", §5): its indication is the score ȳ of every item (Lombardo et al., Eq. 5), computed
from the votes of its ballots. Everything here re-runs the score computation of Eq. 1, 5 and 6 on
re-weighted votes (a bootstrap resample, one half of the annotators) with the ballots' design held
fixed: which items each ballot held is what the study did, and only the votes are resampled.

* precision (Welty §5.6): per-item standard deviation of ȳ under a bootstrap of the votes within
  each ballot, percentile intervals, and their mean;
* repeatability (§5.7): split-half reliability over annotators with the Spearman-Brown correction,
  and the data for Krippendorff's α over item pairs judged by several annotators;
* reproducibility (§5.8): agreement of two studies of the same items;
* resolution (§5.9): agreement between the vote majority on compared item pairs and the order of
  their scores, as a function of the score difference; the smallest difference with 95% agreement;
* chance level of ρ_w and τ_w between unrelated rankings (Lombardo 2025, "Standardization of
  Weighted Ranking Correlation Coefficients", arXiv 2504.08428): they do not average zero.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from metrics.correlation import (
    kendall_rows,
    ranks_from_scores,
    spearman,
    spearman_rows,
    weighted_kendall_rows,
    weighted_spearman,
    weighted_spearman_rows,
)

_DRAW_BLOCK = 1_000_000  # bootstrap draws generated and tallied at a time

__all__ = [
    "BallotVotes",
    "bootstrap_scores",
    "chance_level",
    "pair_value_counts",
    "permutation_p_value",
    "precision_summary",
    "replicate_scores",
    "reproducibility",
    "resolution",
    "half_ranking_scores",
    "spearman_brown",
    "split_half_reliability",
    "split_halves",
]


@dataclass(frozen=True)
class BallotVotes:
    """The design and the votes of one closed ballot, as item indices of the study.

    ``outcome`` is 1 when the left item won, 0 when the right item won, 0.5 for a tie;
    ``annotator`` numbers the annotators 0 … A-1 across the study.
    """

    items: np.ndarray
    left: np.ndarray
    right: np.ndarray
    outcome: np.ndarray
    annotator: np.ndarray

    @property
    def vote_count(self) -> int:
        return int(self.left.size)


def replicate_scores(
    ballots: list[BallotVotes], item_count: int, multiplicities: list[np.ndarray]
) -> np.ndarray:
    """Scores ȳ after the last of ``ballots`` for R re-weightings of the votes (Eq. 1, 5, 6).

    ``multiplicities[k]`` is an R × V_k array: how many times each vote of ballot k counts in each
    replicate (a bootstrap count, or 0/1 for a subset of annotators). For every replicate r, as in
    ``scoring.borda.score_ballot``: ``x = (wins + ties/2)/appearances`` over the counted votes
    (Eq. 1); ``y(1) = x(1)``; for k > 1 ``y = 1 - b + b·x`` with
    ``b = Σ(1-x)(1-ȳ(k-1)) / Σ(1-x)²`` over the items of ballot k that have both (Eq. 6), b = 1 when
    the denominator vanishes; ``ȳ`` is the mean of y over the ballots in which the item got a counted
    vote (Eq. 5). Items never measured in a replicate have ȳ = NaN.

    Returns an R × N array of ȳ.
    """
    import metrics.kernels as kernels  # on first use: numba stays out of processes that never need it

    replicates = multiplicities[0].shape[0]
    score = np.full((replicates, item_count), np.nan)
    measured = np.zeros((replicates, item_count))
    for number, (ballot, counts) in enumerate(zip(ballots, multiplicities, strict=True), start=1):
        counts = np.ascontiguousarray(counts, dtype=np.float64)
        if counts.shape != (replicates, ballot.vote_count):
            raise ValueError(f"ballot {number}: multiplicities must be {replicates} × {ballot.vote_count}")
        columns, left, right, outcome = _ballot_columns(ballot)
        points = np.zeros((replicates, columns.size))
        appearances = np.zeros((replicates, columns.size))
        kernels.vote_tallies(counts, left, right, outcome, points, appearances)
        kernels.ballot_scores(columns, points, appearances, score, measured, number == 1)
    return score


def _ballot_columns(ballot: BallotVotes):
    """The items that drew a vote in the ballot, and each vote's left and right item as a column of
    them (only these items' scores change with the ballot), with the outcomes as float64."""
    columns, sides = np.unique(np.concatenate([ballot.left, ballot.right]), return_inverse=True)
    votes = ballot.vote_count
    return (
        columns.astype(np.int64),
        np.ascontiguousarray(sides[:votes], dtype=np.int64),
        np.ascontiguousarray(sides[votes:], dtype=np.int64),
        np.ascontiguousarray(ballot.outcome, dtype=np.float64),
    )


def bootstrap_scores(
    ballots: list[BallotVotes],
    item_count: int,
    rng: np.random.Generator,
    replicates: int = 1000,
    *,
    strata: np.ndarray | None = None,
) -> np.ndarray:
    """R × N bootstrap replicates of ȳ: the votes of every ballot resampled with replacement.

    Each replicate draws V_k votes from the V_k votes of ballot k (a nonparametric bootstrap
    stratified by ballot), then scores them as ``replicate_scores`` does (Eq. 1, 5, 6), with the
    bootstrap counts as multiplicities. The draws are those of ``rng.integers(0, V_k, (R, V_k))``
    ballot after ballot, taken in blocks of replicates (the generator's stream does not depend on the
    block size) and counted by the compiled ``metrics.kernels.bootstrap_tallies``, so that no R × V_k
    array is built; a second thread counts a block while the next is drawn.

    ``strata`` (the semantic area of each item) scores each stratum as its own chain, as a study ranked
    per area is scored (``scoring.borda.score_ballot_by_stratum``): b(k) of Eq. 6 fitted per area.
    The draws, and so the resampled votes, are the same with or without it.
    """
    if replicates < 1:
        raise ValueError(f"replicates must be at least 1, got {replicates}")
    import metrics.kernels as kernels  # on first use, as in replicate_scores

    score = np.full((replicates, item_count), np.nan)
    measured = np.zeros((replicates, item_count))
    # The compiled tallies release the GIL: one thread counts a block of draws while this one draws
    # the next (the draws stay in the generator's order, so the replicates do not change).
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="metrics-tallies") as counter:
        for number, ballot in enumerate(ballots, start=1):
            columns, left, right, outcome = _ballot_columns(ballot)
            points = np.zeros((replicates, columns.size))
            appearances = np.zeros((replicates, columns.size))
            votes = ballot.vote_count
            block = max(1, _DRAW_BLOCK // max(votes, 1))  # about 8 MB of draws at a time
            counting = None
            for start in range(0, replicates if votes else 0, block):
                # int32 draws are the same numbers as the default int64 ones (numpy draws 32 bits for
                # a range below 2^32 either way), in half the memory.
                draws = rng.integers(0, votes, size=(min(block, replicates - start), votes), dtype=np.int32)
                if counting is not None:
                    counting.result()  # at most two blocks of draws held at a time
                counting = counter.submit(
                    kernels.bootstrap_tallies, draws, left, right, outcome, start, points, appearances
                )
            if counting is not None:
                counting.result()
            if strata is None:
                kernels.ballot_scores(columns, points, appearances, score, measured, number == 1)
                continue
            column_strata = np.asarray(strata)[columns]
            for label in np.unique(column_strata):  # a loop over areas
                inside = column_strata == label
                kernels.ballot_scores(
                    columns[inside],
                    np.ascontiguousarray(points[:, inside]),
                    np.ascontiguousarray(appearances[:, inside]),
                    score,
                    measured,
                    number == 1,
                )
    return score


def precision_summary(replicates: np.ndarray, level: float = 0.95) -> dict:
    """Per-item standard deviation and percentile interval of ȳ from bootstrap replicates (Welty §5.6).

    Returns arrays ``sd`` (ddof = 1), ``lower`` and ``upper`` (the (1-level)/2 and (1+level)/2
    percentiles, NaN-aware) and the scalar ``mean_sd`` over items with a finite sd: the mean standard
    error of the scores.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}")
    finite_count = np.isfinite(replicates).sum(axis=0)
    enough = finite_count >= 2
    safe = np.where(np.isfinite(replicates), replicates, 0.0)
    mean = safe.sum(axis=0) / np.maximum(finite_count, 1)
    squares = np.where(np.isfinite(replicates), (replicates - mean) ** 2, 0.0).sum(axis=0)
    sd = np.where(enough, np.sqrt(squares / np.maximum(finite_count - 1, 1)), np.nan)
    alpha = (1.0 - level) / 2.0
    with np.errstate(all="ignore"):
        lower, upper = np.nanquantile(np.where(enough, replicates, 0.0), [alpha, 1.0 - alpha], axis=0)
    lower = np.where(enough, lower, np.nan)
    upper = np.where(enough, upper, np.nan)
    return {
        "sd": sd,
        "lower": lower,
        "upper": upper,
        "mean_sd": float(np.nanmean(sd)) if enough.any() else None,
    }


def spearman_brown(half_correlation: float) -> float:
    """Reliability of the full instrument from the correlation r between halves: 2r / (1 + r)."""
    r = float(half_correlation)
    if r <= -1.0:
        return -1.0
    return 2.0 * r / (1.0 + r)


def split_halves(annotator_count: int, rng: np.random.Generator, splits: int) -> np.ndarray:
    """``splits`` × A booleans: True for the annotators of the first half of each split, a random
    ⌊A/2⌋ of them (one ``rng.permutation(A)`` per split, in order)."""
    halves = np.zeros((splits, annotator_count), dtype=bool)
    for split in range(splits):  # a loop over splits, not votes
        halves[split, rng.permutation(annotator_count)[: annotator_count // 2]] = True
    return halves


def half_ranking_scores(
    ballots: list[BallotVotes], item_count: int, multiplicities: list[np.ndarray]
) -> np.ndarray:
    """R × N keys that rank each re-weighting of the votes by (last ballot reached, ȳ): the scores of
    ``replicate_scores`` (Eq. 1, 5, 6) plus 10 per ballot the item reached (NaN: not measured)."""
    reached = np.zeros(item_count)
    for number, ballot in enumerate(ballots, start=1):
        reached[ballot.items] = number
    # Scores stay within a few units of [0, 1] (Eq. 6: y ≤ 1 since b ≥ 0); 10 per ballot keeps tiers apart.
    return replicate_scores(ballots, item_count, multiplicities) + 10.0 * reached


def split_half_reliability(
    ballots: list[BallotVotes],
    item_count: int,
    annotator_count: int,
    rng: np.random.Generator,
    splits: int = 100,
    weight_offset: float = 2.0,
) -> dict:
    """Split-half reliability over annotators (Welty §5.7): repeat ``splits`` times, split the
    annotators at random into two halves, score the items from each half's votes alone, and
    correlate the two rankings (Spearman ρ and ρ_w) over the items both halves measured.

    The ballots' design is held fixed, and so is the ballot each item reached: each half ranks its
    items by (last ballot reached, ȳ of the half). Ranking by ȳ alone would let an item dropped in
    ballot 1, scored by a handful of lucky votes in one half, top that half's ranking — noise the
    study's own ranking does not have, since it dropped that item on all of its votes. The ballot-1
    scores x(1), which every item has and which no selection preceded, are also correlated between
    the halves (``ballot_one_rho``): an unconditional check of the first, uniform stage.

    Returns the mean and SD over splits of ρ and ρ_w (and of ρ on x(1)), their Spearman-Brown
    corrections (reliability of the full crowd) and the per-split values.
    """
    if annotator_count < 2:
        raise ValueError("split-half reliability needs at least two annotators")
    if splits < 1:
        raise ValueError(f"splits must be at least 1, got {splits}")
    halves = split_halves(annotator_count, rng, splits)
    first = [halves[:, ballot.annotator].astype(np.float64) for ballot in ballots]
    second = [1.0 - m for m in first]
    scores_first = half_ranking_scores(ballots, item_count, first)
    scores_second = half_ranking_scores(ballots, item_count, second)
    first_ballot = replicate_scores(ballots[:1], item_count, first[:1])
    second_ballot = replicate_scores(ballots[:1], item_count, second[:1])
    rho = np.full(splits, np.nan)
    rho_w = np.full(splits, np.nan)
    ballot_one_rho = np.full(splits, np.nan)
    for split in range(splits):
        both = np.isfinite(scores_first[split]) & np.isfinite(scores_second[split])
        if both.sum() >= 3:
            ranks_first = ranks_from_scores(scores_first[split, both])
            ranks_second = ranks_from_scores(scores_second[split, both])
            rho[split] = spearman(ranks_first, ranks_second)
            rho_w[split] = weighted_spearman(ranks_first, ranks_second, weight_offset)
        both = np.isfinite(first_ballot[split]) & np.isfinite(second_ballot[split])
        if both.sum() >= 3:
            ballot_one_rho[split] = spearman(
                ranks_from_scores(first_ballot[split, both]), ranks_from_scores(second_ballot[split, both])
            )
    result = {"splits": splits, "rho_per_split": rho, "rho_w_per_split": rho_w}
    for name, values in (("rho", rho), ("rho_w", rho_w), ("ballot_one_rho", ballot_one_rho)):
        finite = values[np.isfinite(values)]
        mean = float(finite.mean()) if finite.size else None
        result[name] = {
            "mean": mean,
            "sd": float(finite.std(ddof=1)) if finite.size > 1 else None,
            "spearman_brown": spearman_brown(mean) if mean is not None else None,
        }
    return result


def pair_value_counts(pair_low, pair_high, winner_is_low) -> tuple[np.ndarray, np.ndarray]:
    """Units and category counts for Krippendorff's α over item pairs (Welty §5.7).

    A unit is an unordered pair of items; each vote on it is one value: the lower-index item won
    (category 0), the higher-index item won (1), or a tie (2). Returns the unit keys (pairs judged
    by at least two votes) and their counts per category, the ``value_counts`` input of the
    ``krippendorff`` package.
    """
    low = np.asarray(pair_low, dtype=np.int64)
    high = np.asarray(pair_high, dtype=np.int64)
    winner = np.asarray(winner_is_low, dtype=np.float64)
    category = np.where(winner == 1.0, 0, np.where(winner == 0.0, 1, 2))
    keys = low * (int(max(high.max(initial=0), low.max(initial=0))) + 1) + high
    units, unit_index = np.unique(keys, return_inverse=True)
    counts = np.zeros((units.size, 3), dtype=np.int64)
    np.add.at(counts, (unit_index, category), 1)
    repeated = counts.sum(axis=1) >= 2
    return units[repeated], counts[repeated]


def resolution(pair_low, pair_high, winner_is_low, score, target: float = 0.95) -> dict:
    """The instrument's resolution (Welty §5.9): the smallest score difference at which the vote
    majority on compared item pairs agrees with the score order ``target`` of the time.

    For every pair of items that annotators compared, the majority of its votes (lower-index item,
    higher-index item, or no majority: a tie vote or an even split) is set against the order of the
    two items' scores ȳ. At threshold t the agreement is the share of pairs with score difference
    |Δȳ| ≥ t whose majority prefers the higher-scored item (a pair without a majority disagrees, as
    Welty counts "equally similar" against the instrument). The resolution is the smallest t at which
    the agreement reaches ``target``; also returned: the curve (t, agreement, pairs counted), and how
    many of all N(N-1)/2 item pairs lie at least that far apart, counted in O(N log N).
    """
    low = np.asarray(pair_low, dtype=np.int64)
    high = np.asarray(pair_high, dtype=np.int64)
    winner = np.asarray(winner_is_low, dtype=np.float64)
    score = np.asarray(score, dtype=np.float64)
    if not (low.shape == high.shape == winner.shape):
        raise ValueError("pair_low, pair_high and winner_is_low must have one entry per vote")
    keys = low * score.size + high
    units, unit_index = np.unique(keys, return_inverse=True)
    low_votes = np.bincount(unit_index, weights=(winner == 1.0).astype(float), minlength=units.size)
    high_votes = np.bincount(unit_index, weights=(winner == 0.0).astype(float), minlength=units.size)
    unit_low, unit_high = units // score.size, units % score.size
    difference = score[unit_low] - score[unit_high]  # > 0: the lower-index item scores higher
    measured = np.isfinite(difference) & (difference != 0.0)
    majority = np.sign(low_votes - high_votes)[measured]  # +1 low preferred, -1 high, 0 none
    # Differences equal but for floating-point noise (sums of 1/M steps) count as one threshold.
    distance = np.round(np.abs(difference[measured]), 12)
    agrees = majority == np.sign(difference[measured])

    order = np.argsort(-distance, kind="stable")
    distance_desc = distance[order]
    cumulative_agree = np.cumsum(agrees[order])
    counted = np.arange(1, distance_desc.size + 1)
    # At threshold t = distance_desc[i], the pairs counted are the first i+1 (ties of distance too).
    last_of_tie = np.ones(distance_desc.size, dtype=bool)  # none when no pair differs in score
    last_of_tie[:-1] = distance_desc[1:] != distance_desc[:-1]
    thresholds = distance_desc[last_of_tie]
    agreement = cumulative_agree[last_of_tie] / counted[last_of_tie]
    pairs_counted = counted[last_of_tie]
    reaching = np.flatnonzero(agreement >= target)
    resolved = float(thresholds[reaching[-1]]) if reaching.size else None

    finite_scores = np.sort(score[np.isfinite(score)])
    total_pairs = finite_scores.size * (finite_scores.size - 1) // 2
    above = None
    if resolved is not None:
        # For each item, the items scoring at least `resolved` more: one searchsorted over sorted scores
        # (with a relative tolerance of 1e-12, so that a pair exactly at the resolution counts).
        reach = finite_scores + resolved * (1.0 - 1e-12)
        above = int((finite_scores.size - np.searchsorted(finite_scores, reach, side="left")).sum())
    return {
        "target": target,
        "resolution": resolved,
        "compared_pairs": int(measured.sum()),
        "overall_agreement": float(agrees.mean()) if agrees.size else None,
        "curve": {"threshold": thresholds[::-1], "agreement": agreement[::-1], "pairs": pairs_counted[::-1]},
        "item_pairs_total": int(total_pairs),
        "item_pairs_above_resolution": above,
    }


def reproducibility(score_a, score_b, sd_a=None, sd_b=None, weight_offset: float = 2.0) -> dict:
    """Agreement of two studies of the same items (Welty §5.8): ρ, ρ_w and τ_w between their final
    scores over the items both measured, and, given per-item SDs, how the uncertainty changed."""
    score_a = np.asarray(score_a, dtype=np.float64)
    score_b = np.asarray(score_b, dtype=np.float64)
    if score_a.shape != score_b.shape:
        raise ValueError("both studies must score the same items")
    both = np.isfinite(score_a) & np.isfinite(score_b)
    if both.sum() < 3:
        raise ValueError("reproducibility needs at least three items scored by both studies")
    ranks_a = ranks_from_scores(score_a[both])
    ranks_b = ranks_from_scores(score_b[both])
    result = {
        "items": int(both.sum()),
        "rho": spearman(ranks_a, ranks_b),
        "rho_w": weighted_spearman(ranks_a, ranks_b, weight_offset),
        "tau_w": float(weighted_kendall_rows(ranks_a, ranks_b[None, :], weight_offset)[0]),
        "mean_absolute_difference": float(np.abs(score_a[both] - score_b[both]).mean()),
    }
    if sd_a is not None and sd_b is not None:
        sd_a = np.asarray(sd_a, dtype=np.float64)[both]
        sd_b = np.asarray(sd_b, dtype=np.float64)[both]
        finite = np.isfinite(sd_a) & np.isfinite(sd_b)
        result["mean_sd_a"] = float(sd_a[finite].mean())
        result["mean_sd_b"] = float(sd_b[finite].mean())
        result["sd_ratio"] = result["mean_sd_b"] / result["mean_sd_a"] if result["mean_sd_a"] else None
        result["sd_correlation"] = (
            float(np.corrcoef(sd_a[finite], sd_b[finite])[0, 1]) if finite.sum() > 2 else None
        )
    return result


def chance_level(
    item_count: int, rng: np.random.Generator, weight_offset: float = 2.0, draws: int = 1000
) -> dict:
    """ρ_w, τ_w, ρ and τ between a ranking and random permutations of it: their Monte Carlo distribution.

    One set of ``draws`` random permutations b of the ranks a = 1 … n; on each, ρ_w and τ_w
    (Lombardo et al., Eq. 8 with the weights of Eq. 9 at this n0) and Spearman's ρ and Kendall's τ
    (Eq. 7 with a_ij = a_j - a_i, and with a_ij = sign(a_j - a_i)). Weighted coefficients of
    unrelated rankings do not average zero (Lombardo 2025, arXiv 2504.08428): the weights of Eq. 9
    depend on both rankings. ρ and τ do average zero, but their spread at this n is what a value is
    read against. Returns, per coefficient, the mean, the SD, and the sorted draws (for p-values with
    ``permutation_p_value``). The permutations depend on ``rng`` and n only, so ρ_w and τ_w are the same
    whether or not ρ and τ are computed beside them, and ρ and τ the same at every n0.
    """
    if item_count < 2:
        raise ValueError(f"the chance level needs at least two items, got {item_count}")
    if draws < 1:
        raise ValueError(f"draws must be at least 1, got {draws}")
    reference = np.arange(1, item_count + 1, dtype=np.float64)
    permuted = np.argsort(rng.random((draws, item_count)), axis=1).astype(np.float64) + 1.0
    values = {
        "rho_w": weighted_spearman_rows(reference, permuted, weight_offset),
        "tau_w": weighted_kendall_rows(reference, permuted, weight_offset),
        "rho": spearman_rows(reference, permuted),
        "tau": kendall_rows(reference, permuted),
    }
    return {
        name: {
            "mean": float(v.mean()),
            "sd": float(v.std(ddof=1)) if draws > 1 else None,
            "draws": np.sort(v),
        }
        for name, v in values.items()
    } | {"items": item_count, "weight_offset": weight_offset, "draw_count": draws}


# A draw within this of the observed value counts as equal to it: ρ and τ of the draws come from the
# compiled row kernels at a very large n0, the observed ones from the exact formulas, and the two may
# differ in the last digits where the coefficients are equal (a small n makes such ties common).
P_VALUE_TIE_TOLERANCE = 1e-9


def permutation_p_value(observed: float, sorted_draws: np.ndarray) -> float:
    """One-sided Monte Carlo p-value of a coefficient at least as high as ``observed`` by chance:
    p = (1 + #{draws ≥ observed}) / (1 + draws), the +1 counting the observed ranking as one of the
    random ones, so that p is never 0 (a p-value below 1 / (1 + draws) cannot be told). A draw within
    ``P_VALUE_TIE_TOLERANCE`` below ``observed`` counts as a tie (at least as good)."""
    draws = np.asarray(sorted_draws, dtype=np.float64)
    at_least = draws.size - np.searchsorted(draws, observed - P_VALUE_TIE_TOLERANCE, side="left")
    return float((1 + at_least) / (1 + draws.size))
