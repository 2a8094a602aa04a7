"""Score models: a study's votes turned into one score per item.

PURE module: numpy, scipy and the standard library only.

``scores_from_votes`` is the one entry point: every caller that needs "the votes, scored as the study
scores them" (a judge's decisions put in the crowd's place, a simulated crowd, a replicate) goes
through it, so that a study's score model is chosen in one place.

* ``borda``: the paper's rescaled Borda (Lombardo et al., Eq. 1, 5, 6; ``scoring.borda``), ballot by
  ballot, each semantic area its own chain when ``strata`` is given (§2.1-2.2). The default, and the
  reference of the paper.
"""

from __future__ import annotations

import numpy as np

from scoring.borda import ballot_tallies, score_ballot, score_ballot_by_stratum

__all__ = ["BORDA", "SCORE_MODELS", "scores_from_votes"]

BORDA = "borda"
SCORE_MODELS = (BORDA,)


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
        For ``borda``: ȳ after the last ballot (Eq. 5), higher is more related.
    """
    if model != BORDA:
        raise ValueError(f"unknown score model {model!r}; one of {', '.join(SCORE_MODELS)}")
    return _borda(ballot, left, right, outcome, item_count, ballot_count, strata)


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
        wins, ties, appearances = ballot_tallies(left[of_ballot], right[of_ballot], outcome[of_ballot], item_count)
        chain = {
            "ballot": number,
            "wins": wins,
            "ties": ties,
            "appearances": appearances,
            "previous_score": score,
            "previous_measured": measured,
        }
        scored = score_ballot(**chain) if strata is None else score_ballot_by_stratum(strata=strata, **chain)[0]
        score, measured = scored.score, scored.measured
    return np.full(item_count, np.nan) if score is None else score
