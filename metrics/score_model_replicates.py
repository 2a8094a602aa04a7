"""Bootstrap replicates of a study's scores under any score model (``scoring.score_models``).

PURE module: numpy, scipy, the standard library and the other pure modules only; randomness comes in
as a ``numpy.random.Generator``.

The votes are resampled exactly as ``metrics.metrology.bootstrap_scores`` resamples them for rescaled
Borda: within each ballot, V_k draws with replacement from its V_k votes, ballot after ballot, from one
generator's stream in the same order. Called with a generator of the same seed, every model's replicate
r is therefore fitted on the same resampled votes as Borda's replicate r, and the models' intervals
differ only by the model. A Bradley-Terry replicate refits the model on all ballots' votes, each vote
weighted by its bootstrap count, warm started from the fit on the study's own votes.
"""

from __future__ import annotations

import numpy as np

from metrics.metrology import _DRAW_BLOCK, BallotVotes, bootstrap_scores
from scoring.bradley_terry import bradley_terry, noisy_bradley_terry
from scoring.score_models import BORDA, BRADLEY_TERRY, SCORE_MODELS

__all__ = ["bootstrap_multiplicities", "model_bootstrap_scores"]


def bootstrap_multiplicities(
    ballots: list[BallotVotes], rng: np.random.Generator, replicates: int
) -> list[np.ndarray]:
    """How many times each vote is drawn in each bootstrap replicate, ballot by ballot.

    For ballot k, an R × V_k array of counts of the draws ``rng.integers(0, V_k, (R, V_k))``, taken in
    the blocks of ``bootstrap_scores`` (the same stream): ``metrology.replicate_scores`` on these
    counts gives ``bootstrap_scores``' replicates. Counts are uint8 (a vote drawn more than 255 times
    among V_k draws has probability below 10^-500).
    """
    if replicates < 1:
        raise ValueError(f"replicates must be at least 1, got {replicates}")
    counts = []
    for ballot in ballots:
        votes = ballot.vote_count
        of_ballot = np.zeros((replicates, votes), dtype=np.uint8)
        block = max(1, _DRAW_BLOCK // max(votes, 1))
        for start in range(0, replicates if votes else 0, block):
            rows = min(block, replicates - start)
            draws = rng.integers(0, votes, size=(rows, votes), dtype=np.int32)
            flat = (draws + (np.arange(rows, dtype=np.int64) * votes)[:, None]).ravel()
            tally = np.bincount(flat, minlength=rows * votes).reshape(rows, votes)
            of_ballot[start : start + rows] = np.minimum(tally, 255)
        counts.append(of_ballot)
    return counts


def model_bootstrap_scores(
    model: str,
    ballots: list[BallotVotes],
    item_count: int,
    rng: np.random.Generator,
    replicates: int = 200,
    *,
    strata: np.ndarray | None = None,
) -> np.ndarray:
    """R × N bootstrap replicates of the scores under ``model`` (NaN: an item without a drawn vote).

    ``borda`` is ``metrics.metrology.bootstrap_scores`` itself (Eq. 1, 5, 6; per area with
    ``strata``). The Bradley-Terry models refit once per replicate on the resampled votes
    (``bootstrap_multiplicities``, the same draws), each warm started from the fit on every vote, so
    their cost is R fits (docs/protocols.md, "Score models compared", gives the times).
    """
    if model == BORDA:
        return bootstrap_scores(ballots, item_count, rng, replicates, strata=strata)
    if model not in SCORE_MODELS:
        raise ValueError(f"unknown score model {model!r}; one of {', '.join(SCORE_MODELS)}")
    counts = bootstrap_multiplicities(ballots, rng, replicates)
    left = np.concatenate([b.left for b in ballots]).astype(np.int64)
    right = np.concatenate([b.right for b in ballots]).astype(np.int64)
    outcome = np.concatenate([b.outcome for b in ballots]).astype(np.float64)
    annotator = np.concatenate([b.annotator for b in ballots]).astype(np.int64)
    weights = np.hstack(counts) if counts else np.zeros((replicates, 0), dtype=np.uint8)
    scores = np.full((replicates, item_count), np.nan)
    if model == BRADLEY_TERRY:
        start = bradley_terry(left, right, outcome, item_count)
        for row in range(replicates):  # a loop over replicates; each fit is vectorised over the votes
            scores[row] = bradley_terry(left, right, outcome, item_count, weight=weights[row], initial=start)
        return scores
    start = noisy_bradley_terry(left, right, outcome, annotator, item_count)
    for row in range(replicates):
        scores[row] = noisy_bradley_terry(
            left, right, outcome, annotator, item_count, weight=weights[row], initial=start
        ).score
    return scores
