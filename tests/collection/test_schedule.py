"""Ballot schedules: each item exactly M times, no self-pairs, no repeats when the pool allows."""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collection.schedule import _bad_edges, ballot_schedule, schedule_for_appearances, uniform_schedule


def pair_counts(pairs, n):
    low = np.minimum(pairs[:, 0], pairs[:, 1])
    high = np.maximum(pairs[:, 0], pairs[:, 1])
    return np.bincount(low * n + high, minlength=n * n).reshape(n, n)[np.triu_indices(n, 1)]


@settings(max_examples=300, deadline=None)
@given(st.integers(2, 70), st.integers(1, 50), st.integers(0, 2**32 - 1))
def test_every_item_appears_m_times_and_one_item_m_plus_one_when_odd(n, m, seed):
    pairs = ballot_schedule(n, m, np.random.default_rng(seed))
    assert pairs.shape == ((m * n + 1) // 2, 2)
    appearances = np.bincount(pairs.ravel(), minlength=n)
    assert appearances.min() == m
    assert int((appearances == m + 1).sum()) == (m * n) % 2
    assert appearances.max() <= m + 1
    assert np.all(pairs[:, 0] != pairs[:, 1])
    counts = pair_counts(pairs, n)
    if appearances.max() <= n - 1:
        assert counts.max() == 1  # the pool allows distinct pairs: no repeat
    else:
        assert counts.max() - counts.min() <= 1  # repeats spread evenly over all pairs


def test_the_same_seed_gives_the_same_schedule_and_another_seed_another():
    first = ballot_schedule(200, 20, np.random.default_rng(7))
    np.testing.assert_array_equal(first, ballot_schedule(200, 20, np.random.default_rng(7)))
    assert not np.array_equal(first, ballot_schedule(200, 20, np.random.default_rng(8)))


def test_sides_and_order_are_random():
    pairs = ballot_schedule(2000, 20, np.random.default_rng(1))
    left_share = np.bincount(pairs[:, 0], minlength=2000).sum() / pairs.size
    assert left_share == 0.5  # each comparison has one left item
    # Each item is on the left about half of its 20 times: 10 ± 5σ over 2000 items.
    left_counts = np.bincount(pairs[:, 0], minlength=2000)
    assert abs(left_counts.mean() - 10) < 0.2 and left_counts.std() == pytest.approx(np.sqrt(5), rel=0.15)
    # Order: item indices are not sorted along the schedule.
    assert abs(np.corrcoef(np.arange(pairs.shape[0]), pairs.min(axis=1))[0, 1]) < 0.05


def test_a_large_ballot_has_no_repeated_pair():
    pairs = ballot_schedule(100_000, 20, np.random.default_rng(0))
    assert pairs.shape == (1_000_000, 2)
    keys = np.minimum(pairs[:, 0], pairs[:, 1]) * 100_000 + np.maximum(pairs[:, 0], pairs[:, 1])
    assert np.unique(keys).size == 1_000_000
    np.testing.assert_array_equal(np.bincount(pairs.ravel()), np.full(100_000, 20))


def test_the_papers_last_ballot_repeats_pairs_evenly():
    # 16 items, M = 20 > 15: every pair once, and 5 more appearances each as a 5-regular graph.
    pairs = ballot_schedule(16, 20, np.random.default_rng(0))
    counts = pair_counts(pairs, 16)
    assert sorted(set(counts.tolist())) == [1, 2] and int((counts == 2).sum()) == 16 * 5 // 2


def test_a_dense_ballot_is_the_complete_graph_when_m_is_n_minus_one():
    pairs = ballot_schedule(21, 20, np.random.default_rng(0))
    assert pair_counts(pairs, 21).tolist() == [1] * 210


def test_uniform_schedule_spreads_comparisons_as_evenly_as_possible():
    pairs = uniform_schedule(990, 19_660, np.random.default_rng(0))
    appearances = np.bincount(pairs.ravel(), minlength=990)
    assert pairs.shape[0] == 19_660
    # 39,320 appearances over 990 items: 710 items 40 times, 280 items 39 times.
    assert np.bincount(appearances).tolist()[39:] == [280, 710]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda rng: ballot_schedule(1, 2, rng), "at least two items"),
        (lambda rng: ballot_schedule(5, 0, rng), "positive whole number"),
        (lambda rng: uniform_schedule(5, 0, rng), "positive whole number"),
        (lambda rng: schedule_for_appearances([3, 1, 2], rng), "differ by at most one"),
        (lambda rng: schedule_for_appearances([1, 1, 1], rng), "even number"),
    ],
)
def test_impossible_schedules_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call(np.random.default_rng(0))


@pytest.mark.parametrize("seed", [381, 602, 2611, 2989])
def test_a_pairing_whose_every_pair_is_bad_is_drawn_again_not_given_up(seed):
    # Six items twice each: for these seeds the swaps reached six self-pairs, where no swap has a good
    # partner; the draw used to stop there with an error (a ballot's close then failed).
    from collection.schedule import _sparse_simple_graph

    edges = _sparse_simple_graph(np.full(6, 2), np.random.default_rng([seed, 2]))
    assert np.bincount(edges.ravel(), minlength=6).tolist() == [2] * 6
    assert (edges[:, 0] != edges[:, 1]).all()
    assert len({tuple(sorted(edge)) for edge in edges.tolist()}) == 6


def test_of_a_repeated_pair_every_occurrence_but_the_first_is_the_one_redrawn():
    # 300 edges over 12 items, drawn with many repeats and both orientations of each pair: among equal
    # keys a sort that is not stable may put any occurrence first (numpy's SIMD sorts do, by CPU).
    rng = np.random.default_rng(3)
    edges = rng.integers(0, 12, size=(300, 2))
    low, high = edges.min(axis=1), edges.max(axis=1)
    expected, seen = [], set()
    for index, (a, b) in enumerate(zip(low.tolist(), high.tolist(), strict=True)):
        if a == b or (a, b) in seen:
            expected.append(index)
        seen.add((a, b))
    np.testing.assert_array_equal(_bad_edges(edges, 12), expected)


# The schedule drawn in a process whose numpy runs none of the CPU-specific code it found on this
# machine (NPY_DISABLE_CPU_FEATURES: its sorts and ufuncs as on a CPU without AVX2 or AVX-512).
_PORTABLE_SCHEDULE = """
import hashlib, numpy as np
from collection.schedule import ballot_schedule
for n, m, seed in ((45, 20, 21), (990, 20, 7), (60, 59, 3)):
    print(hashlib.sha256(ballot_schedule(n, m, np.random.default_rng(seed)).tobytes()).hexdigest())
"""


def test_a_seed_draws_the_same_schedule_on_every_cpu():
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    found = [feature for feature in __cpu_dispatch__ if __cpu_features__.get(feature)]
    here = [
        hashlib.sha256(ballot_schedule(n, m, np.random.default_rng(seed)).tobytes()).hexdigest()
        for n, m, seed in ((45, 20, 21), (990, 20, 7), (60, 59, 3))
    ]
    portable = subprocess.run(
        [sys.executable, "-c", _PORTABLE_SCHEDULE],
        env={**os.environ, "NPY_DISABLE_CPU_FEATURES": " ".join(found)},
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        check=True,
    )
    assert portable.stdout.split() == here, f"numpy's CPU features found here: {found}"
