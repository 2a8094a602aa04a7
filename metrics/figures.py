"""The study-level figures a model is measured against, cached: the bootstrap replicates of the scores ȳ
and the chance level of ρ_w, τ_w, ρ and τ; and a model's result against them.

One set of replicates per study, drawn from a generator seeded by the study, is the single source of
every bootstrap figure: the instrument card's precision, the evaluations' intervals and the
leaderboard's paired comparisons. So the card's precision and a model's interval describe the same
resampling, and comparisons between models are paired.

A figure is stored in a ``StudyFigure`` row with the fingerprint of the study's state (its status and
votes) and recomputed when that state has changed. ``store=False`` reads a stored figure that is
still current, and otherwise computes it without storing it (for requests that must not write).
"""

from __future__ import annotations

import io
import json

import numpy as np

from collection import arrays
from collection.models import Study
from collection.parts import has_hidden_part, hidden_mask
from metrics.evaluation import coefficients_by_stratum, evaluate
from metrics.metrology import chance_level
from metrics.models import Kind, Part, StudyFigure, Submission
from metrics.score_model_replicates import model_bootstrap_scores
from metrics.selectors import final_scores, model_scores, study_state_key, study_votes
from scoring.model_agreement import agreement_table
from scoring.score_models import BORDA, SCORE_MODELS
from scoring.side_by_side import SIDE_BY_SIDE_MAX_ITEMS, study_model_scores, study_score_model

DEFAULT_WEIGHT_OFFSET = 2.0  # n0 of the paper, and of every figure that does not ask for another
# Bootstrap replicates and chance draws at every study size (the compiled metrics.kernels make 1000 affordable).
REPLICATES = 1000
# The study's seed drawn with these streams (numpy SeedSequence entropy [seed, stream]).
REPLICATES_STREAM = 20250
CHANCE_STREAM = 4428
# 2: ρ and τ beside ρ_w and τ_w, on the same permutations (which, like ρ_w and τ_w, are unchanged).
CHANCE_VERSION = 2
CHANCE_COEFFICIENTS = ("rho_w", "tau_w", "rho", "tau")
AREA_VERSION = 1  # the per-area coefficients of a submission (submission_area_coefficients)


# --- the parts a model is measured on (collection.parts) ---------------------------------------------


def ranked_part(study: Study) -> str:
    """The items the leaderboard ranks on: the hidden test part of a study that keeps one, else all."""
    return Part.TEST if has_hidden_part(study) else Part.ALL


def owner_part(study: Study) -> str:
    """The items a model owner's own evaluation is computed on: the public development part of a study
    that keeps a hidden test part (whose per-model figures are the leaderboard's), else all."""
    return Part.DEVELOPMENT if has_hidden_part(study) else Part.ALL


def part_mask(study: Study, part: str) -> np.ndarray:
    """True for each item of ``part``, by index."""
    hidden = hidden_mask(study)
    if part == Part.ALL:
        return np.ones(hidden.size, dtype=bool)
    if part == Part.TEST:
        return hidden
    if part == Part.DEVELOPMENT:
        return ~hidden
    raise ValueError(f"part must be one of {', '.join(Part.values)}, got {part!r}")


def part_top_k(study: Study, part: str) -> int:
    """K of the retrieval measures on ``part``: the study's K (or a tenth) of the part's items."""
    return study.default_top_k(int(part_mask(study, part).sum()))


def replicate_count(item_count: int) -> int:
    """Bootstrap replicates (and chance draws) for a study of this size: 1000 at every size."""
    return REPLICATES


def cached(
    study: Study,
    kind: str,
    parameters: dict,
    compute,
    *,
    with_array: bool = False,
    depends_on: str = "",
    store: bool = True,
):
    """The figure ``kind`` with ``parameters`` for the study's current state (plus ``depends_on``):
    read back, or computed by ``compute()`` (and stored unless ``store`` is False)."""
    key = _figure_key(kind, parameters)
    fingerprint = study_state_key(study=study) + depends_on
    figure = StudyFigure.objects.filter(study=study, key=key).first()
    if figure is not None and figure.fingerprint == fingerprint:
        return (figure.value, _load_array(figure.array)) if with_array else figure.value
    produced = compute()
    value, array = produced if with_array else (produced, None)
    if store:
        StudyFigure.objects.update_or_create(
            study=study,
            key=key,
            defaults={
                "kind": kind,
                "parameters": parameters,
                "fingerprint": fingerprint,
                "value": value,
                "array": _dump_array(array) if array is not None else None,
            },
        )
    return (value, array) if with_array else value


def stored_figure(study: Study, kind: str, parameters: dict, *, depends_on: str = ""):
    """The stored value of the figure ``kind`` with ``parameters`` when it is current (computed from the
    study's present state, plus ``depends_on``); None when it is missing or stale. Never computes."""
    figure = (
        StudyFigure.objects.filter(study=study, key=_figure_key(kind, parameters))
        .only("fingerprint", "value")
        .first()
    )
    if figure is None or figure.fingerprint != study_state_key(study=study) + depends_on:
        return None
    return figure.value


def _figure_key(kind: str, parameters: dict) -> str:
    return kind + ":" + json.dumps(parameters, sort_keys=True)


def _dump_array(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array.astype(np.float32), allow_pickle=False)
    return buffer.getvalue()


def _load_array(blob) -> np.ndarray | None:
    if blob is None:
        return None
    return np.load(io.BytesIO(bytes(blob)), allow_pickle=False).astype(np.float64)


def study_replicates(*, study: Study, store: bool = True) -> np.ndarray:
    """Bootstrap replicates (R × N) of the study's scores from its closed ballots: the votes of each
    ballot resampled, the scores recomputed by the study's score model (Eq. 1, 5, 6 for rescaled Borda;
    ``metrics.score_model_replicates``: the same draws, R at most ``MODEL_REPLICATES`` for the others).
    Seeded by the study, so reproducible."""

    def compute():
        votes = study_votes(study=study)
        rng = np.random.default_rng([study.seed, REPLICATES_STREAM])
        # A study ranked per area re-scores each replicate per area, as its closes did (§2.1-2.2).
        strata = (
            arrays.item_areas(study_id=study.pk)
            if study.ranking_scope == Study.RankingScope.PER_AREA
            else None
        )
        replicates = model_bootstrap_scores(
            model,
            votes.ballots,
            votes.item_count,
            rng,
            _replicates_of(model, votes.item_count),
            strata=strata,
        )
        # Stored as float32 (half the bytes); read back as float64. Computed ones go through the same
        # rounding, so a figure is the same whether it was just computed or read back.
        replicates = replicates.astype(np.float32).astype(np.float64)
        return {"replicates": int(replicates.shape[0]), "items": votes.item_count}, replicates

    model = getattr(study, "score_model", BORDA)
    # Borda's replicates keep their cache key; another model's are another figure.
    parameters = {} if model == BORDA else {"model": model}
    return cached(study, "bootstrap", parameters, compute, with_array=True, store=store)[1]


# A Bradley-Terry replicate refits the model, a Borda one only re-tallies: at most this many of them
# (their cost is in docs/protocols.md, "Score models compared").
MODEL_REPLICATES = 200


def _replicates_of(model: str, item_count: int) -> int:
    count = replicate_count(item_count)
    return count if model == BORDA else min(MODEL_REPLICATES, count)


def submission_area_coefficients(*, submission: Submission, weight_offset: float, store: bool = True) -> list:
    """The four coefficients of the submission restricted to each semantic area's items, with 95%
    intervals from the study's replicates (``evaluation.coefficients_by_stratum``), by area name.

    In a study that keeps a hidden test part, over each area's development items only: an area holds
    few test items, and a coefficient over two of them says which of the two the crowd put higher."""
    study = submission.study
    part = owner_part(study)

    def compute():
        return area_coefficients(
            study=study, scores=model_scores(submission), part=part, weight_offset=weight_offset, store=store
        )

    parameters = {"submission": submission.pk, "n0": weight_offset, "version": AREA_VERSION}
    if part != Part.ALL:
        parameters["part"] = part
    return cached(study, "areas", parameters, compute, store=store)


def area_coefficients(*, study: Study, scores: np.ndarray, part: str, weight_offset: float, store: bool = True) -> list:
    """``evaluation.coefficients_by_stratum`` of ``scores`` (by item index) against the study's final
    scores of the items of ``part``, per semantic area, sorted by area name."""
    human = np.where(part_mask(study, part), final_scores(study=study), np.nan)
    item_area = arrays.item_areas(study_id=study.pk)
    names = dict(study.areas.values_list("pk", "name"))
    by_area = coefficients_by_stratum(
        scores,
        human,
        item_area,
        weight_offset=weight_offset,
        human_replicates=study_replicates(study=study, store=store),
    )
    return sorted(
        ({"area": names.get(area, str(area)), **entry} for area, entry in by_area.items()),
        key=lambda entry: entry["area"],
    )


def chance_for(*, study: Study, item_count: int, weight_offset: float, store: bool = True) -> dict:
    """The chance level of ρ_w, τ_w, ρ and τ for ``item_count`` items and this n0, cached per study
    (``metrology.chance_level``: one Monte Carlo of random rankings for all four)."""

    def compute():
        draws = replicate_count(item_count)
        rng = np.random.default_rng([study.seed, CHANCE_STREAM, item_count])
        level = chance_level(item_count, rng, weight_offset=weight_offset, draws=draws)
        return {
            name: {
                "mean": level[name]["mean"],
                "sd": level[name]["sd"],
                "draws": level[name]["draws"].tolist(),
            }
            for name in CHANCE_COEFFICIENTS
        } | {"items": item_count, "weight_offset": weight_offset, "draw_count": draws}

    parameters = {"items": item_count, "n0": weight_offset, "version": CHANCE_VERSION}
    value = cached(study, "chance", parameters, compute, store=store)
    for name in CHANCE_COEFFICIENTS:
        value[name]["draws"] = np.asarray(value[name]["draws"])
    return value


def submission_result(
    *,
    submission: Submission,
    weight_offset: float,
    top_k: int,
    part: str = Part.ALL,
    store: bool = True,
    progress=None,
) -> dict:
    """``metrics.evaluation.evaluate`` of the submission against the study's final ranking, its
    replicates and the chance level of its covered size (``progress(percent)`` reports the steps).

    Over the items of ``part`` only: the human scores of the other items are left out, so both rankings
    are re-ranked within the part, and ``items`` and ``coverage`` count the part's items."""
    study = submission.study
    inside = part_mask(study, part)
    human = np.where(inside, final_scores(study=study), np.nan)
    if progress:
        progress(20)
    replicates = study_replicates(study=study, store=store)
    if progress:
        progress(50)
    model = model_scores(submission)
    covered = int((np.isfinite(model) & np.isfinite(human)).sum())
    chance = chance_for(study=study, item_count=covered, weight_offset=weight_offset, store=store)
    if progress:
        progress(70)
    result = evaluate(
        model, human, weight_offset=weight_offset, top_k=top_k, human_replicates=replicates, chance=chance
    )
    part_items = int(inside.sum())
    result.update(part=str(part), items=part_items, coverage=result["covered"] / part_items)
    return result


def ranking_of(submission: Submission, result: dict) -> dict:
    """The part of a result that ranks the items (the leaderboard's standing): a model's whole result, a
    judge's ``ranking``."""
    return result["ranking"] if submission.kind == Kind.JUDGE else result


def judge_decisions(submission: Submission) -> np.ndarray:
    """A judge's decisions by pair index: 1 left, 0 right, 0.5 tie, NaN undecided."""
    return np.array(submission.decisions, dtype=np.float64)  # None becomes NaN


# --- the score models side by side (issue 37) -------------------------------------------------------

SCORE_MODELS_VERSION = 1
SCORE_MODELS_TOP_K = 10  # the top-10 overlap of each model's ranking with the reference ranking


def score_model_comparison(*, study: Study, store: bool = True) -> dict:
    """Every score model's ranking of a finished study against the study's reference ranking (its final
    ȳ) and against each other, from the same votes (``scoring.side_by_side``): ρ_w and τ_w at n0 = 2,
    ρ and τ, and the top-10 overlap (``scoring.model_agreement.agreement_table``).

    Public, like the card: in a study that keeps a hidden test part, over its development items only.
    In a study ranked per area, per area (each area is its own ranking); ``areas`` lists them and the
    study-wide ``table`` is None. A study of more than ``SIDE_BY_SIDE_MAX_ITEMS`` items has the study's
    own model only (``fitted``)."""
    part = owner_part(study)

    def compute():
        side_by_side = study_model_scores(study=study)
        reference = final_scores(study=study)
        inside = part_mask(study, part)
        scores = {model: side_by_side.score[model] for model in side_by_side.fitted}

        def table(mask: np.ndarray) -> dict:
            return agreement_table(
                scores, reference, weight_offset=DEFAULT_WEIGHT_OFFSET, top_k=SCORE_MODELS_TOP_K, mask=mask
            )

        per_area = study.ranking_scope == Study.RankingScope.PER_AREA
        areas = []
        if per_area:
            item_area = arrays.item_areas(study_id=study.pk)
            names = dict(study.areas.values_list("pk", "name"))
            for area in np.unique(item_area).tolist():  # a loop over areas, not items
                areas.append({"area": names.get(area, str(area)), **table(inside & (item_area == area))})
            areas.sort(key=lambda entry: entry["area"])
        return {
            "reference": side_by_side.reference,
            "models": list(side_by_side.models),
            "fitted": list(side_by_side.fitted),
            "max_items": SIDE_BY_SIDE_MAX_ITEMS,
            "items": side_by_side.item_count,
            "votes": side_by_side.votes,
            "part": str(part),
            "scope": study.ranking_scope,
            "table": None if per_area else table(inside),
            "areas": areas,
        }

    parameters = {"version": SCORE_MODELS_VERSION, "models": list(SCORE_MODELS), "own": study_score_model(study)}
    return cached(study, "score-models", parameters, compute, store=store)
