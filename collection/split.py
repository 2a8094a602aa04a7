"""Which items of a study form its hidden test part: a seeded draw, stratified by semantic area.

PURE module: numpy and the standard library only.

A study may keep a share of its items as a hidden test part, whose human scores are never published,
and publish the rest, the development part (a public and a private leaderboard, as Kaggle keeps them;
"The Leaderboard Illusion", Singh et al. 2025, arXiv 2504.20879, on why a board whose answers are
public can be fitted). The draw is

* **stratified**: area a of n_a items gives h_a test items, h_a the share s·n_a rounded by largest
  remainders, so that every |h_a - s·n_a| < 1 and Σ h_a = round(s·N);
* **spread**: within an area the items are put in an order (a ranking known before the vote when there
  is one, else a random order) and h_a of them are taken at evenly spaced positions,
  ⌊(j + u)·n_a / h_a⌋ for j = 0 … h_a - 1 with one random offset u in [0, 1): systematic sampling, so
  the test part covers the whole range of that order, top and bottom alike;
* **reproducible**: every random number comes from the generator passed in, which the service seeds
  from the study's seed.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from common.numbers import as_entered

__all__ = ["hidden_counts", "split_draw"]


def hidden_counts(area_sizes, share: float) -> np.ndarray:
    """How many test items each area gives: s·n_a rounded by largest remainders (Hamilton's method).

    Parameters
    ----------
    area_sizes : array_like of int
        n_a, the items of each area.
    share : float
        s, the hidden share, 0 ≤ s < 1.

    Returns
    -------
    numpy.ndarray of int
        h_a per area, with ⌊s·n_a⌋ ≤ h_a ≤ ⌈s·n_a⌉ (so within 1 of s·n_a) and Σ h_a = round(s·Σ n_a),
        the remaining units going to the largest fractional parts (ties to the lower area code).
    """
    sizes = np.asarray(area_sizes, dtype=np.int64)
    if sizes.ndim != 1 or (sizes < 0).any():
        raise ValueError("area_sizes must be a list of item counts, none negative")
    if not 0.0 <= share < 1.0:
        raise ValueError(f"the hidden share must lie in [0, 1), got {share}")
    # Exact arithmetic on the share as entered (Python integers: s·n_a over s's denominator), so that
    # equal remainders compare equal; in floats 0.2·7 and 0.2·152 leave different remainders.
    exact = as_entered(share)
    numerators = [exact.numerator * int(size) for size in sizes]
    counts = [numerator // exact.denominator for numerator in numerators]
    remainders = [numerator % exact.denominator for numerator in numerators]
    total = math.floor(exact * int(sizes.sum()) + Fraction(1, 2))  # round(s·N), halves up
    # The remaining units to the largest remainders; the lower area first among equal ones.
    for area in sorted(range(len(counts)), key=lambda a: -remainders[a])[: total - sum(counts)]:
        counts[area] += 1
    return np.asarray(counts, dtype=np.int64)


def split_draw(area_codes, share: float, rng: np.random.Generator, order_key=None) -> np.ndarray:
    """The hidden test part: True for each item drawn into it.

    Parameters
    ----------
    area_codes : array_like of int
        The semantic area of each item (any integer labels), by item index.
    share : float
        s, the share of items hidden, 0 ≤ s < 1; 0 hides none.
    rng : numpy.random.Generator
        The source of the random order and offsets (seed it for a reproducible split).
    order_key : array_like of float, optional
        A ranking of the items known before the vote (higher first), e.g. the final scores of the study
        this one replicates: the test items are spread evenly along it within each area. NaN, or
        None for all items, leaves an item's place to the random order.

    Returns
    -------
    numpy.ndarray of bool
        ``hidden[i]`` for item i; per area exactly ``hidden_counts`` items.
    """
    codes = np.asarray(area_codes)
    if codes.ndim != 1:
        raise ValueError("area_codes must give one area per item")
    item_count = codes.size
    areas, code = np.unique(codes, return_inverse=True)
    counts = hidden_counts(np.bincount(code, minlength=areas.size), share)
    hidden = np.zeros(item_count, dtype=bool)
    if item_count == 0 or counts.sum() == 0:
        return hidden
    # One random permutation for all the items, then a stable sort by (area, -key): within an area the
    # key orders the items, the permutation breaks its ties and places the items it leaves unranked.
    shuffled = rng.permutation(item_count)
    key = np.zeros(item_count) if order_key is None else np.asarray(order_key, dtype=np.float64)
    if key.shape != (item_count,):
        raise ValueError("order_key must give one value per item")
    ranked = np.isfinite(key)
    sort_key = np.where(ranked, -key, np.inf)[shuffled]
    order = shuffled[np.lexsort((sort_key, code[shuffled]))]
    # Within each area, positions ⌊(j + u)·n_a / h_a⌋, j = 0 … h_a - 1, one offset u per area.
    sizes = np.bincount(code, minlength=areas.size)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    offsets = rng.random(areas.size)
    area_of_pick = np.repeat(np.arange(areas.size), counts)
    j = np.arange(area_of_pick.size) - np.repeat(np.cumsum(counts) - counts, counts)
    step = sizes[area_of_pick] / counts[area_of_pick]
    positions = starts[area_of_pick] + np.floor((j + offsets[area_of_pick]) * step).astype(np.int64)
    hidden[order[positions]] = True
    return hidden
