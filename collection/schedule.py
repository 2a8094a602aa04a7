"""The comparisons of one ballot, drawn before the ballot opens.

PURE module: numpy, scipy and the standard library only; randomness comes in as a
``numpy.random.Generator``.

Lombardo et al. §2.5: in every ballot each item appears exactly M times (one item M+1 times when
M·N(k) is odd, footnote 6). Here, moreover, no item is compared with itself, no pair of items is
compared twice in one ballot unless the ballot has too few items for that (M > N(k)-1), in which
case every pair is compared either ⌊·⌋ or ⌈·⌉ times the same number of times, the order of the
comparisons is random, and so is which item is shown on the left.

A schedule is an integer array of shape (comparisons, 2): column 0 is the left item, column 1 the
right item, both as positions 0 … n-1 in the ballot's list of items.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ballot_schedule", "schedule_for_appearances", "stratified_schedule", "uniform_schedule"]

_MAX_REPAIR_ROUNDS = 10_000


def ballot_schedule(item_count: int, appearances: int, rng: np.random.Generator) -> np.ndarray:
    """Comparisons of one ballot: every item ``appearances`` (M) times, one random item M+1 times
    when M·N(k) is odd; ⌈M·N(k)/2⌉ comparisons (Eq. 3)."""
    _check(item_count, appearances)
    degrees = np.full(item_count, appearances, dtype=np.int64)
    if (item_count * appearances) % 2 == 1:
        degrees[rng.integers(item_count)] += 1
    return schedule_for_appearances(degrees, rng)


def stratified_schedule(strata, appearances: int, rng: np.random.Generator) -> np.ndarray:
    """Comparisons of one ballot ranked per semantic area (§2.1-2.2): items meet items of their stratum only.

    ``strata`` gives the stratum (the semantic area) of each of the ballot's items, by position. Each
    stratum gets its own ``ballot_schedule``: every item appears M times, one random item of a stratum
    M+1 times when M·N_a(k) is odd, ⌈M·N_a(k)/2⌉ comparisons per stratum; the strata's comparisons are
    then shuffled together, so that annotators see the areas mixed. Every stratum needs two items.
    """
    strata = np.asarray(strata)
    if strata.ndim != 1 or strata.size < 2:
        raise ValueError("strata must give the stratum of each of at least two items")
    labels, counts = np.unique(strata, return_counts=True)
    if counts.min() < 2:
        lonely = labels[counts < 2].tolist()
        raise ValueError(f"every stratum needs at least two items; these have one: {lonely}")
    positions_by_label = np.argsort(strata, kind="stable")
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    parts = [
        positions_by_label[start : start + count][ballot_schedule(int(count), appearances, rng)]
        for start, count in zip(starts.tolist(), counts.tolist(), strict=True)
    ]
    pairs = np.concatenate(parts)
    return pairs[rng.permutation(pairs.shape[0])]


def uniform_schedule(item_count: int, comparison_count: int, rng: np.random.Generator) -> np.ndarray:
    """``comparison_count`` comparisons spread as evenly as possible over all items (§2.4).

    Every item appears ⌊2·N_comp/N_items⌋ or ⌈2·N_comp/N_items⌉ times (M_unif of Eq. 4); which items
    get the extra appearance is random.
    """
    if int(comparison_count) != comparison_count or comparison_count < 1:
        raise ValueError(f"comparison_count must be a positive whole number, got {comparison_count!r}")
    _check(item_count, 1)
    stubs = 2 * int(comparison_count)
    degrees = np.full(item_count, stubs // item_count, dtype=np.int64)
    degrees[rng.choice(item_count, size=stubs % item_count, replace=False)] += 1
    return schedule_for_appearances(degrees, rng)


def schedule_for_appearances(degrees, rng: np.random.Generator) -> np.ndarray:
    """Comparisons in which item ``i`` appears exactly ``degrees[i]`` times.

    ``degrees`` must sum to an even number and differ by at most one between items. Let
    q = ⌊min(degrees)/(n-1)⌋: every pair of items is compared q times (q full rounds), and the
    remaining appearances, at most n-1 per item, form a random simple graph, so no pair is compared
    more than q+1 times. The simple graph is drawn by pairing appearance slots at random and then
    repairing self-pairs and repeated pairs with random double-edge swaps, all vectorised; when it
    is denser than half the complete graph, its sparse complement is drawn instead.
    """
    degrees = np.asarray(degrees, dtype=np.int64)
    n = degrees.size
    if n < 2:
        raise ValueError(f"a ballot needs at least two items, got {n}")
    if degrees.min() < 0 or degrees.sum() % 2 == 1 or degrees.max() - degrees.min() > 1:
        raise ValueError("appearances must be non-negative, sum to an even number and differ by at most one")
    rounds = int(degrees.min()) // (n - 1)
    residual = degrees - rounds * (n - 1)
    parts = []
    if rounds:
        upper_left, lower_right = np.triu_indices(n, k=1)
        parts.append(np.tile(np.column_stack((upper_left, lower_right)), (rounds, 1)))
    if residual.sum():
        parts.append(_simple_graph(residual, rng))
    pairs = np.concatenate(parts) if len(parts) > 1 else parts[0]
    order = rng.permutation(pairs.shape[0])
    first, second = pairs[order, 0], pairs[order, 1]
    swap = rng.random(order.size) < 0.5
    return np.column_stack((np.where(swap, second, first), np.where(swap, first, second)))


def _check(item_count: int, appearances: int) -> None:
    if int(item_count) != item_count or item_count < 2:
        raise ValueError(f"a ballot needs at least two items, got {item_count!r}")
    if int(appearances) != appearances or appearances < 1:
        raise ValueError(f"appearances M must be a positive whole number, got {appearances!r}")


def _simple_graph(degrees: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Edges of a random simple graph with the given near-regular degrees, each at most n-1."""
    n = degrees.size
    if degrees.mean() > (n - 1) / 2:
        complement = _sparse_simple_graph((n - 1) - degrees, rng)
        present = np.ones((n, n), dtype=bool)
        np.fill_diagonal(present, False)
        present[complement[:, 0], complement[:, 1]] = False
        present[complement[:, 1], complement[:, 0]] = False
        upper_left, lower_right = np.nonzero(np.triu(present, k=1))
        return np.column_stack((upper_left, lower_right))
    return _sparse_simple_graph(degrees, rng)


def _sparse_simple_graph(degrees: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Random pairing of appearance slots, then double-edge swaps until no self-pair or repeat."""
    n = degrees.size
    slots = np.repeat(np.arange(n, dtype=np.int64), degrees)
    if slots.size == 0:
        return np.empty((0, 2), dtype=np.int64)
    edges = rng.permutation(slots).reshape(-1, 2)
    edge_count = edges.shape[0]
    for _ in range(_MAX_REPAIR_ROUNDS):
        bad = _bad_edges(edges, n)
        if bad.size == 0:
            return edges
        if bad.size == edge_count:  # every edge bad: no swap has a good partner, ever; pair afresh
            edges = rng.permutation(slots).reshape(-1, 2)
            continue
        # Swap every bad edge (u, v) with a random partner (x, y): (u, x), (v, y) or (u, y), (v, x).
        # Only swaps whose two edges appear in no other swap of this round are applied.
        partners = rng.integers(edge_count, size=bad.size)
        involved = np.concatenate((bad, partners))
        counts = np.bincount(involved, minlength=edge_count)
        usable = (counts[bad] == 1) & (counts[partners] == 1)
        first, second = bad[usable], partners[usable]
        if first.size == 0:
            continue
        v = edges[first, 1]
        x, y = edges[second, 0], edges[second, 1]
        cross = rng.random(first.size) < 0.5
        edges[first, 1] = np.where(cross, y, x)
        edges[second, 0] = v
        edges[second, 1] = np.where(cross, x, y)
    raise RuntimeError(
        f"could not draw a schedule without repeated pairs for {n} items after {_MAX_REPAIR_ROUNDS} rounds"
    )


def _bad_edges(edges: np.ndarray, n: int) -> np.ndarray:
    """Indices of self-pairs and of every occurrence of a repeated pair but its first.

    The sort is stable, so "first" is the lowest index whatever sort numpy runs: its default sort
    orders equal keys as its SIMD code for the machine's CPU does (AVX2, AVX-512 or none), and with it
    the same seed drew different schedules on different machines.
    """
    low = np.minimum(edges[:, 0], edges[:, 1])
    high = np.maximum(edges[:, 0], edges[:, 1])
    keys = low * n + high
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    bad = np.zeros(keys.size, dtype=bool)
    bad[order[1:][sorted_keys[1:] == sorted_keys[:-1]]] = True
    bad |= low == high
    return np.flatnonzero(bad)
