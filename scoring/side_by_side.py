"""Every score model's scores and ranks of a study's items, side by side, from the same votes.

The votes are those the final ranking counts: every vote of the study's closed ballots
(``collection.arrays.study_votes(closed_only=True)``; an exclusion never re-runs a closed ballot,
``scoring.exclusion``). Each model of ``scoring.score_models.SCORE_MODELS`` scores them through
``scores_from_votes``, each semantic area its own chain in a study ranked per area. The results page,
the exports (``score_<model>``, ``rank_<model>``) and the instrument card's "Score models" section
read them from here.

Fitting a model can take seconds on a large study: the result is kept in the cache for the study's
state (status, closed ballots, votes), and above ``SIDE_BY_SIDE_MAX_ITEMS`` items only the study's own
score model is computed.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
from django.core.cache import cache
from django.db.models import Count, Max

from collection import arrays
from collection.models import Ballot, Study, Vote
from common.numbers import finite_or_none
from common.tasks import enqueue_on_commit
from scoring.borda import ranks_within
from scoring.model_agreement import agreement_table, model_ranks
from scoring.score_models import (
    BORDA,
    BRADLEY_TERRY,
    NOISY_BRADLEY_TERRY,
    SCORE_MODEL_LABELS,
    SCORE_MODELS,
    scores_from_votes,
)

logger = logging.getLogger(__name__)

# Every model is fitted for a study of at most this many items (about 200,000 votes); above it only
# the study's own score model, whose scores make its final ranking.
SIDE_BY_SIDE_MAX_ITEMS = 10_000
# The results page computes the side-by-side in the request up to this many items (as the card page
# does, metrics.instrument.CARD_SYNC_ITEMS); a larger study's is computed in a task meanwhile.
SIDE_BY_SIDE_SYNC_ITEMS = 1000
SIDE_BY_SIDE_CACHE_KEY = "side-by-side:{}:{}"
SIDE_BY_SIDE_REQUESTED_KEY = "side-by-side-requested:{}"
SIDE_BY_SIDE_CACHE_SECONDS = 24 * 3600

# What each score model is, in one line, for the results page and the card (their names are
# scoring.score_models.SCORE_MODEL_LABELS). A model without an entry here is described by its name.
MODEL_DESCRIPTIONS = {
    BORDA: (
        "the paper's score: each ballot's Borda win ratios rescaled to the earlier ballots and averaged "
        "(Lombardo et al., Eq. 1, 5, 6); the default, and the reference of the paper"
    ),
    BRADLEY_TERRY: (
        "Bradley-Terry log-strengths fitted by maximum likelihood on every ballot's votes at once "
        "(P(i beats j) = π_i / (π_i + π_j); a tie is half a win to each side)"
    ),
    NOISY_BRADLEY_TERRY: (
        "Bradley-Terry with each annotator's reliability and side bias fitted too (crowd-kit's noisy "
        "Bradley-Terry): careless annotators weigh less without being excluded"
    ),
}


def model_label(model: str) -> str:
    """The score model's name in words (``SCORE_MODEL_LABELS``), or its code when it has none."""
    return SCORE_MODEL_LABELS.get(model, model.replace("_", " "))


def model_description(model: str) -> str:
    """What the score model is, in one line."""
    return MODEL_DESCRIPTIONS.get(model, model_label(model))


def study_score_model(study: Study) -> str:
    """The score model that made the study's ranking: its ``score_model``, rescaled Borda by default."""
    return getattr(study, "score_model", "") or BORDA


def score_columns(models=SCORE_MODELS) -> tuple[str, ...]:
    """The export columns of the score models: ``score_<model>`` and ``rank_<model>`` for each."""
    return tuple(column for model in models for column in (f"score_{model}", f"rank_{model}"))


@dataclass(frozen=True)
class ModelScores:
    """Each score model's scores and ranks of a study's items, by item index."""

    models: tuple[str, ...]  # every model of SCORE_MODELS, the study's own first
    reference: str  # the study's score model
    fitted: tuple[str, ...]  # the models computed (above SIDE_BY_SIDE_MAX_ITEMS: the study's own only)
    item_count: int
    votes: int
    score: dict  # model → scores (NaN: none, or a model not fitted)
    rank: dict  # model → place by its scores (1 = first, 0 none), the final ranking's tie rule
    area_rank: dict  # model → place within the item's semantic area (0 none)

    def cells(self, index: int) -> list:
        """The ``score_columns`` cells of item ``index``: score (None where none) and rank (None where none)."""
        cells = []
        for model in self.models:
            score = float(self.score[model][index])
            rank = int(self.rank[model][index])
            cells += [score if np.isfinite(score) else None, rank or None]
        return cells

    def fields(self, index: int) -> dict:
        """The ``score_columns`` of item ``index`` as a dict (the JSON export)."""
        return dict(zip(score_columns(self.models), self.cells(index), strict=True))


def _state_key(study: Study) -> str:
    """The state the side-by-side is computed from: status, closed ballots and their votes (a vote in the
    open ballot changes nothing here until its ballot closes)."""
    votes = Vote.objects.filter(ballot__study=study, ballot__status=Ballot.Status.CLOSED).aggregate(
        count=Count("pk"), last=Max("pk")
    )
    closed = study.ballots.filter(status=Ballot.Status.CLOSED).count()
    return f"{study.status}:{closed}:{votes['count']}:{votes['last']}"


def model_scores_compute(*, study: Study) -> ModelScores:
    """Every score model's scores of the study's items from the votes of its closed ballots."""
    item_count = study.items.count()
    votes = arrays.study_votes(study_id=study.pk, closed_only=True)
    ballot_count = study.ballots.filter(status=Ballot.Status.CLOSED).count()
    _, annotator = np.unique(votes.annotator, return_inverse=True)
    per_area = study.ranking_scope == Study.RankingScope.PER_AREA
    item_area = arrays.item_areas(study_id=study.pk)
    _, last_ballot = arrays.latest_scores(study_id=study.pk, item_count=item_count)
    reference = study_score_model(study)
    models = (reference, *(model for model in SCORE_MODELS if model != reference))
    fitted = models if item_count <= SIDE_BY_SIDE_MAX_ITEMS else (reference,)
    score, rank, area_rank = {}, {}, {}
    for model in models:  # a loop over the score models, not over items or votes
        if model in fitted and len(votes):  # no vote, no score: every model leaves the items unscored
            score[model] = scores_from_votes(
                model,
                ballot=votes.ballot,
                left=votes.left,
                right=votes.right,
                outcome=votes.outcome,
                annotator=annotator,
                item_count=item_count,
                ballot_count=ballot_count,
                strata=item_area if per_area else None,
            )
        else:
            score[model] = np.full(item_count, np.nan)
        rank[model] = model_ranks(score[model], last_ballot)
        area_rank[model] = ranks_within(item_area, rank[model])
    return ModelScores(
        models=models,
        reference=reference,
        fitted=fitted,
        item_count=item_count,
        votes=len(votes),
        score=score,
        rank=rank,
        area_rank=area_rank,
    )


def study_model_scores(*, study: Study, compute: bool = True) -> ModelScores | None:
    """``model_scores_compute`` for the study's current state, from the cache when it holds it; computed
    (and kept) otherwise, unless ``compute`` is False: then None."""
    # The models in the key: a model added, or the study's own changed, is a new side-by-side.
    models = study_score_model(study) + "+" + ",".join(SCORE_MODELS)
    key = SIDE_BY_SIDE_CACHE_KEY.format(study.pk, _state_key(study) + ":" + models)
    try:
        found = cache.get(key)
    except Exception:  # the cache (Redis) is away: compute without it
        logger.warning("cache unavailable; the side-by-side of study %s is computed again", study.pk)
        found = None
    if found is not None:
        return found
    if not compute:
        return None
    produced = model_scores_compute(study=study)
    try:
        cache.set(key, produced, SIDE_BY_SIDE_CACHE_SECONDS)
    except Exception:
        logger.warning("the side-by-side of study %s not cached: the cache does not answer", study.pk)
    return produced


def study_model_scores_or_request(*, study: Study) -> ModelScores | None:
    """The side-by-side for a page: cached, or computed now for a study of at most
    ``SIDE_BY_SIDE_SYNC_ITEMS`` items; otherwise None, once its computation has been asked for in the
    background (the task ``scoring.side_by_side``, at most once per study while the mark lasts)."""
    found = study_model_scores(study=study, compute=study.items.count() <= SIDE_BY_SIDE_SYNC_ITEMS)
    if found is not None:
        return found
    try:
        first_ask = cache.add(SIDE_BY_SIDE_REQUESTED_KEY.format(study.pk), True, timeout=300)
    except Exception:  # the cache is away: ask anyway; the task is idempotent
        first_ask = True
    if first_ask:
        enqueue_on_commit(
            "scoring.side_by_side",
            study.pk,
            recovered_by="the next visit of the results page",
            after_response=True,
        )
    return None


def side_by_side_page(*, study: Study, dataset, limit: int, weight_offset: float = 2.0) -> dict | None:
    """What the results page shows of the score models for a finished study: each model (the study's own
    first), the first ``limit`` items of the study's ranking with every model's rank and score, and the
    models' agreement (``scoring.model_agreement.agreement_table``, ρ_w at n0 = ``weight_offset``) over
    every item; per semantic area in a study ranked per area. ``{"pending": True, "recheck": seconds}``
    while a large study's is computed in the background; None for a study that has not finished."""
    if study.status != Study.Status.FINISHED:
        return None
    found = study_model_scores_or_request(study=study)
    if found is None:  # the page checks again once the fit should be done: about 1 s per 1000 items
        return {"pending": True, "recheck": max(5, math.ceil(study.items.count() / 1000))}
    scores = {model: found.score[model] for model in found.fitted}
    models = [
        {
            "name": model,
            "label": model_label(model),
            "description": model_description(model),
            "own": model == found.reference,
            "fitted": model in found.fitted,
        }
        for model in found.models
    ]
    order = dataset.order()

    def rows(positions: np.ndarray, ranks: dict) -> list[dict]:
        shown = positions[np.isfinite(dataset.score[positions])][:limit]
        return [
            {
                "item": f"{dataset.token_a[position]} – {dataset.token_b[position]}",
                "area": dataset.area[position],
                "cells": [
                    {
                        "rank": int(ranks[model][position]) or None,
                        "score": finite_or_none(found.score[model][position]),
                    }
                    for model in found.models
                ],
            }
            for position in shown.tolist()  # the first ``limit`` items, a page's worth
        ]

    def agreement(mask) -> dict:
        table = agreement_table(scores, dataset.score, weight_offset=weight_offset, mask=mask)
        labels = {model: model_label(model) for model in found.models}
        table["matrix"]["labels"] = [labels[model] for model in table["matrix"]["models"]]
        for entry, row in zip(table["models"], table["matrix"]["rho_w"], strict=True):  # same order
            entry.update(label=labels[entry["model"]], rho_w_row=row)
        return table

    groups = []
    if study.ranking_scope == Study.RankingScope.PER_AREA:
        area = np.asarray(dataset.area, dtype=object)
        for name in dataset.area_names():  # a loop over areas, not items
            inside = area == name
            groups.append(
                {
                    "area": name,
                    "items": int(inside.sum()),
                    "rows": rows(order[inside[order]], found.area_rank),
                    "agreement": agreement(inside),
                }
            )
    else:
        groups.append(
            {
                "area": None,
                "items": len(dataset),
                "rows": rows(order, found.rank),
                "agreement": agreement(None),
            }
        )
    return {
        "pending": False,
        "reference": found.reference,
        "reference_label": model_label(found.reference),
        "models": models,
        "fitted": list(found.fitted),
        "max_items": SIDE_BY_SIDE_MAX_ITEMS,
        "weight_offset": weight_offset,
        "groups": groups,
    }
