"""The items of a semantic area: pairs of two distinct tokens (§2.2), all of them or a sample.

PURE module: numpy and the standard library only.

The n·(n-1)/2 pairs of n tokens are numbered in the order of ``itertools.combinations(range(n), 2)``
(row by row of the upper triangle). ``pairs_at`` turns numbers into pairs without listing every pair,
so a sample of a thousand pairs of 10,000 tokens (50 million pairs) costs a thousand, not 50 million.
"""

from __future__ import annotations

import numpy as np


def pair_count(token_count: int) -> int:
    """n·(n-1)/2, the pairs of two distinct tokens among n."""
    return token_count * (token_count - 1) // 2


def pairs_at(token_count: int, numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (i, j), i < j, with the given numbers in combinations order, as two int64 arrays.

    Row i of the upper triangle starts at number s(i) = i·n - i·(i+1)/2; i is the largest row with
    s(i) <= p, found by inverting the quadratic and correcting the float estimate by one either way.
    """
    n = int(token_count)
    p = np.asarray(numbers, dtype=np.int64)
    if p.size and (p.min() < 0 or p.max() >= pair_count(n)):
        raise ValueError(f"pair numbers must lie in [0, {pair_count(n)}) for {n} tokens")

    def row_start(i):
        return i * n - i * (i + 1) // 2

    estimate = np.floor(((2 * n - 1) - np.sqrt((2.0 * n - 1) ** 2 - 8.0 * p)) / 2).astype(np.int64)
    i = np.clip(estimate, 0, max(n - 2, 0))
    i = np.where(row_start(i) > p, i - 1, i)
    i = np.where(row_start(i + 1) <= p, i + 1, i)
    j = p - row_start(i) + i + 1
    return i, j


def area_pairs(
    token_count: int, sample_size: int | None, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of an area's tokens, or a uniform sample of ``sample_size`` of them in number order.

    The sample is ``rng.choice(pair_count, sample_size, replace=False)``, sorted.
    """
    total = pair_count(token_count)
    if sample_size is None or sample_size >= total:
        numbers = np.arange(total, dtype=np.int64)
    else:
        numbers = np.sort(rng.choice(total, size=sample_size, replace=False))
    return pairs_at(token_count, numbers)
