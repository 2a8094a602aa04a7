"""The quality-control tests of the annotators of a study: position bias, speed, self-agreement, checks.

PURE module: numpy, scipy and the standard library only. Every function works on all annotators at
once: votes are parallel arrays, an annotator (or any group) is a code 0 … G-1, and the per-annotator
figures come out of ``bincount`` and sorts, never out of a Python loop over votes or annotators.

An annotator with fewer than ``MIN_OBSERVATIONS`` observations for a test is not judged by it: with
9 votes or fewer the exact binomial test cannot reach p < 0.004 even if every vote is on one side, and
a share of 9 answers moves in steps of 11 points.
"""

from __future__ import annotations

import numpy as np

from common.numbers import counted

__all__ = [
    "MIN_OBSERVATIONS",
    "binomial_two_sided_p",
    "check_accuracy",
    "crowd_votes_text",
    "holm_adjusted",
    "judged",
    "self_agreement",
]

MIN_OBSERVATIONS = 10


def binomial_two_sided_p(successes, trials) -> np.ndarray:
    """Exact two-sided p-value of ``successes`` in ``trials`` under H0: p = 1/2, element-wise.

    With X ~ Binomial(n, 1/2) and k successes,

        p = min(1, 2 · min(P(X ≤ k), P(X ≥ k))),

    which for p = 1/2 (a symmetric distribution) equals the sum of the probabilities of every outcome
    no more likely than k, the definition of ``scipy.stats.binomtest`` (its default two-sided
    alternative). Used for the position bias of an annotator: k left choices among n non-tie votes
    (9 of 10: p = 2 · 11/1024 = 22/1024). NaN where ``trials`` is 0.
    """
    # Imported here, not with the module: web processes load this module (tests/test_startup.py).
    from scipy.stats import binom

    successes = np.asarray(successes, dtype=np.float64)
    trials = np.asarray(trials, dtype=np.float64)
    at_most = binom.cdf(successes, trials, 0.5)
    at_least = binom.sf(successes - 1, trials, 0.5)
    p_value = np.minimum(1.0, 2.0 * np.minimum(at_most, at_least))
    return np.where(trials > 0, p_value, np.nan)


def holm_adjusted(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979), NaN entries left out of the family and kept NaN.

    With the m finite p-values sorted, p_(1) ≤ … ≤ p_(m), the adjusted value of the i-th is

        p̃_(i) = max_{j ≤ i} min(1, (m − j + 1) · p_(j)),

    and rejecting every hypothesis with p̃ ≤ α keeps the family-wise error rate at α whatever the
    dependence between the tests. It rejects at least what Bonferroni (m · p ≤ α) rejects.
    """
    p_values = np.asarray(p_values, dtype=np.float64)
    adjusted = np.full(p_values.shape, np.nan)
    tested = np.flatnonzero(np.isfinite(p_values))
    if not tested.size:
        return adjusted
    order = tested[np.argsort(p_values[tested], kind="stable")]
    m = order.size
    stepped = np.minimum(1.0, (m - np.arange(m)) * p_values[order])
    adjusted[order] = np.maximum.accumulate(stepped)
    return adjusted


def judged(observations, minimum: int = MIN_OBSERVATIONS) -> np.ndarray:
    """Which annotators have enough observations (``minimum`` or more) to be judged by a test."""
    return np.asarray(observations) >= minimum


def self_agreement(group, pair_key, outcome, groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group: (agreeing pairs of judgements, pairs of judgements, pairs of items judged twice or more).

    A group (an annotator) that judged the same pair of items r ≥ 2 times gave r·(r−1)/2 pairs of
    judgements of it; those with the same ``outcome`` (0 the lower-index item, 1 the higher, 2 a tie)
    agree: Σ_c n_c·(n_c−1)/2 of them, n_c judgements with outcome c. The self-agreement of a group is
    agreeing / pairs of judgements over all its repeated pairs (for r = 2, the share of repeated pairs
    judged the same way both times); undefined (0 / 0) without a repeated pair.
    """
    group = np.asarray(group, dtype=np.int64)
    pair_key = np.asarray(pair_key, dtype=np.int64)
    outcome = np.asarray(outcome, dtype=np.int64)
    if not group.size:
        return np.zeros(groups, np.int64), np.zeros(groups, np.int64), np.zeros(groups, np.int64)
    _, pair = np.unique(pair_key, return_inverse=True)
    pair = pair.reshape(-1)
    pairs = int(pair.max()) + 1
    # One cell per (group, pair) that occurs, then its judgements by outcome.
    cell_key, cell = np.unique(group * pairs + pair, return_inverse=True)
    cell = cell.reshape(-1)
    cell_group = cell_key // pairs
    tally = np.bincount(cell * 3 + outcome, minlength=cell_key.size * 3).reshape(-1, 3)
    judgements = tally.sum(axis=1)
    agreeing = (tally * (tally - 1) // 2).sum(axis=1)
    compared = judgements * (judgements - 1) // 2
    repeated = judgements >= 2
    return (
        np.bincount(cell_group, weights=agreeing, minlength=groups).astype(np.int64),
        np.bincount(cell_group, weights=compared, minlength=groups).astype(np.int64),
        np.bincount(cell_group, weights=repeated, minlength=groups).astype(np.int64),
    )


def check_accuracy(group, correct, groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group: (checks answered, checks failed, accuracy), from one entry per check answer.

    A check (a gold comparison or an instructed-response check) has one correct answer; ``correct``
    says whether each answer was it. The accuracy of a group is correct answers / answers, NaN without
    an answer; failed = answered − correct. Unlike the other tests, no minimum number of answers: a
    check's answer is known, so a single failed check is evidence on its own (an honest annotator fails
    a clear check only by a slip).
    """
    group = np.asarray(group, dtype=np.int64)
    correct = np.asarray(correct, dtype=bool)
    answered = np.bincount(group, minlength=groups).astype(np.int64)
    right = np.bincount(group, weights=correct, minlength=groups).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = np.where(answered > 0, right / np.maximum(answered, 1), np.nan)
    return answered, answered - right, accuracy


def crowd_votes_text(*, people: int, people_votes: int, simulated: int, simulated_votes: int) -> str:
    """How many votes, and whose: people's and simulated annotators' (``simulate_voters``) apart.

    "772 votes: 9 by 1 person, 763 by 100 simulated annotators"; "772 votes by 101 annotators" when no
    vote is simulated; "763 votes, all by 100 simulated annotators" when every vote is.
    """
    votes = counted(people_votes + simulated_votes, "vote")
    machines = f"{counted(simulated, 'simulated annotator')}"
    if not simulated_votes:
        return f"{votes} by {counted(people, 'annotator')}" if people_votes else votes
    if not people_votes:
        return f"{votes}, {'all ' if simulated_votes > 1 else ''}by {machines}"
    by_people = f"{people_votes:,} by {counted(people, 'person', 'people')}"
    return f"{votes}: {by_people}, {simulated_votes:,} by {machines}"
