"""How far the rankings of a study's score models agree: each model against the study's reference
ranking and every pair of models against each other, on the same items.

PURE module: numpy, the standard library and the project's pure modules only.

Every coefficient is one of ``metrics.correlation`` (Lombardo et al., Eq. 7-9) on the ranks of the items
that both rankings score (``ranks_from_scores``: 1 = the highest score, average ranks for ties); the
top-k overlap counts the items that both rankings put among their first k (the top of a ranking is what
the paper's procedure measures best, §2.7).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from common.numbers import finite_or_none
from metrics.correlation import kendall, ranks_from_scores, spearman, weighted_kendall, weighted_spearman
from scoring.borda import final_order

__all__ = ["agreement_table", "model_ranks", "ranking_agreement", "top_overlap"]

COEFFICIENTS = ("rho_w", "tau_w", "rho", "tau")


def model_ranks(score, last_ballot=None) -> np.ndarray:
    """Each item's place (1 = first) when the items are ordered by ``score``, highest first; 0 where
    the score is NaN.

    Ties go to the item that reached a later ballot (``last_ballot``), then to the lower index: the rule
    of the study's final ranking (``scoring.borda.final_order``), so that the study's own model gives
    back the study's final ranks.
    """
    score = np.asarray(score, dtype=np.float64)
    last = np.zeros(score.size, dtype=np.int64) if last_ballot is None else np.asarray(last_ballot)
    order = final_order(score, last)
    scored = np.isfinite(score[order])
    rank = np.zeros(score.size, dtype=np.int64)
    rank[order[scored]] = np.arange(1, int(scored.sum()) + 1)
    return rank


def ranking_agreement(score_a, score_b, *, weight_offset: float = 2.0) -> dict:
    """ρ_w and τ_w (Eq. 8, weights of Eq. 9 with offset n0 = ``weight_offset``), ρ and τ_b (Eq. 7)
    between the rankings of two score vectors, over the items both score.

    Returns
    -------
    dict
        ``items`` (the items both score) and each coefficient, None where it is undefined (fewer than
        two such items, or a ranking that ties them all).
    """
    score_a = np.asarray(score_a, dtype=np.float64)
    score_b = np.asarray(score_b, dtype=np.float64)
    both = np.isfinite(score_a) & np.isfinite(score_b)
    items = int(both.sum())
    if items < 2:
        return {"items": items} | dict.fromkeys(COEFFICIENTS)
    ranks_a, ranks_b = ranks_from_scores(score_a[both]), ranks_from_scores(score_b[both])
    if np.ptp(ranks_a) == 0 or np.ptp(ranks_b) == 0:  # a constant ranking has no order to agree with
        return {"items": items} | dict.fromkeys(COEFFICIENTS)
    return {
        "items": items,
        "rho_w": finite_or_none(weighted_spearman(ranks_a, ranks_b, weight_offset)),
        "tau_w": finite_or_none(weighted_kendall(ranks_a, ranks_b, weight_offset)),
        "rho": finite_or_none(spearman(ranks_a, ranks_b)),
        "tau": finite_or_none(kendall(ranks_a, ranks_b)),
    }


def top_overlap(score, reference, k: int) -> dict:
    """How many of the reference's first k items the ranking by ``score`` also puts among its first k,
    over the items both score (k is cut to their number).

    Returns
    -------
    dict
        ``k`` (as used), ``shared`` (|top_k(score) ∩ top_k(reference)|) and ``share`` (shared / k; None
        when k is 0).
    """
    score = np.asarray(score, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    both = np.flatnonzero(np.isfinite(score) & np.isfinite(reference))
    k = int(min(k, both.size))
    if k == 0:
        return {"k": 0, "shared": 0, "share": None}
    top_model = both[np.argsort(-score[both], kind="stable")[:k]]
    top_reference = both[np.argsort(-reference[both], kind="stable")[:k]]
    shared = int(np.intersect1d(top_model, top_reference).size)
    return {"k": k, "shared": shared, "share": shared / k}


def agreement_table(
    scores: Mapping[str, np.ndarray],
    reference,
    *,
    weight_offset: float = 2.0,
    top_k: int = 10,
    mask=None,
) -> dict:
    """Every model's agreement with the reference ranking and every pair of models' with each other.

    Parameters
    ----------
    scores : mapping of str to array_like
        Each score model's scores by item index (NaN: none), in the order to report.
    reference : array_like
        The reference scores (the study's final ranking) by item index.
    weight_offset : float
        n0 of Eq. 9 for ρ_w and τ_w.
    top_k : int
        k of the top-k overlap with the reference.
    mask : array_like of bool, optional
        The items to compare (the others are left out of every ranking); all when None.

    Returns
    -------
    dict
        ``models``: per model ``{"model", "scored", "reference": ranking_agreement, "top": top_overlap}``;
        ``pairs``: per pair (a before b) ``{"a", "b", **ranking_agreement}``; ``matrix``: ρ_w of every
        pair as rows and columns in the order of ``scores`` (1 on the diagonal of a model that scores at
        least two items).
    """
    names = list(scores)
    reference = np.asarray(reference, dtype=np.float64)
    inside = np.ones(reference.size, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    reference = np.where(inside, reference, np.nan)
    kept = {name: np.where(inside, np.asarray(scores[name], dtype=np.float64), np.nan) for name in names}
    models = [
        {
            "model": name,
            "scored": int(np.isfinite(kept[name]).sum()),
            "reference": ranking_agreement(kept[name], reference, weight_offset=weight_offset),
            "top": top_overlap(kept[name], reference, top_k),
        }
        for name in names
    ]
    pairs = []
    matrix = [[None] * len(names) for _ in names]
    for i, first in enumerate(names):  # a loop over pairs of models (a handful), not over items
        matrix[i][i] = 1.0 if np.isfinite(kept[first]).sum() >= 2 else None
        for j in range(i + 1, len(names)):
            second = names[j]
            agreement = ranking_agreement(kept[first], kept[second], weight_offset=weight_offset)
            pairs.append({"a": first, "b": second, **agreement})
            matrix[i][j] = matrix[j][i] = agreement["rho_w"]
    return {
        "weight_offset": float(weight_offset),
        "top_k": int(top_k),
        "items": int(np.isfinite(reference).sum()),
        "models": models,
        "pairs": pairs,
        "matrix": {"models": names, "rho_w": matrix},
    }
