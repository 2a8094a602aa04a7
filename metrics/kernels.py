"""Compiled row kernels for the bootstrap and the chance level: ρ_w and τ_w of R rankings of n items,
and the tallies of resampled votes.

PURE module: numpy, the standard library and numba (a compiler for these loops, which whole-array numpy
cannot express without a pass per row).

Imported on first use by ``metrics.correlation`` and ``metrics.metrology``, not at their import:
numba and LLVM are large, and web workers that never compute replicates should not carry them
(tests/test_startup.py). ``cache=True`` stores the compiled code on disk (in ``__pycache__`` next to this file, or
numba's per-user cache directory when that is not writable, or ``NUMBA_CACHE_DIR``), so that only the
first process after an install compiles them; later processes load them.

The definitions are those of ``metrics.correlation`` (Lombardo et al., Eq. 7-9), which documents
them; the functions there check the input, these trust it.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

__all__ = [
    "ballot_scores",
    "bootstrap_tallies",
    "compile_all",
    "descending_ranks_rows",
    "kendall_gamma_rows",
    "spearman_weighted_rows",
    "vote_tallies",
]

_LEAF = 16  # runs of this many items are sorted by insertion before merging
# Threads that share the rows of one call: the kernels release the GIL (nogil), so rows computed in
# two threads run on two cores. Each row is computed as it would be alone: the numbers do not change.
THREADS = max(1, min(2, os.cpu_count() or 1))
_SPLIT_AT = 200_000  # row × item cells below which one thread does it all (a thread's start is not worth it)


def rows_in_threads(kernel, row_count: int, cells: int, arguments):
    """``kernel(*arguments(rows))`` for slices ``rows`` of ``range(row_count)`` in up to ``THREADS``
    threads, the results joined in row order; one call on every row when ``cells`` (rows × items)
    is small. ``arguments(rows)`` gives the kernel's arguments for those rows."""
    parts = THREADS if cells >= _SPLIT_AT and row_count >= 2 else 1
    if parts == 1:
        return kernel(*arguments(slice(0, row_count)))
    bounds = np.linspace(0, row_count, parts + 1).astype(int)
    slices = [slice(int(low), int(high)) for low, high in zip(bounds[:-1], bounds[1:], strict=True)]
    with ThreadPoolExecutor(max_workers=parts, thread_name_prefix="metrics-rows") as pool:
        results = list(pool.map(lambda rows: kernel(*arguments(rows)), slices))
    return np.concatenate(results)


@numba.njit(cache=True, nogil=True)
def _row_weights(a_row, b_row, n0, out):
    """The weights of Eq. 9 of one row, ``w_i = (f(a_i) + f(b_i)) / Σ_j (f(a_j) + f(b_j))``, into ``out``."""
    total = 0.0
    for i in range(a_row.size):
        raw = 1.0 / (a_row[i] + n0) ** 2 + 1.0 / (b_row[i] + n0) ** 2
        out[i] = raw
        total += raw
    for i in range(a_row.size):
        out[i] /= total


@numba.njit(cache=True, nogil=True)
def spearman_weighted_rows(a, b, n0):
    """ρ_w (Eq. 8, weights of Eq. 9) of ``a[r]`` (``a[0]`` when a has one row) against ``b[r]``, per row:
    ``Σ_i w_i (a_i - ā)(b_i - b̄) / (σ_a σ_b)``, NaN when a ranking is constant or σ_a σ_b rounds to 0."""
    rows, n = b.shape
    out = np.empty(rows)
    w = np.empty(n)
    for r in range(rows):
        a_row = a[0] if a.shape[0] == 1 else a[r]
        b_row = b[r]
        _row_weights(a_row, b_row, n0, w)
        mean_a = 0.0
        mean_b = 0.0
        constant_a = True
        constant_b = True
        for i in range(n):
            mean_a += w[i] * a_row[i]
            mean_b += w[i] * b_row[i]
            constant_a = constant_a and a_row[i] == a_row[0]
            constant_b = constant_b and b_row[i] == b_row[0]
        if constant_a or constant_b:
            out[r] = np.nan  # a constant ranking has no spread: σ = 0
            continue
        covariance = 0.0
        var_a = 0.0
        var_b = 0.0
        for i in range(n):
            da = a_row[i] - mean_a
            db = b_row[i] - mean_b
            covariance += w[i] * da * db
            var_a += w[i] * da * da
            var_b += w[i] * db * db
        spread = var_a * var_b
        if not spread > 0.0:
            out[r] = np.nan  # weights so lopsided that the spread rounds to 0 (numba raises on x / 0)
            continue
        out[r] = min(1.0, max(-1.0, covariance / np.sqrt(spread)))
    return out


@numba.njit(cache=True, nogil=True)
def _sort_counting(keys, weights, low, high, spare_keys, spare_weights):
    """Sort ``keys[low:high]`` ascending in place (``weights`` move along) and return the weighted
    inversions D = Σ_{s<t, keys_s > keys_t} w_s w_t of the run before sorting; equal keys count nothing.

    Insertion sort of leaves of ``_LEAF`` items (each move past a larger key adds w_s w_t), then
    bottom-up merges: taking an item of the left run adds its weight times the weight already taken
    from the right run (items with a strictly smaller key that came after it). O(m log m).
    """
    inversions = 0.0
    for start in range(low, high, _LEAF):
        stop = min(start + _LEAF, high)
        for t in range(start + 1, stop):
            key = keys[t]
            weight = weights[t]
            s = t - 1
            while s >= start and keys[s] > key:
                inversions += weights[s] * weight
                keys[s + 1] = keys[s]
                weights[s + 1] = weights[s]
                s -= 1
            keys[s + 1] = key
            weights[s + 1] = weight
    source_keys, source_weights = keys, weights
    target_keys, target_weights = spare_keys, spare_weights
    width = _LEAF
    while width < high - low:
        for left_start in range(low, high, 2 * width):
            middle = min(left_start + width, high)
            right_end = min(left_start + 2 * width, high)
            left, right, slot = left_start, middle, left_start
            right_taken = 0.0
            while left < middle and right < right_end:
                if source_keys[left] <= source_keys[right]:
                    inversions += source_weights[left] * right_taken
                    target_keys[slot] = source_keys[left]
                    target_weights[slot] = source_weights[left]
                    left += 1
                else:
                    right_taken += source_weights[right]
                    target_keys[slot] = source_keys[right]
                    target_weights[slot] = source_weights[right]
                    right += 1
                slot += 1
            while left < middle:
                inversions += source_weights[left] * right_taken
                target_keys[slot] = source_keys[left]
                target_weights[slot] = source_weights[left]
                left += 1
                slot += 1
            while right < right_end:
                target_keys[slot] = source_keys[right]
                target_weights[slot] = source_weights[right]
                right += 1
                slot += 1
        source_keys, target_keys = target_keys, source_keys
        source_weights, target_weights = target_weights, source_weights
        width *= 2
    if source_keys is not keys:  # an odd number of merge passes left the result in the spare arrays
        keys[low:high] = source_keys[low:high]
        weights[low:high] = source_weights[low:high]
    return inversions


@numba.njit(cache=True, nogil=True)
def kendall_gamma_rows(a, order_a, b, n0):
    """τ_w (Γ of Eq. 7 with sign scores, weights of Eq. 9) of ``a[r]`` against ``b[r]``, per row.

    ``a`` has one row (shared by every row of b) or R rows; ``order_a`` sorts each row of a. Per row:
    the items in order of a, every run of equal a sorted by b (``_sort_counting``), give Σ_g W_g² of
    the groups tied in a and Σ_joint V² of the groups tied in both; sorting the b values of that
    order counts the weighted discordant pairs D (pairs tied in a are already in b order, so none of
    them counts) and leaves the b groups for Σ_h U_h². Over ordered pairs i ≠ j,
    ``Σ w_i w_j s_a s_b = (Σw)² - Σ_h U_h² - Σ_g W_g² + Σ_joint V² - 4·D`` and
    ``Z = sqrt(((Σw)² - Σ_g W_g²)((Σw)² - Σ_h U_h²))``; NaN when a ranking is constant (Z = 0), or when
    rounding takes Z to 0 (weights far too lopsided: an n0 near -1).
    """
    rows, n = b.shape
    out = np.empty(rows)
    w = np.empty(n)
    sorted_a = np.empty(n)
    keys = np.empty(n)
    key_weights = np.empty(n)
    spare_keys = np.empty(n)
    spare_weights = np.empty(n)
    for r in range(rows):
        shared = a.shape[0] == 1
        a_row = a[0] if shared else a[r]
        order = order_a[0] if shared else order_a[r]
        b_row = b[r]
        _row_weights(a_row, b_row, n0, w)
        total = 0.0
        for i in range(n):
            item = order[i]
            total += w[item]
            sorted_a[i] = a_row[item]
            keys[i] = b_row[item]
            key_weights[i] = w[item]
        total_sq = total * total  # 1 up to rounding; kept so that uniform weights give τ_b exactly

        tied_a = 0.0
        start = 0
        for i in range(1, n + 1):
            if i == n or sorted_a[i] != sorted_a[start]:
                if i - start > 1:
                    _sort_counting(keys, key_weights, start, i, spare_keys, spare_weights)
                group = 0.0
                for s in range(start, i):
                    group += key_weights[s]
                tied_a += group * group
                start = i
        tied_joint = 0.0
        group = key_weights[0]
        for i in range(1, n):
            if sorted_a[i] == sorted_a[i - 1] and keys[i] == keys[i - 1]:
                group += key_weights[i]
            else:
                tied_joint += group * group
                group = key_weights[i]
        tied_joint += group * group

        discordant = _sort_counting(keys, key_weights, 0, n, spare_keys, spare_weights)
        tied_b = 0.0
        group = key_weights[0]
        for i in range(1, n):
            if keys[i] == keys[i - 1]:
                group += key_weights[i]
            else:
                tied_b += group * group
                group = key_weights[i]
        tied_b += group * group

        if sorted_a[0] == sorted_a[n - 1] or keys[0] == keys[n - 1]:
            out[r] = np.nan
            continue
        denominator = (total_sq - tied_a) * (total_sq - tied_b)
        if not denominator > 0.0:
            out[r] = np.nan  # rounding took 1 - Σ W_g² to 0 (numba raises on x / 0)
            continue
        numerator = total_sq - tied_b - tied_a + tied_joint - 4.0 * discordant
        out[r] = min(1.0, max(-1.0, numerator / np.sqrt(denominator)))
    return out


@numba.njit(cache=True, nogil=True)
def _add_votes(counts, left, right, outcome, points, appearances):
    """A vote counted c times adds ``c·outcome`` points to its left item, ``c·(1 - outcome)`` to its
    right item and c appearances to each (the sums behind x of Eq. 1): sums of halves, exact."""
    for vote in range(counts.size):
        drawn = counts[vote]
        if drawn != 0:
            points[left[vote]] += drawn * outcome[vote]
            points[right[vote]] += drawn * (1.0 - outcome[vote])
            appearances[left[vote]] += drawn
            appearances[right[vote]] += drawn


@numba.njit(cache=True, nogil=True)
def vote_tallies(counts, left, right, outcome, points, appearances):
    """Points and appearances (replicates × the ballot's items) of one ballot whose V votes count
    ``counts[r, v]`` times in replicate r; ``left`` and ``right`` are the columns of each vote's items."""
    for r in range(counts.shape[0]):
        _add_votes(counts[r], left, right, outcome, points[r], appearances[r])


@numba.njit(cache=True, nogil=True)
def bootstrap_tallies(draws, left, right, outcome, row_start, points, appearances):
    """As ``vote_tallies`` for replicate rows ``row_start`` on, from the votes drawn with replacement:
    ``draws[r]`` holds the indices of the V votes drawn in replicate ``row_start + r``. The draws are
    counted first, then the votes visited in order, so the per-vote arrays are read sequentially."""
    votes = draws.shape[1]
    counts = np.zeros(votes, dtype=np.int32)  # half the bytes of float64: stays in cache longer
    for r in range(draws.shape[0]):
        counts[:] = 0
        for d in range(votes):
            counts[draws[r, d]] += 1
        _add_votes(counts, left, right, outcome, points[row_start + r], appearances[row_start + r])


@numba.njit(cache=True, nogil=True)
def ballot_scores(columns, points, appearances, score, measured, first):
    """Update the R × N scores ȳ (and how many ballots measured each item) with one ballot's tallies.

    Per replicate row: ``x = points / appearances`` for the items with an appearance (Eq. 1);
    ``y = x`` for the first ballot, else ``y = 1 - b + b·x`` with ``b = Σ(1-x)(1-ȳ) / Σ(1-x)²`` over
    the items that have both x and an earlier ȳ, b = 1 when the denominator vanishes (Eq. 6); ȳ
    becomes the mean of y over the ballots that measured the item (Eq. 5). ``columns`` maps the
    tallies' columns to items.
    """
    for r in range(points.shape[0]):
        slope = 1.0
        if not first:
            numerator = 0.0
            denominator = 0.0
            for c in range(columns.size):
                earlier = score[r, columns[c]]
                if appearances[r, c] > 0 and np.isfinite(earlier):
                    shortfall = 1.0 - points[r, c] / appearances[r, c]
                    denominator += shortfall * shortfall
                    numerator += shortfall * (1.0 - earlier)
            if denominator > 0:
                slope = numerator / denominator
        for c in range(columns.size):
            if appearances[r, c] > 0:
                x = points[r, c] / appearances[r, c]
                y = x if first else 1.0 - slope + slope * x
                item = columns[c]
                earlier = score[r, item] if np.isfinite(score[r, item]) else 0.0
                score[r, item] = (measured[r, item] * earlier + y) / (measured[r, item] + 1.0)
                measured[r, item] += 1.0


@numba.njit(cache=True, nogil=True)
def descending_ranks_rows(values):
    """Per row, the ranks of ``values`` with the highest first and average ranks for ties (what
    ``scipy.stats.rankdata(-values, method="average", axis=1)`` gives): every row sorted by
    ``_sort_counting`` with the items' indices carried along, then each run of equal values given
    the mean of its positions, (first + last) / 2, a multiple of one half and so exact."""
    rows, n = values.shape
    out = np.empty((rows, n))
    keys = np.empty(n)
    items = np.empty(n)
    spare_keys = np.empty(n)
    spare_items = np.empty(n)
    for r in range(rows):
        for i in range(n):
            keys[i] = -values[r, i]
            items[i] = i  # carried as the "weights" of the sort; exact below 2^53
        _sort_counting(keys, items, 0, n, spare_keys, spare_items)
        start = 0
        for i in range(1, n + 1):
            if i == n or keys[i] != keys[start]:
                rank = (start + 1 + i) / 2.0
                for s in range(start, i):
                    out[r, int(items[s])] = rank
                start = i
    return out


def compile_all() -> None:
    """Compile every kernel for the argument types that ``metrics.correlation`` and
    ``metrics.metrology`` pass, on a few items: run at deployment or at a worker's start, it fills
    numba's cache, so that no evaluation waits for the compiler (tens of seconds on a busy 2-core
    machine; see BENCHMARKS.md)."""
    a = np.array([[1.0, 2.0, 3.0]])
    b = np.array([[2.0, 1.0, 3.0]])
    kendall_gamma_rows(a, np.argsort(a, axis=1, kind="stable"), b, 2.0)
    spearman_weighted_rows(a, b, 2.0)
    descending_ranks_rows(b)
    left = np.array([0, 1], dtype=np.int64)
    right = np.array([1, 2], dtype=np.int64)
    outcome = np.array([1.0, 0.5])
    points = np.zeros((1, 3))
    appearances = np.zeros((1, 3))
    vote_tallies(np.ones((1, 2)), left, right, outcome, points, appearances)
    bootstrap_tallies(np.zeros((1, 2), dtype=np.int32), left, right, outcome, 0, points, appearances)
    score = np.full((1, 3), np.nan)
    ballot_scores(np.arange(3, dtype=np.int64), points, appearances, score, np.zeros((1, 3)), True)
