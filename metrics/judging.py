"""A judge measured against the crowd: its pairs, its agreement with the votes, where it disagrees, and
whether its ranking can be told from the crowd's own split-half replicate.

PURE module: numpy, scipy and the standard library only; randomness comes in as a
``numpy.random.Generator``.

A judge decides each distinct pair of items the crowd compared (the judge's pairs): 1 the item shown on
its left is more related, 0 the right one, 0.5 a tie, NaN undecided. Every vote's outcome is read in the
judge's orientation (the pair as the judge was shown it) as one of three categories: left (0), right (1)
or tie (2). The figures are ratios of sums over pairs, so a cluster bootstrap over pairs (Davison and
Hinkley 1997, §3.8) recomputes them from the bootstrap counts of the pairs times per-pair statistics.

* agreement with the majority: over pairs with at least two votes and a strict majority, the share where
  the judge's decision is the majority's outcome; the crowd's reference is each vote against the others'
  majority (``scoring.agreement.majority_agreement``);
* agreement with single annotators: the share of votes the judge's decision equals, p_o = Σ_p n_p,d(p) /
  Σ_p n_p; the crowd's reference is the chance that two different annotators agree on a pair,
  Σ_p Σ_c n_pc(n_pc − 1) / Σ_p n_p(n_p − 1);
* Cohen's κ (Cohen 1960) between the judge's decision and each vote, κ = (p_o − p_e)/(1 − p_e) with
  p_e = Σ_c p_judge(c)·p_votes(c) over the same units (votes); the crowd's ceiling is κ between two
  votes on the same pair over ordered pairs of distinct votes, p_e = Σ_c q_c², q_c the marginal of the
  categories weighted by n_p − 1 (Fleiss 1971's pooled agreement, over pairs of judgements);
* side bias: the share of the judge's decisive decisions that are "left", with the exact two-sided
  binomial p-value against 1/2 (``scoring.quality.binomial_two_sided_p``);
* the verdict: for split s of the annotators into halves A and B, the difference
  d_s = ½[(ρ_w(J_A, C_B) − ρ_w(C_A, C_B)) + (ρ_w(J_B, C_A) − ρ_w(C_B, C_A))] (Lombardo et al., Eq. 8),
  J_h the judge's decisions on the votes of half h scored as the crowd's, C_h the crowd's own; the
  interval is d̄ ± 1.96·SD(d_s) (Welty et al. §5.7: the split-half replicate is the instrument's own
  repeatability).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from metrics.correlation import ranks_from_scores, weighted_spearman
from metrics.evaluation import Z_95
from metrics.metrology import BallotVotes, replicate_scores
from scoring.agreement import majority_agreement
from scoring.quality import binomial_two_sided_p

__all__ = [
    "LEFT",
    "RIGHT",
    "TIE",
    "PairNumbering",
    "agreement_figures",
    "bootstrap_totals",
    "category_of",
    "closeness_bands",
    "cohen_kappa",
    "disagreement_figures",
    "interval",
    "judge_outcomes",
    "number_pairs",
    "pair_statistics",
    "side_figures",
    "split_half_differences",
    "verdict_figures",
]

LEFT, RIGHT, TIE = 0, 1, 2  # the categories of an outcome in the judge's orientation
_BLOCK_CELLS = 2_000_000  # bootstrap draws (replicates × pairs) held at a time: about 40 MB in all
CLOSENESS_LABELS = ("closest quarter", "second quarter", "third quarter", "farthest quarter")


@dataclass(frozen=True)
class PairNumbering:
    """The distinct unordered pairs of a set of votes and each vote's pair.

    ``low``, ``high``: the pair's item indices, lower first, pairs in order of (low, high) (pair number
    p + 1 is index p); ``left``, ``right``: the pair as shown to the judge, the orientation of its first
    vote; ``pair_of_vote``: each vote's pair index; ``same_side``: whether the vote showed the pair as
    the judge sees it (its left item is the judge's left item).
    """

    low: np.ndarray
    high: np.ndarray
    left: np.ndarray
    right: np.ndarray
    pair_of_vote: np.ndarray
    same_side: np.ndarray

    @property
    def count(self) -> int:
        return int(self.low.size)


def number_pairs(left, right) -> PairNumbering:
    """Number the distinct unordered pairs of the votes (``left``, ``right``: item indices, one per vote,
    in the order the votes were cast) in order of (lower index, higher index), each shown as its first
    vote showed it."""
    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    low, high = np.minimum(left, right), np.maximum(left, right)
    span = int(high.max(initial=0)) + 1
    keys, first, pair_of_vote = np.unique(low * span + high, return_index=True, return_inverse=True)
    pair_of_vote = pair_of_vote.reshape(-1)
    shown_left = left[first]
    return PairNumbering(
        low=keys // span,
        high=keys % span,
        left=shown_left,
        right=right[first],
        pair_of_vote=pair_of_vote,
        same_side=left == shown_left[pair_of_vote],
    )


def category_of(outcome) -> np.ndarray:
    """An outcome for the left item (1 won, 0 lost, 0.5 a tie) as a category: LEFT, RIGHT or TIE."""
    outcome = np.asarray(outcome, dtype=np.float64)
    return np.where(outcome == 1.0, LEFT, np.where(outcome == 0.0, RIGHT, TIE)).astype(np.int64)


def judge_outcomes(decisions, numbering: PairNumbering) -> np.ndarray:
    """The judge's decision on each vote's pair as that vote's outcome for its own left item (1, 0 or
    0.5; NaN where the pair is undecided): the decision flipped where the vote showed the pair the
    other way round."""
    decided = np.asarray(decisions, dtype=np.float64)[numbering.pair_of_vote]
    return np.where(numbering.same_side, decided, 1.0 - decided)


def pair_statistics(decisions, vote_category, pair_of_vote, pair_count: int) -> dict[str, np.ndarray]:
    """Per pair, the sums every agreement figure is a ratio of (zero for an undecided pair).

    Parameters
    ----------
    decisions : array_like of float, (P,)
        The judge's decision on each pair: 1 left, 0 right, 0.5 a tie, NaN undecided.
    vote_category : array_like of int, (V,)
        Each vote's outcome in the judge's orientation: LEFT, RIGHT or TIE.
    pair_of_vote : array_like of int, (V,)
        Each vote's pair, 0 … P-1.
    pair_count : int
        P.

    Returns
    -------
    dict of numpy.ndarray
        ``majority_pairs`` (n_p ≥ 2 with a strict majority), ``majority_agreements`` (… equal to the
        judge's decision), ``crowd_majority_votes`` and ``crowd_majority_agreements`` (each vote
        against the others' majority), ``votes`` n_p, ``agreements`` n_p,d(p), ``judge_category`` (P × 3,
        n_p at the judge's category), ``vote_category`` (P × 3, n_pc), ``ordered_vote_pairs``
        n_p(n_p − 1), ``agreeing_vote_pairs`` Σ_c n_pc(n_pc − 1), ``weighted_category`` (P × 3,
        n_pc(n_p − 1)), ``judge_left``, ``judge_decisive``, ``crowd_left``, ``crowd_decisive``.
    """
    decisions = np.asarray(decisions, dtype=np.float64)
    vote_category = np.asarray(vote_category, dtype=np.int64)
    pair_of_vote = np.asarray(pair_of_vote, dtype=np.int64)
    decided = np.isfinite(decisions)
    judge = category_of(np.where(decided, decisions, 0.5))
    tally = np.bincount(pair_of_vote * 3 + vote_category, minlength=pair_count * 3).reshape(pair_count, 3)
    tally = tally * decided[:, None]
    votes = tally.sum(axis=1)
    top = tally.max(axis=1)
    has_majority = (votes >= 2) & ((tally == top[:, None]).sum(axis=1) == 1)
    agreements = tally[np.arange(pair_count), judge]
    agrees, compared = majority_agreement(pair_of_vote, vote_category)
    counted = decided[pair_of_vote]
    one_hot = np.eye(3)[judge] * decided[:, None]
    statistics = {
        "majority_pairs": has_majority.astype(np.float64),
        "majority_agreements": (has_majority & (tally.argmax(axis=1) == judge)).astype(np.float64),
        "crowd_majority_votes": np.bincount(pair_of_vote, weights=compared & counted, minlength=pair_count),
        "crowd_majority_agreements": np.bincount(
            pair_of_vote, weights=agrees & counted, minlength=pair_count
        ),
        "votes": votes.astype(np.float64),
        "agreements": agreements.astype(np.float64),
        "judge_category": one_hot * votes[:, None],
        "vote_category": tally.astype(np.float64),
        "ordered_vote_pairs": (votes * (votes - 1)).astype(np.float64),
        "agreeing_vote_pairs": (tally * (tally - 1)).sum(axis=1).astype(np.float64),
        "weighted_category": (tally * np.maximum(votes - 1, 0)[:, None]).astype(np.float64),
        "judge_left": one_hot[:, LEFT],
        "judge_decisive": one_hot[:, LEFT] + one_hot[:, RIGHT],
        "crowd_left": tally[:, LEFT].astype(np.float64),
        "crowd_decisive": (tally[:, LEFT] + tally[:, RIGHT]).astype(np.float64),
    }
    return statistics


def _columns(statistics: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, slice]]:
    """The statistics side by side as one P × S matrix, and each name's columns in it."""
    blocks, where, start = [], {}, 0
    for name, values in statistics.items():
        values = np.asarray(values, dtype=np.float64)
        values = values.reshape(values.shape[0], int(np.prod(values.shape[1:], dtype=np.int64)))
        where[name] = slice(start, start + values.shape[1])
        start += values.shape[1]
        blocks.append(values)
    return np.hstack(blocks), where


def _split_totals(totals: np.ndarray, where: dict[str, slice], shapes: dict[str, tuple]) -> dict:
    return {name: totals[..., where[name]].reshape(totals.shape[:-1] + shapes[name]) for name in where}


def _group_columns(groups, votes: np.ndarray, disagreements: np.ndarray, pairs: int):
    """A sparse P × K matrix (one entry per pair and grouping) of the votes and the disagreements of
    each pair in its group's column, and the columns of each ``"<name>_votes"`` and
    ``"<name>_disagreements"``."""
    from scipy import sparse  # here, not with the module: web processes import it (tests/test_startup.py)

    rows, cols, values, columns, start = [], [], [], {}, 0
    for name, group, group_count in groups:
        group = np.asarray(group, dtype=np.int64)
        member = np.flatnonzero(group >= 0)
        for kind, statistic in (("votes", votes), ("disagreements", disagreements)):
            columns[f"{name}_{kind}"] = slice(start, start + int(group_count))
            rows.append(member)
            cols.append(start + group[member])
            values.append(statistic[member])
            start += int(group_count)
    if not rows:
        return sparse.csr_matrix((pairs, 0)), columns
    matrix = sparse.csr_matrix(
        (np.concatenate(values), (np.concatenate(rows), np.concatenate(cols))), shape=(pairs, start)
    )
    return matrix, columns


def bootstrap_totals(
    statistics: dict[str, np.ndarray], rng: np.random.Generator, replicates: int = 1000, groups=()
) -> tuple[dict, dict]:
    """The sums of the per-pair statistics over the pairs, observed and in R cluster-bootstrap
    replicates (P pairs drawn with replacement; Davison and Hinkley 1997, §3.8).

    Replicate r's sum is Σ_p m_rp · s_p, m_rp the number of times pair p was drawn: the draws of
    ``rng.integers(0, P, (b, P))`` for blocks of b replicates are counted with one ``bincount`` and
    multiplied by the P × S statistics, so that at most about ``_BLOCK_CELLS`` draws are held at a
    time. ``groups``, a sequence of (name, each pair's group 0 … G-1 or −1 for none, G), adds the
    sums of ``votes`` and of ``votes − agreements`` within each group, as ``"<name>_votes"`` and
    ``"<name>_disagreements"`` (G values; a sparse product, so many groups cost no P × G array).

    Returns (observed, replicated): dicts by name, each value of the statistic's trailing shape, the
    replicated ones with a leading R axis. With P = 0 the replicates are all zero.
    """
    if replicates < 1:
        raise ValueError(f"replicates must be at least 1, got {replicates}")
    matrix, where = _columns(statistics)
    pairs = matrix.shape[0]
    shapes = {name: np.asarray(values).shape[1:] for name, values in statistics.items()}
    observed = _split_totals(matrix.sum(axis=0), where, shapes)
    replicated_matrix = np.zeros((replicates, matrix.shape[1]))
    votes = np.asarray(statistics["votes"], dtype=np.float64)
    disagreements = votes - np.asarray(statistics["agreements"], dtype=np.float64)
    grouped, columns = _group_columns(groups, votes, disagreements, pairs)
    for name, column in columns.items():
        observed[name] = np.asarray(grouped[:, column].sum(axis=0)).ravel()
    by_group = np.zeros((replicates, grouped.shape[1]))
    block = max(1, _BLOCK_CELLS // max(pairs, 1))
    for start in range(0, replicates if pairs else 0, block):  # a loop over blocks of replicates
        size = min(block, replicates - start)
        # int32 draws are the same numbers as int64 ones for a range below 2^32, in half the memory.
        draws = rng.integers(0, pairs, size=(size, pairs), dtype=np.int32)
        draws += (np.arange(size, dtype=np.int32) * pairs)[:, None]
        counts = np.bincount(draws.ravel(), minlength=size * pairs).reshape(size, pairs).astype(np.float64)
        del draws
        replicated_matrix[start : start + size] = counts @ matrix
        by_group[start : start + size] = (grouped.T @ counts.T).T
    replicated = _split_totals(replicated_matrix, where, shapes)
    replicated |= {name: by_group[:, column] for name, column in columns.items()}
    return observed, replicated


def _ratio(numerator, denominator):
    numerator = np.asarray(numerator, dtype=np.float64)
    denominator = np.asarray(denominator, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1.0), np.nan)


def cohen_kappa(observed, expected):
    """Cohen's κ = (p_o − p_e) / (1 − p_e) (Cohen 1960), element-wise; NaN where p_e = 1."""
    observed = np.asarray(observed, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(
            expected < 1.0, (observed - expected) / np.where(expected < 1.0, 1.0 - expected, 1.0), np.nan
        )


def _kappas(totals: dict) -> dict:
    """The judge's κ against the votes and the crowd's κ between votes, from the summed statistics."""
    votes = totals["votes"]
    judge_marginal = _ratio(totals["judge_category"], np.asarray(votes)[..., None])
    vote_marginal = _ratio(totals["vote_category"], np.asarray(votes)[..., None])
    judge_observed = _ratio(totals["agreements"], votes)
    judge_expected = (judge_marginal * vote_marginal).sum(axis=-1)
    ordered = totals["ordered_vote_pairs"]
    crowd_observed = _ratio(totals["agreeing_vote_pairs"], ordered)
    crowd_expected = (_ratio(totals["weighted_category"], np.asarray(ordered)[..., None]) ** 2).sum(axis=-1)
    return {
        "kappa": cohen_kappa(judge_observed, judge_expected),
        "crowd_kappa": cohen_kappa(crowd_observed, crowd_expected),
    }


def _figures(totals: dict) -> dict:
    """Every agreement figure (a ratio of the summed statistics), element-wise over replicates."""
    return {
        "majority": _ratio(totals["majority_agreements"], totals["majority_pairs"]),
        "crowd_majority": _ratio(totals["crowd_majority_agreements"], totals["crowd_majority_votes"]),
        "single": _ratio(totals["agreements"], totals["votes"]),
        "crowd_single": _ratio(totals["agreeing_vote_pairs"], totals["ordered_vote_pairs"]),
        **_kappas(totals),
    }


def interval(value, replicate_values, low: float = 0.0, high: float = 1.0) -> list[float] | None:
    """value ± 1.96·SD of the finite replicate values (ddof = 1), clipped to [low, high]; None without a
    value or with fewer than two finite replicates (as ``metrics.evaluation`` gives its intervals)."""
    values = np.asarray(replicate_values, dtype=np.float64)
    values = values[np.isfinite(values)]
    if value is None or not np.isfinite(value) or values.size < 2:
        return None
    error = float(values.std(ddof=1))
    return [float(max(low, value - Z_95 * error)), float(min(high, value + Z_95 * error))]


def _finite(value) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None


def agreement_figures(observed: dict, replicated: dict) -> dict:
    """Agreement with the majority, with single annotators and Cohen's κ, each beside the crowd's own
    figure, with 95% intervals from the bootstrap replicates (``bootstrap_totals``)."""
    point, spread = _figures(observed), _figures(replicated)

    def entry(name: str, low: float = 0.0) -> dict:
        value = _finite(point[name])
        return {"value": value, "interval": interval(value, spread[name], low=low)}

    return {
        "majority": entry("majority")
        | {"pairs": int(observed["majority_pairs"]), "crowd": entry("crowd_majority")},
        "single": entry("single") | {"votes": int(observed["votes"]), "crowd": entry("crowd_single")},
        "kappa": entry("kappa", low=-1.0)
        | {"votes": int(observed["votes"]), "crowd": entry("crowd_kappa", low=-1.0)},
    }


def side_figures(observed: dict, alpha: float) -> dict:
    """The judge's share of "left" among its decisive decisions, its exact two-sided binomial p-value
    against 1/2, ``biased`` when p < ``alpha``, and the crowd's share of votes for the judge's left item
    among its decisive votes on the same pairs, with a sentence."""
    left, decisive = int(observed["judge_left"]), int(observed["judge_decisive"])
    share = _finite(_ratio(left, decisive))
    crowd = _finite(_ratio(observed["crowd_left"], observed["crowd_decisive"]))
    p_value = _finite(binomial_two_sided_p(left, decisive)) if decisive else None
    biased = bool(p_value is not None and p_value < alpha)
    if share is None:
        sentence = "The judge made no decisive decision (left or right), so its side cannot be tested."
    else:
        crowd_text = (
            f"; the crowd chose it in {crowd:.0%} of its votes on the same pairs" if crowd is not None else ""
        )
        verdict = (
            f"biased to the {'left' if share > 0.5 else 'right'} (p = {p_value:.2g} < {alpha:g})"
            if biased
            else f"no side bias at the {alpha:g} level (p = {p_value:.2g})"
        )
        sentence = (
            f"The judge chose the item shown on the left in {share:.0%} of its {decisive:,} decisive "
            f"decisions{crowd_text}: {verdict}."
        )
    return {
        "left_share": share,
        "decisive": decisive,
        "p_value": p_value,
        "alpha": alpha,
        "crowd_left_share": crowd,
        "biased": biased,
        "sentence": sentence,
    }


def disagreement_figures(observed: dict, replicated: dict, name: str, labels) -> list[dict]:
    """Per group of the grouping ``name`` (``bootstrap_totals``' ``groups``): the votes compared, the
    share the judge's decision differs from, and its 95% interval from the bootstrap replicates.
    Groups without a vote are left out."""
    votes, disagreements = observed[f"{name}_votes"], observed[f"{name}_disagreements"]
    share = _ratio(disagreements, votes)
    spread = _ratio(replicated[f"{name}_disagreements"], replicated[f"{name}_votes"])
    rows = []
    for group, label in enumerate(labels):  # a loop over groups (areas, bands)
        if votes[group] <= 0:
            continue
        value = _finite(share[group])
        rows.append(
            {
                "label": label,
                "comparisons": int(votes[group]),
                "disagreement": value,
                "interval": interval(value, spread[:, group]),
            }
        )
    return rows


def closeness_bands(gap) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's quarter of the score gaps |ȳ_i − ȳ_j| (0 the closest … 3 the farthest; −1 without a
    gap), cut at the gaps' quartiles, and the three cut points."""
    gap = np.asarray(gap, dtype=np.float64)
    finite = np.isfinite(gap)
    if not finite.any():
        return np.full(gap.shape, -1, dtype=np.int64), np.full(3, np.nan)
    cuts = np.quantile(gap[finite], [0.25, 0.5, 0.75])
    band = np.searchsorted(cuts, np.where(finite, gap, 0.0), side="left")
    return np.where(finite, band, -1).astype(np.int64), cuts


def split_half_differences(
    crowd_ballots: list[BallotVotes],
    judge_ballots: list[BallotVotes],
    item_count: int,
    halves: np.ndarray,
    inside,
    weight_offset: float = 2.0,
) -> dict[str, np.ndarray]:
    """Per split s of the annotators (``halves``, S × A, True for half A): the judge's ρ_w against the
    other half of the crowd, the crowd's own, and their difference d_s (Lombardo et al., Eq. 8):

        d_s = ½[(ρ_w(J_A, C_B) − ρ_w(C_A, C_B)) + (ρ_w(J_B, C_A) − ρ_w(C_B, C_A))],

    C_h the crowd's scores ȳ from the votes of half h, J_h the judge's (``judge_ballots``: the same
    ballots, each vote the judge's outcome on its pair, undecided pairs' votes left out), each ranked by
    its ȳ alone (Eq. 5, 6). Not by (last ballot reached, ȳ) as ``metrology.split_half_reliability`` ranks
    a half for the card: the tiers are the crowd's selection, the same in all four rankings, and they
    carry most of ρ_w's weight, so with them a judge that decides at random ranks "like the crowd". Over the items of
    ``inside`` that all four measured (at least three). Returns arrays ``difference``, ``judge_rho_w``
    (the mean of its two) and ``crowd_rho_w`` (NaN for a split without three such items).
    """
    inside = np.asarray(inside, dtype=bool)
    halves = np.asarray(halves, dtype=bool)

    def scores(ballots: list[BallotVotes], half: np.ndarray) -> np.ndarray:
        """The ranking keys of the votes of ``half`` (splits × A), a block of splits at a time."""
        votes = max(1, sum(ballot.vote_count for ballot in ballots))
        block = max(1, _BLOCK_CELLS // votes)  # at most about _BLOCK_CELLS multiplicities at a time
        return np.vstack(
            [
                replicate_scores(
                    ballots,
                    item_count,
                    [half[start : start + block, ballot.annotator].astype(np.float64) for ballot in ballots],
                )
                for start in range(0, half.shape[0], block)
            ]
        )

    crowd_a, crowd_b = scores(crowd_ballots, halves), scores(crowd_ballots, ~halves)
    judge_a, judge_b = scores(judge_ballots, halves), scores(judge_ballots, ~halves)
    splits = halves.shape[0]
    judge_rho = np.full(splits, np.nan)
    crowd_rho = np.full(splits, np.nan)
    for split in range(splits):  # a loop over splits; the items are arrays
        both = inside & np.isfinite(crowd_a[split]) & np.isfinite(crowd_b[split])
        both &= np.isfinite(judge_a[split]) & np.isfinite(judge_b[split])
        if both.sum() < 3:
            continue
        ranks = [ranks_from_scores(half[split, both]) for half in (crowd_a, crowd_b, judge_a, judge_b)]
        ca, cb, ja, jb = ranks
        judge_rho[split] = 0.5 * (
            weighted_spearman(ja, cb, weight_offset) + weighted_spearman(jb, ca, weight_offset)
        )
        crowd_rho[split] = weighted_spearman(ca, cb, weight_offset)
    return {"difference": judge_rho - crowd_rho, "judge_rho_w": judge_rho, "crowd_rho_w": crowd_rho}


def verdict_figures(differences: dict[str, np.ndarray]) -> dict:
    """The verdict of the paired split-half comparison: mean difference d̄ with the interval
    d̄ ± 1.96·SD(d_s); indistinguishable ("like the crowd") when it contains 0, "worse than the crowd"
    below, "better than the crowd" above; the mean ρ_w of the judge and of the crowd's halves, the
    splits, the share with d_s ≥ 0 and a sentence."""
    d = np.asarray(differences["difference"], dtype=np.float64)
    finite = np.isfinite(d)
    splits = int(finite.sum())
    mean = float(d[finite].mean()) if splits else None
    bounds = interval(mean, d[finite], low=-2.0, high=2.0) if mean is not None else None
    judge_rho = _finite(np.nanmean(differences["judge_rho_w"])) if splits else None
    crowd_rho = _finite(np.nanmean(differences["crowd_rho_w"])) if splits else None
    share = float((d[finite] >= 0).mean()) if splits else None
    if bounds is None:
        direction, sentence = (
            None,
            "Too few splits of the annotators measured enough items to compare the judge with the crowd.",
        )
    else:
        direction = (
            "worse than the crowd"
            if bounds[1] < 0
            else "better than the crowd"
            if bounds[0] > 0
            else "like the crowd"
        )
        against = (
            f"ρ_w {judge_rho:.3f} against one half of the crowd, where the other half reaches {crowd_rho:.3f} "
            f"(difference {mean:+.3f}, 95% interval {bounds[0]:+.3f} to {bounds[1]:+.3f}, over {splits} "
            f"splits of the annotators; at least as good as the crowd's half in {share:.0%} of them)"
        )
        sentence = (
            f"The judge's ranking cannot be told from the crowd's own split-half replicate: {against}. "
            "Within this instrument's resolution the judge measures like the crowd."
            if direction == "like the crowd"
            else f"The judge's ranking is {direction}'s own split-half replicate, with 95% confidence: {against}."
        )
    return {
        "indistinguishable": direction == "like the crowd",
        "direction": direction,
        "difference": {"value": mean, "interval": bounds},
        "judge_rho_w": judge_rho,
        "crowd_rho_w": crowd_rho,
        "splits": splits,
        "share_at_least_crowd": share,
        "sentence": sentence,
    }
