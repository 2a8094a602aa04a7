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

__all__ = [
    "LEFT",
    "RIGHT",
    "TIE",
    "PairNumbering",
    "category_of",
    "judge_outcomes",
    "number_pairs",
]

LEFT, RIGHT, TIE = 0, 1, 2  # the categories of an outcome in the judge's orientation


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
