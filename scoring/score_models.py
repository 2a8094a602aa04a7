"""Score models: a study's votes turned into one score per item.

PURE module: numpy, scipy and the standard library only.

``scores_from_votes`` is the one entry point: every caller that needs "the votes, scored as the study
scores them" (a judge's decisions put in the crowd's place, a simulated crowd, a replicate) goes
through it, so that a study's score model is chosen in one place.

* ``borda``: the paper's rescaled Borda (Lombardo et al., Eq. 1, 5, 6; ``scoring.borda``), ballot by
  ballot, each semantic area its own chain when ``strata`` is given (§2.1-2.2). The default, and the
  reference of the paper.
* ``bradley_terry``: Bradley-Terry log-strengths fitted on every ballot's votes at once
  (``scoring.bradley_terry.bradley_terry``; a tie is half a win to each side).
* ``noisy_bradley_terry``: the worker-aware Bradley-Terry that also fits each annotator's reliability
  and left bias (``scoring.bradley_terry.noisy_bradley_terry``, crowd-kit's NoisyBT model).

The Bradley-Terry models see no ballots: the votes of ballots 1 … ``ballot_count`` are fitted together.
They need no ``strata`` either: items of different areas are never compared, so the fit of each area
is its own, centred by the prior.
"""

from __future__ import annotations

import numpy as np

from scoring.borda import ballot_tallies, score_ballot, score_ballot_by_stratum
from scoring.bradley_terry import bradley_terry, noisy_bradley_terry

__all__ = [
    "BORDA",
    "OFFERED_SCORE_MODELS",
    "BRADLEY_TERRY",
    "NOISY_BRADLEY_TERRY",
    "SCORE_MODELS",
    "SCORE_MODEL_LABELS",
    "scores_from_votes",
]

BORDA = "borda"
BRADLEY_TERRY = "bradley_terry"
NOISY_BRADLEY_TERRY = "noisy_bradley_terry"
SCORE_MODELS = (BORDA, BRADLEY_TERRY, NOISY_BRADLEY_TERRY)
# The models a study may choose: Borda and those that beat it in the comparison of docs/protocols.md
# ("Score models compared"); a model that does not win stays in the simulator only.
OFFERED_SCORE_MODELS = (BORDA, BRADLEY_TERRY, NOISY_BRADLEY_TERRY)
SCORE_MODEL_LABELS = {
    BORDA: "Rescaled Borda (Lombardo et al.)",
    BRADLEY_TERRY: "Bradley-Terry",
    NOISY_BRADLEY_TERRY: "Worker-aware Bradley-Terry (annotator reliability and side bias)",
}


def scores_from_votes(
    model: str,
    *,
    ballot,
    left,
    right,
    outcome,
    annotator,
    item_count: int,
    ballot_count: int,
    strata=None,
) -> np.ndarray:
    """Every item's score under score model ``model`` from the votes, by item index (NaN: no score).

    Parameters
    ----------
    model : str
        One of ``SCORE_MODELS``.
    ballot : array_like of int
        Ballot number k (1 … ``ballot_count``) of each vote.
    left, right : array_like of int
        Item index shown on each side.
    outcome : array_like of float
        1 the left item won, 0 the right item won, 0.5 a tie.
    annotator : array_like of int
        Annotator code 0 … A-1 of each vote (read by models that weigh annotators).
    item_count, ballot_count : int
        Items of the study; ballots to score.
    strata : array_like, optional
        Each item's semantic area, for a study ranked per area.

    Returns
    -------
    numpy.ndarray
        For ``borda``: ȳ after the last ballot (Eq. 5); for the Bradley-Terry models: the log-strength
        θ. Higher is more related either way.
    """
    if model == BORDA:
        return _borda(ballot, left, right, outcome, item_count, ballot_count, strata)
    if model not in SCORE_MODELS:
        raise ValueError(f"unknown score model {model!r}; one of {', '.join(SCORE_MODELS)}")
    ballot = np.asarray(ballot, dtype=np.int64)
    counted = (ballot >= 1) & (ballot <= ballot_count)
    left = np.asarray(left, dtype=np.int64)[counted]
    right = np.asarray(right, dtype=np.int64)[counted]
    outcome = np.asarray(outcome, dtype=np.float64)[counted]
    if model == BRADLEY_TERRY:
        return bradley_terry(left, right, outcome, item_count)
    annotator = np.asarray(annotator, dtype=np.int64)[counted]
    return noisy_bradley_terry(left, right, outcome, annotator, item_count).score


def _borda(ballot, left, right, outcome, item_count: int, ballot_count: int, strata) -> np.ndarray:
    """ȳ after the last ballot (Eq. 1, 5, 6), per area when ``strata`` is given."""
    ballot = np.asarray(ballot, dtype=np.int64)
    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    outcome = np.asarray(outcome, dtype=np.float64)
    order = np.argsort(ballot, kind="stable")
    bounds = np.searchsorted(ballot[order], np.arange(1, ballot_count + 2))
    score = measured = None
    for number in range(1, ballot_count + 1):  # a loop over ballots, not votes
        of_ballot = order[bounds[number - 1] : bounds[number]]
        wins, ties, appearances = ballot_tallies(
            left[of_ballot], right[of_ballot], outcome[of_ballot], item_count
        )
        chain = {
            "ballot": number,
            "wins": wins,
            "ties": ties,
            "appearances": appearances,
            "previous_score": score,
            "previous_measured": measured,
        }
        scored = (
            score_ballot(**chain) if strata is None else score_ballot_by_stratum(strata=strata, **chain)[0]
        )
        score, measured = scored.score, scored.measured
    return np.full(item_count, np.nan) if score is None else score
