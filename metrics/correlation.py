"""Rank correlation coefficients, plain and top-weighted.

PURE module: numpy, scipy and the standard library only; the row versions run compiled kernels
from ``metrics.kernels`` (numba), imported on their first call.

Every function takes two arrays of *ranks* of the same items: position ``i`` of both arrays is the
same item, rank 1 is the top, and tied items carry their average rank (``ranks_from_scores``
produces such arrays). All coefficients are instances of Kendall's general form (Lombardo et al.,
Eq. 7)

    Γ = Σ_ij a_ij b_ij / sqrt(Σ_ij a_ij² · Σ_ij b_ij²),

with, for the weighted versions (Eq. 8), ``a_ij = sqrt(w_i w_j)·(a_j - a_i)`` (ρ_w) or
``a_ij = sqrt(w_i w_j)·sign(a_j - a_i)`` (τ_w), and the additive weights of Eq. 9,

    w_i = (f(a_i) + f(b_i)) / Σ_j (f(a_j) + f(b_j)),   f(n) = 1/(n + n0)².

Normalising τ_w by Γ's denominator makes it a Kendall τ_b analogue: pairs tied in one ranking drop
out of that ranking's sum. Without ties the denominator is ``1 - Σ_i w_i²``, the Z({w_i}) of Eq. 8.
"""

from __future__ import annotations

import math

import numpy as np

# scipy is imported where it is used: a web worker that only collects votes never loads it (about 70 MB
# of resident memory; tests/test_startup.py).

_LEAF_GROUP = 8  # below this group size, pairs are compared directly
# The lowest weight offset: f(n) = 1/(n + n0)² exists for every rank n ≥ 1 when n0 > -1, but there the
# first rank's share R(n0) tends to 1 and the other ranks' share to 0, until 64-bit floats lose it: τ_w's
# normaliser 1 - Σw² rounds to 0 (at 20,000 items from n0 ≈ -0.9999). At -0.9 (R = 0.986) every
# coefficient is still exact to 1e-8 at 20,000 items (tests/metrics/test_weight_offset_bounds.py).
MIN_WEIGHT_OFFSET = -0.9
MIN_WEIGHT_OFFSET_MESSAGE = (
    "n0 must be at least -0.9: the weights f(n) = 1/(n + n0)² of Eq. 9 exist for n0 > -1, but below -0.9 the "
    "first rank takes more than R(-0.9) = 0.986 of the weight and 64-bit floats lose the other ranks' share"
)
# n0 → ∞ makes every weight of Eq. 9 the same: ρ_w and τ_w become ρ and τ_b. At this n0 the coefficients
# differ from the exact ρ and τ by less than 10^-12 for 3 items and about 10^-10 for 10^4 items.
UNIFORM_WEIGHT_OFFSET = 1e12

__all__ = [
    "MIN_WEIGHT_OFFSET",
    "MIN_WEIGHT_OFFSET_MESSAGE",
    "UNIFORM_WEIGHT_OFFSET",
    "first_rank_weight",
    "kendall",
    "kendall_rows",
    "rank_weights",
    "ranks_from_scores",
    "ranks_from_scores_rows",
    "spearman",
    "spearman_rows",
    "weighted_kendall",
    "weighted_kendall_rows",
    "weighted_spearman",
    "weighted_spearman_rows",
]


def ranks_from_scores(scores, *, higher_is_better: bool = True) -> np.ndarray:
    """Ranks of ``scores`` (1 = best) with average ranks for ties.

    Parameters
    ----------
    scores : array_like of float
        One score per item; must be finite.
    higher_is_better : bool
        If True (the default) the highest score gets rank 1.

    Returns
    -------
    numpy.ndarray of float64
    """
    values = np.asarray(scores, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"scores must be one-dimensional, got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        first_bad = int(np.flatnonzero(~np.isfinite(values))[0])
        raise ValueError(f"scores must be finite; position {first_bad} holds {values[first_bad]!r}")
    from scipy.stats import rankdata

    return rankdata(-values if higher_is_better else values, method="average")


def ranks_from_scores_rows(scores_rows) -> np.ndarray:
    """``ranks_from_scores`` of every row of ``scores_rows`` (R × n, higher is better), in compiled code.

    Equals ``scipy.stats.rankdata(-scores_rows, method="average", axis=1)``; each row is sorted once
    by ``metrics.kernels.descending_ranks_rows``.
    """
    values = np.ascontiguousarray(scores_rows, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"scores_rows must be two-dimensional (rows × items), got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        row, column = (int(index) for index in np.argwhere(~np.isfinite(values))[0])
        raise ValueError(
            f"scores must be finite; row {row}, position {column} holds {float(values[row, column])!r}"
        )
    import metrics.kernels as kernels  # on first use, as in weighted_kendall_rows

    return kernels.rows_in_threads(
        kernels.descending_ranks_rows, values.shape[0], values.size, lambda rows: (values[rows],)
    )


def first_rank_weight(n0: float) -> float:
    """Weight fraction of the first rank in an infinite ranking, R(n0) (Lombardo et al., §3).

    ``R(n0) = f(1; n0) / Σ_{n≥1} f(n; n0) = 1 / ((n0 + 1)² · ψ⁽¹⁾(n0 + 1))``, where ψ⁽¹⁾ is the
    trigamma function. R(0) ≈ 0.61 and R(2) ≈ 0.28.
    """
    from scipy.special import polygamma

    n0 = _check_offset(n0)
    return float(1.0 / ((n0 + 1.0) ** 2 * polygamma(1, n0 + 1.0)))


def rank_weights(ranks_a, ranks_b, n0: float = 2.0) -> np.ndarray:
    """Normalised additive weights of Eq. 9: ``w_i = (f(a_i)+f(b_i)) / Σ_j (f(a_j)+f(b_j))``.

    ``f(n) = 1/(n + n0)²`` (Lombardo et al., §3). The weights sum to one.
    """
    a, b = _check_ranks(ranks_a, ranks_b)
    return _weights(a, b, _check_offset(n0))


def weighted_spearman(ranks_a, ranks_b, n0: float = 2.0) -> float:
    """Weighted Spearman ρ_w (Lombardo et al., Eq. 8, weights of Eq. 9).

    ``ρ_w = Σ_i w_i (a_i - ā)(b_i - b̄) / (σ_a σ_b)`` with ``ā = Σ_i w_i a_i`` and
    ``σ_a² = Σ_i w_i (a_i - ā)²`` (and likewise for b). This is Γ of Eq. 7 with
    ``a_ij = sqrt(w_i w_j)(a_j - a_i)``, with or without ties.

    Returns NaN when one ranking puts every item on the same rank (σ = 0).
    """
    a, b = _check_ranks(ranks_a, ranks_b)
    w = _weights(a, b, _check_offset(n0))
    return _pearson_weighted(a, b, w)


def spearman(ranks_a, ranks_b) -> float:
    """Spearman's ρ: Pearson's correlation of the ranks (Eq. 7 with ``a_ij = a_j - a_i``).

    Equals ``scipy.stats.spearmanr`` when the inputs are ranks 1..n with average ranks for ties.
    Returns NaN when one ranking is constant.
    """
    a, b = _check_ranks(ranks_a, ranks_b)
    w = np.full(a.size, 1.0 / a.size)
    return _pearson_weighted(a, b, w)


def weighted_kendall(ranks_a, ranks_b, n0: float = 2.0) -> float:
    """Weighted Kendall τ_w (Lombardo et al., Eq. 7-9), in O(n log n).

    ``τ_w = Σ_{i≠j} w_i w_j sign(a_j - a_i) sign(b_j - b_i) / Z`` with the weights of Eq. 9 and,
    following Γ of Eq. 7, ``Z = sqrt(Σ_{i≠j} w_i w_j sign(a_j - a_i)² · Σ_{i≠j} w_i w_j sign(b_j - b_i)²)``.
    A pair tied in one ranking drops out of that ranking's sum, so
    ``Z = sqrt((1 - Σ_g W_g²)(1 - Σ_h W_h²))`` where ``W_g`` is the total weight of a group of items
    tied in ranking a (``h`` likewise for b); without ties ``Z = 1 - Σ_i w_i²``.

    The numerator is computed from the weighted count of discordant pairs, obtained in
    O(n log n) by a vectorised divide and conquer over positions (see ``_weighted_inversions``).

    Returns NaN when one ranking puts every item on the same rank (Z = 0).
    """
    a, b = _check_ranks(ranks_a, ranks_b)
    w = _weights(a, b, _check_offset(n0))
    return _scalar(_kendall_gamma_rows(a[None, :], b[None, :], w[None, :])[0])


def weighted_kendall_rows(ranks_a, ranks_b_rows, n0: float = 2.0) -> np.ndarray:
    """τ_w of ``ranks_a`` against every row of ``ranks_b_rows`` (R × n), in compiled code.

    Row r gives ``weighted_kendall(ranks_a, ranks_b_rows[r], n0)``: the same definition (Eq. 7-9:
    Γ of Eq. 7 with sign scores and the weights of Eq. 9), computed row by row by
    ``metrics.kernels.kendall_gamma_rows``, which counts the weighted discordant pairs of a row with
    a merge sort in O(n log n). ``ranks_a`` may also be R × n. 1000 rows of 10^4 items take a fraction
    of a second; the first call in a process loads numba and its compiled code (see ``metrics.kernels``).
    """
    a, b, n0 = _check_rows(ranks_a, ranks_b_rows, n0)
    import metrics.kernels as kernels  # on first use: numba stays out of processes that never need it

    order_a = np.argsort(a, axis=1, kind="stable")
    shared = a.shape[0] == 1

    def arguments(rows):
        return (a, order_a, b[rows], n0) if shared else (a[rows], order_a[rows], b[rows], n0)

    return kernels.rows_in_threads(kernels.kendall_gamma_rows, b.shape[0], b.size, arguments)


def weighted_spearman_rows(ranks_a, ranks_b_rows, n0: float = 2.0) -> np.ndarray:
    """ρ_w of ``ranks_a`` against every row of ``ranks_b_rows`` (R × n): Eq. 8 with the weights of
    Eq. 9, row by row in compiled code (``metrics.kernels.spearman_weighted_rows``). ``ranks_a`` may
    also be R × n."""
    a, b, n0 = _check_rows(ranks_a, ranks_b_rows, n0)
    import metrics.kernels as kernels  # on first use, as in weighted_kendall_rows

    shared = a.shape[0] == 1

    def arguments(rows):
        return (a if shared else a[rows], b[rows], n0)

    return kernels.rows_in_threads(kernels.spearman_weighted_rows, b.shape[0], b.size, arguments)


def spearman_rows(ranks_a, ranks_b_rows) -> np.ndarray:
    """Spearman's ρ of ``ranks_a`` against every row of ``ranks_b_rows`` (R × n), in compiled code.

    Eq. 7 of Lombardo et al. with ``a_ij = a_j - a_i``: the uniform-weight case of Eq. 8, computed by
    ``weighted_spearman_rows`` at ``UNIFORM_WEIGHT_OFFSET`` (equal to ``spearman`` row by row, to
    about 10^-10 at 10^4 items).
    """
    return weighted_spearman_rows(ranks_a, ranks_b_rows, UNIFORM_WEIGHT_OFFSET)


def kendall_rows(ranks_a, ranks_b_rows) -> np.ndarray:
    """Kendall's τ_b of ``ranks_a`` against every row of ``ranks_b_rows`` (R × n), in compiled code.

    Eq. 7 of Lombardo et al. with ``a_ij = sign(a_j - a_i)``: the uniform-weight case of Eq. 8,
    computed by ``weighted_kendall_rows`` at ``UNIFORM_WEIGHT_OFFSET`` (equal to ``kendall`` row by
    row, to about 10^-10 at 10^4 items).
    """
    return weighted_kendall_rows(ranks_a, ranks_b_rows, UNIFORM_WEIGHT_OFFSET)


def kendall(ranks_a, ranks_b) -> float:
    """Kendall's τ_b (Eq. 7 with ``a_ij = sign(a_j - a_i)``), in O(n log n).

    The uniform-weight case of ``weighted_kendall``; equals ``scipy.stats.kendalltau`` (variant 'b').
    Returns NaN when one ranking is constant.
    """
    a, b = _check_ranks(ranks_a, ranks_b)
    w = np.full(a.size, 1.0 / a.size)
    return _scalar(_kendall_gamma_rows(a[None, :], b[None, :], w[None, :])[0])


# --- internals ---------------------------------------------------------------------------------


def _check_offset(n0: float) -> float:
    n0 = float(n0)
    if not math.isfinite(n0):
        raise ValueError(f"the weight offset n0 must be a finite number, got {n0!r}")
    if n0 < MIN_WEIGHT_OFFSET:
        raise ValueError(f"{MIN_WEIGHT_OFFSET_MESSAGE}, got {n0!r}")
    return n0


def _check_ranks(ranks_a, ranks_b) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(ranks_a, dtype=np.float64)
    b = np.asarray(ranks_b, dtype=np.float64)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"ranks must be one-dimensional arrays, got shapes {a.shape} and {b.shape}")
    if a.size != b.size:
        raise ValueError(f"both rankings must rank the same items: got {a.size} and {b.size} ranks")
    if a.size < 2:
        raise ValueError(f"a correlation needs at least two items, got {a.size}")
    for name, ranks in (("ranks_a", a), ("ranks_b", b)):
        if not np.all(np.isfinite(ranks)):
            first_bad = int(np.flatnonzero(~np.isfinite(ranks))[0])
            raise ValueError(f"{name} must be finite; position {first_bad} holds {ranks[first_bad]!r}")
        if ranks.min() < 1.0:
            first_bad = int(np.argmin(ranks))
            raise ValueError(
                f"{name} must start at 1 (the top); position {first_bad} holds {ranks[first_bad]!r}"
            )
    return a, b


def _check_rows(ranks_a, ranks_b_rows, n0: float) -> tuple[np.ndarray, np.ndarray, float]:
    """The row versions' input as C-contiguous float64: ``a`` of shape 1 × n (one ranking against
    every row) or R × n, ``b`` of shape R × n, and the checked offset."""
    b = np.ascontiguousarray(ranks_b_rows, dtype=np.float64)
    if b.ndim != 2:
        raise ValueError(f"ranks_b_rows must be two-dimensional (rows × items), got shape {b.shape}")
    a = np.ascontiguousarray(ranks_a, dtype=np.float64)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.shape[1] != b.shape[1] or a.shape[0] not in (1, b.shape[0]):
        raise ValueError(
            f"ranks_a must hold one ranking of the {b.shape[1]} items or one per row, got shape {a.shape}"
        )
    for row in (0, -1):  # the checks of the single version, on the first and the last row
        _check_ranks(a[row], b[row])
    if not (np.all(np.isfinite(b)) and np.all(np.isfinite(a)) and b.min() >= 1 and a.min() >= 1):
        raise ValueError("ranks must be finite and start at 1 (the top) in every row")
    return a, b, _check_offset(n0)


def _weights(a: np.ndarray, b: np.ndarray, n0: float) -> np.ndarray:
    raw = 1.0 / (a + n0) ** 2 + 1.0 / (b + n0) ** 2
    return raw / raw.sum()


def _scalar(value) -> float:
    return float(value)


def _pearson_weighted(a: np.ndarray, b: np.ndarray, w: np.ndarray) -> float:
    if a.min() == a.max() or b.min() == b.max():
        return math.nan  # a constant ranking has no spread: σ = 0
    da = a - w @ a
    db = b - w @ b
    spread = (w @ (da * da)) * (w @ (db * db))
    if not spread > 0.0:
        return math.nan  # weights so lopsided that the other ranks' spread rounds to 0: no σ to divide by
    value = (w @ (da * db)) / math.sqrt(spread)
    return float(min(1.0, max(-1.0, value)))


def _sorted_groups_rows(
    values: np.ndarray, w: np.ndarray, order: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per row, with ``order`` sorting the row: the dense rank (0 = smallest) of each sorted value,
    and Σ_g W_g² over the groups of equal values (singletons included)."""
    rows, n = values.shape
    ordered = np.take_along_axis(values, order, axis=1)
    change = np.zeros(values.shape, dtype=np.int64)
    change[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    dense_sorted = np.cumsum(change, axis=1)
    if dense_sorted[:, -1].min() == n - 1:  # no ties in any row: every group is one item
        return dense_sorted, (w * w).sum(axis=1)
    global_group = (dense_sorted + (np.arange(rows, dtype=np.int64) * n)[:, None]).ravel()
    sorted_w = np.take_along_axis(w, order, axis=1).ravel()
    group_weight = np.bincount(global_group, weights=sorted_w, minlength=rows * n)
    return dense_sorted, (group_weight * group_weight).reshape(rows, n).sum(axis=1)


def _dense_ranks_rows(values: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: dense integer ranks (0 = smallest), the number of distinct values, Σ_g W_g² of ties."""
    order = np.argsort(values, axis=1)
    dense_sorted, tied = _sorted_groups_rows(values, w, order)
    dense = np.empty_like(dense_sorted)
    np.put_along_axis(dense, order, dense_sorted, axis=1)
    return dense, dense_sorted[:, -1] + 1, tied


def _kendall_gamma_rows(a: np.ndarray, b: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Γ with sign scores (τ_w, or τ_b for uniform w) for every row of a, b and w (shape R × n)."""
    rows, n = a.shape
    dense_a, groups_a, tied_a = _dense_ranks_rows(a, w)
    dense_b, groups_b, tied_b = _dense_ranks_rows(b, w)

    # Sort by a, ties by b: inside a group tied in a, b ascends, so none of its pairs is discordant.
    joint_key = dense_a * np.int64(n) + dense_b
    order = np.argsort(joint_key, axis=1)
    if groups_a.min() == n or groups_b.min() == n:  # no ties in one ranking: no joint ties either
        tied_joint = (w * w).sum(axis=1)
    else:
        _, tied_joint = _sorted_groups_rows(joint_key, w, order)

    discordant = _weighted_inversions_rows(
        np.take_along_axis(dense_b, order, axis=1), np.take_along_axis(w, order, axis=1)
    )

    total = w.sum(axis=1)
    total_sq = total * total  # 1 up to rounding; kept so that uniform weights give τ_b exactly
    # Over ordered pairs i≠j, with the items sorted by (a, b): pairs not tied in b weigh
    # (Σw)² - Σ_h U_h²; among them the pairs tied in a but not in b weigh Σ_g W_g² - Σ_joint V² and
    # score 0; the rest score +1 unless discordant (-1), and discordant pairs weigh 2·D. Hence
    # Σ_{i≠j} w_i w_j s_a s_b = (Σw)² - Σ_h U_h² - (Σ_g W_g² - Σ_joint V²) - 4·D.
    numerator = total_sq - tied_b - tied_a + tied_joint - 4.0 * discordant
    denominator_sq = (total_sq - tied_a) * (total_sq - tied_b)
    # Z = 0 when one ranking puts every item on the same rank, or when rounding takes 1 - Σ W_g² to 0.
    undefined = (groups_a == 1) | (groups_b == 1) | ~(denominator_sq > 0.0)
    value = np.clip(numerator / np.sqrt(np.where(undefined, 1.0, denominator_sq)), -1.0, 1.0)
    return np.where(undefined, np.nan, value)


def _weighted_inversions_rows(keys: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per row: D = Σ_{i<j, keys_i > keys_j} weights_i · weights_j, in O(n log n) with numpy only.

    ``keys`` (R × n) are non-negative integers. Every row is padded to a power of two, 2^L, with
    weightless items carrying its largest key, and the rows are processed together. Items are
    visited in order of key (ties by position); positions are split top-down by their bits, from the
    most significant: at the level of bit ℓ, the positions that agree above ℓ form a group whose left
    half has bit ℓ = 0. In key order, the left-half weight still to come after a right-half item is
    the weight of the earlier items with a larger key: one cumulative sum per group gives the
    level's share of D. A stable partition of every group (left half first, order kept) prepares the
    next level. Groups of ``_LEAF_GROUP`` items are finished by comparing their pairs directly.
    L levels of O(R·2^L) array operations.
    """
    rows, n = keys.shape
    width = 1 << max(1, (n - 1).bit_length())
    size = rows * width
    padded_keys = np.empty((rows, width), dtype=np.int64)
    padded_keys[:, :n] = keys
    padded_keys[:, n:] = n  # above every key of the row (keys are dense ranks < n)
    padded_weights = np.zeros((rows, width))
    padded_weights[:, :n] = weights
    # Sort every row by key, ties by position; rows stay apart (row r occupies [r·width, (r+1)·width)).
    index = np.arange(size, dtype=np.int64)
    composite = (padded_keys + (np.arange(rows, dtype=np.int64) * (n + 1))[:, None]).ravel() * size + index
    position = np.argsort(composite).astype(np.int32 if size < 2**31 else np.int64)
    weight = padded_weights.ravel()[position]

    # Preallocated buffers: fresh large arrays at every level would cost more than the arithmetic.
    bit = np.empty(size, dtype=position.dtype)
    is_right = np.empty(size, dtype=bool)
    right_weight = np.empty(size)
    left_after = np.empty(size)
    gather = np.empty(size, dtype=np.int64)
    position_next = np.empty_like(position)
    weight_next = np.empty_like(weight)

    totals = np.zeros(rows)
    group = width
    while group > _LEAF_GROUP:
        half = group >> 1
        groups = size // group
        np.right_shift(position, half.bit_length() - 1, out=bit)
        np.bitwise_and(bit, 1, out=bit)
        np.multiply(weight, bit, out=right_weight)
        np.subtract(weight, right_weight, out=left_after)
        per_group = left_after.reshape(groups, group)
        np.cumsum(per_group, axis=1, out=per_group)
        np.subtract(per_group[:, -1:], per_group, out=per_group)
        np.multiply(right_weight, left_after, out=left_after)
        totals += left_after.reshape(rows, width).sum(axis=1)  # slots never leave their row

        np.not_equal(bit, 0, out=is_right)
        halves = gather.reshape(groups, 2, half)  # every group holds exactly `half` items of each side
        halves[:, 1, :] = np.flatnonzero(is_right).reshape(groups, half)
        np.logical_not(is_right, out=is_right)
        halves[:, 0, :] = np.flatnonzero(is_right).reshape(groups, half)
        np.take(position, gather, out=position_next)
        np.take(weight, gather, out=weight_next)
        position, position_next = position_next, position
        weight, weight_next = weight_next, weight
        group = half

    # Small groups: in (key, position) order, s before t is an inversion exactly when position_s >
    # position_t (equal keys are ordered by position), so compare all pairs of a group at once.
    groups = size // group
    leaf_position = position.reshape(groups, group)
    leaf_weight = weight.reshape(groups, group)
    later_in_order = np.triu(np.ones((group, group), dtype=bool), k=1)
    inverted = (leaf_position[:, :, None] > leaf_position[:, None, :]) & later_in_order
    per_group = np.einsum("rs,rst,rt->r", leaf_weight, inverted, leaf_weight)
    return totals + per_group.reshape(rows, width // group).sum(axis=1)
