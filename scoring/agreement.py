"""Figures of the annotators of a study: agreement with the others' majority, medians and shares by
annotator.

PURE module: numpy and the standard library only. Votes are parallel arrays, one entry per vote; an
annotator (or any group) is a code 0 … G-1.
"""

from __future__ import annotations

import numpy as np

__all__ = ["majority_agreement", "median_by_group", "share"]


def majority_agreement(pair_key, outcome) -> tuple[np.ndarray, np.ndarray]:
    """Per vote: (agrees with the others' majority, has such a majority to be compared with).

    ``pair_key`` identifies the pair of items of each vote, ``outcome`` is 0 (the lower-index item
    chosen), 1 (the higher) or 2 (a tie). The others of a vote are the other votes on its pair; their
    majority is the outcome that strictly outnumbers each of the other two.
    """
    pair_key = np.asarray(pair_key, dtype=np.int64)
    outcome = np.asarray(outcome, dtype=np.int64)
    _, pair = np.unique(pair_key, return_inverse=True)
    pairs = int(pair.max()) + 1 if pair.size else 0
    tally = np.bincount(pair * 3 + outcome, minlength=pairs * 3).reshape(pairs, 3)
    others = tally[pair]
    others[np.arange(outcome.size), outcome] -= 1  # leave the vote itself out
    top = others.max(axis=1)
    strict = (top > 0) & ((others == top[:, None]).sum(axis=1) == 1)
    agrees = strict & (others.argmax(axis=1) == outcome)
    return agrees, strict


def share(numerator, denominator) -> np.ndarray:
    """numerator / denominator, NaN where the denominator is 0."""
    result = np.full(np.shape(denominator), np.nan)
    np.divide(numerator, denominator, out=result, where=np.asarray(denominator) > 0)
    return result


def median_by_group(group, values, groups: int) -> np.ndarray:
    """The median of ``values`` within each group 0 … groups-1 (NaN for an empty group), with one sort."""
    group = np.asarray(group, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    order = np.lexsort((values, group))
    ordered = values[order]
    counts = np.bincount(group, minlength=groups)
    starts = np.cumsum(counts) - counts
    median = np.full(groups, np.nan)
    present = counts > 0
    low = starts[present] + (counts[present] - 1) // 2
    high = starts[present] + counts[present] // 2
    median[present] = (ordered[low] + ordered[high]) / 2.0
    return median
