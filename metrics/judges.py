"""Reads and figures of judges: the pairs a judge decides, and a judge's evaluation against the crowd.

A judge decides the distinct item pairs the crowd voted on in the study's closed ballots (the votes the
final ranking counts). ``judge_pairs`` numbers them; ``judge_result`` measures a judge's decisions
(``metrics.judging`` holds the math) and scores them by the study's own score model to evaluate its
ranking as a model's is evaluated (``metrics.figures.submission_result``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collection import arrays
from collection.models import Item, Study
from common.errors import StudyStateError
from common.numbers import finite_or_none
from metrics import judging
from metrics.evaluation import evaluate
from metrics.figures import (
    area_coefficients,
    chance_for,
    judge_decisions,
    part_mask,
    part_top_k,
    study_replicates,
    submission_result,
)
from metrics.instrument import SPLIT_HALF_STREAM
from metrics.judging import PairNumbering, number_pairs
from metrics.metrology import BallotVotes, split_halves
from metrics.models import Kind, Part, Submission
from metrics.selectors import final_scores, study_votes
from scoring.score_models import BORDA, scores_from_votes

# The study's seed drawn with this stream (numpy SeedSequence entropy [seed, stream]) for the pair
# bootstrap of the agreement figures: the same draws for every judge of a study, so they are paired.
JUDGE_PAIRS_STREAM = 3141
SPLIT_HALF_SPLITS = 100  # as the instrument card's split-half reliability
JUDGE_REPLICATES = 1000
# A study that leaves its position-bias level blank flags no annotator; a judge is still tested at 5%.
DEFAULT_SIDE_ALPHA = 0.05


@dataclass(frozen=True)
class JudgePairs:
    """The judge's pairs of a finished study, numbered 1 … P in order of (lower, higher item index).

    ``left``, ``right``: item indices as shown to the judge (the orientation of the pair's first vote);
    ``left_id``, ``right_id``: their Item pks; ``numbering``: the pairs of every counted vote.
    """

    study_id: int
    left: np.ndarray
    right: np.ndarray
    left_id: np.ndarray
    right_id: np.ndarray
    numbering: PairNumbering

    @property
    def count(self) -> int:
        return int(self.left.size)

    def rows(self, start: int = 0, stop: int | None = None) -> list[dict]:
        """The listing of pairs ``start`` … ``stop``-1 (0-based; pair number = index + 1) with the Item
        pks and token texts of both items: one query for the items of the slice."""
        stop = self.count if stop is None else min(stop, self.count)
        start = max(0, min(start, stop))
        ids = np.unique(np.concatenate([self.left_id[start:stop], self.right_id[start:stop]])).tolist()
        tokens = {
            pk: (a, b)
            for pk, a, b in Item.objects.filter(study_id=self.study_id, pk__in=ids).values_list(
                "pk", "token_a__text", "token_b__text"
            )
        }
        return [
            {
                "pair": number,
                "left_item": left,
                "left_token_a": tokens[left][0],
                "left_token_b": tokens[left][1],
                "right_item": right,
                "right_token_a": tokens[right][0],
                "right_token_b": tokens[right][1],
            }
            for number, left, right in zip(
                range(start + 1, stop + 1),
                self.left_id[start:stop].tolist(),
                self.right_id[start:stop].tolist(),
                strict=True,
            )
        ]


def _require_finished(study: Study) -> None:
    if study.status != Study.Status.FINISHED:
        raise StudyStateError(
            f"study {study.slug!r} is {study.status}: its pairs are open for judges once it has finished"
        )


def judge_pairs(*, study: Study) -> JudgePairs:
    """The distinct unordered item pairs of the votes of the study's closed ballots, numbered 1 … P in
    order of (lower item index, higher item index), each shown as its first vote (by ballot, then vote
    id) showed it. Raises ``StudyStateError`` unless the study has finished."""
    _require_finished(study)
    votes = arrays.study_votes(study_id=study.pk, closed_only=True)
    return _pairs_of(study, votes.left, votes.right)


def _pairs_of(study: Study, left, right) -> JudgePairs:
    numbering = number_pairs(left, right)
    ids = arrays.item_ids(study_id=study.pk)
    return JudgePairs(
        study_id=study.pk,
        left=numbering.left,
        right=numbering.right,
        left_id=ids[numbering.left],
        right_id=ids[numbering.right],
        numbering=numbering,
    )


def _flatten(ballots: list[BallotVotes]) -> dict[str, np.ndarray]:
    """The votes of the closed ballots as parallel arrays, in the order ``arrays.study_votes`` reads them
    (by ballot, then vote id), with each vote's ballot number."""
    if not ballots:
        empty = np.zeros(0, dtype=np.int64)
        return {"ballot": empty, "left": empty, "right": empty, "outcome": np.zeros(0), "annotator": empty}
    return {
        "ballot": np.repeat(np.arange(1, len(ballots) + 1), [b.vote_count for b in ballots]),
        "left": np.concatenate([b.left for b in ballots]).astype(np.int64),
        "right": np.concatenate([b.right for b in ballots]).astype(np.int64),
        "outcome": np.concatenate([b.outcome for b in ballots]).astype(np.float64),
        "annotator": np.concatenate([b.annotator for b in ballots]).astype(np.int64),
    }


def _judge_ballots(ballots: list[BallotVotes], outcome: np.ndarray) -> list[BallotVotes]:
    """The ballots with each vote's outcome replaced by the judge's (``outcome``, flat, NaN undecided);
    the votes on undecided pairs left out, the ballots' items kept."""
    bounds = np.cumsum([0] + [b.vote_count for b in ballots])
    judged = []
    for number, ballot in enumerate(ballots):  # a loop over ballots
        mine = outcome[bounds[number] : bounds[number + 1]]
        keep = np.isfinite(mine)
        judged.append(
            BallotVotes(
                items=ballot.items,
                left=ballot.left[keep],
                right=ballot.right[keep],
                outcome=mine[keep],
                annotator=ballot.annotator[keep],
            )
        )
    return judged


def _top_of_part(score: np.ndarray, inside: np.ndarray, k: int) -> np.ndarray:
    """True for the k items of the part with the highest ȳ (ties by index)."""
    candidates = np.flatnonzero(inside & np.isfinite(score))
    order = candidates[np.argsort(-score[candidates], kind="stable")]
    top = np.zeros(score.size, dtype=bool)
    top[order[:k]] = True
    return top


def judge_result(
    *,
    study: Study,
    decisions,
    weight_offset: float,
    top_k: int,
    part: str,
    store: bool = True,
    progress=None,
) -> dict:
    """A judge's evaluation on the pairs of ``part`` (both items in it): agreement with the crowd,
    its side, its ranking (its decisions scored by the study's score model, then
    ``metrics.evaluation.evaluate`` as ``figures.submission_result``), where it disagrees, and the
    verdict against the crowd's split-half replicate (``metrics.judging``).

    ``decisions``: one per judge pair in pair order (1 left, 0 right, 0.5 tie, NaN undecided).
    The verdict's halves are scored as the instrument card scores its split halves (rescaled Borda,
    ``metrology.replicate_scores``), whatever the study's score model, so that the crowd's replicate is
    the card's own.
    ``progress(percent)`` reports the steps. The result is JSON-safe; of a part it holds nothing per item
    or per pair, and counts over the part only.
    """
    _require_finished(study)
    votes = study_votes(study=study)
    flat = _flatten(votes.ballots)
    numbering = number_pairs(flat["left"], flat["right"])
    decisions = np.asarray(decisions, dtype=np.float64)
    if decisions.shape != (numbering.count,):
        raise ValueError(f"the judge must decide the study's {numbering.count} pairs, got {decisions.shape}")
    if not np.isin(decisions[np.isfinite(decisions)], (0.0, 0.5, 1.0)).all():
        raise ValueError("a decision is 1 (left), 0 (right), 0.5 (a tie) or NaN (undecided)")
    item_count = votes.item_count
    inside = part_mask(study, part)
    human = np.where(inside, final_scores(study=study), np.nan)
    pair_inside = inside[numbering.low] & inside[numbering.high]
    part_pairs = np.flatnonzero(pair_inside)
    decided = np.isfinite(decisions) & pair_inside
    score_model = getattr(study, "score_model", BORDA)
    result: dict = {
        "part": str(part),
        "pairs": int(part_pairs.size),
        "decided": int(decided.sum()),
        "coverage": finite_or_none(decided.sum() / part_pairs.size) if part_pairs.size else None,
        "score_model": score_model,
    }
    if progress:
        progress(10)

    # Agreement, side and disagreement: per-pair sums over the part's pairs, bootstrapped over them.
    vote_inside = pair_inside[numbering.pair_of_vote]
    renumber = np.full(numbering.count, -1, dtype=np.int64)
    renumber[part_pairs] = np.arange(part_pairs.size)
    in_judge_orientation = np.where(numbering.same_side, flat["outcome"], 1.0 - flat["outcome"])
    low, high = numbering.low[part_pairs], numbering.high[part_pairs]
    item_area = arrays.item_areas(study_id=study.pk)
    areas = sorted(set(item_area[inside].tolist()))
    names = dict(study.areas.values_list("pk", "name"))
    area_code = np.searchsorted(np.asarray(areas, dtype=np.int64), item_area[low]) if areas else low * 0
    area_group = np.where(item_area[low] == item_area[high], area_code, len(areas))
    top = _top_of_part(human, inside, part_top_k(study, part))
    band_group = np.where(top[low] | top[high], 0, 1)
    closeness, cuts = judging.closeness_bands(np.abs(human[low] - human[high]))
    statistics = judging.pair_statistics(
        decisions[part_pairs],
        judging.category_of(in_judge_orientation[vote_inside]),
        renumber[numbering.pair_of_vote[vote_inside]],
        int(part_pairs.size),
    )
    rng = np.random.default_rng([study.seed, JUDGE_PAIRS_STREAM])
    groups = (("area", area_group, len(areas) + 1), ("band", band_group, 2), ("closeness", closeness, 4))
    observed, replicated = judging.bootstrap_totals(statistics, rng, JUDGE_REPLICATES, groups=groups)
    result["agreement"] = judging.agreement_figures(observed, replicated)
    alpha = study.quality_position_alpha if study.quality_position_alpha is not None else DEFAULT_SIDE_ALPHA
    result["agreement"]["side"] = judging.side_figures(observed, alpha)
    area_labels = [names.get(area, str(area)) for area in areas] + ["across areas"]
    result["disagreement"] = {
        "by_area": judging.disagreement_figures(observed, replicated, "area", area_labels),
        "by_band": judging.disagreement_figures(observed, replicated, "band", ["top", "rest"]),
        "by_closeness": judging.disagreement_figures(
            observed, replicated, "closeness", list(judging.CLOSENESS_LABELS)
        ),
        "top_k": part_top_k(study, part),
        "closeness_cuts": [finite_or_none(cut) for cut in cuts],
    }
    if progress:
        progress(30)

    # The ranking: every counted vote given the judge's decision on its pair, scored as the crowd's.
    outcome = judging.judge_outcomes(decisions, numbering)
    kept = np.isfinite(outcome)
    per_area = study.ranking_scope == Study.RankingScope.PER_AREA
    judge_score = scores_from_votes(
        score_model,
        ballot=flat["ballot"][kept],
        left=flat["left"][kept],
        right=flat["right"][kept],
        outcome=outcome[kept],
        annotator=flat["annotator"][kept],
        item_count=item_count,
        ballot_count=len(votes.ballots),
        strata=item_area if per_area else None,
    )
    judge_score = np.where(inside, judge_score, np.nan)
    covered = int((np.isfinite(judge_score) & np.isfinite(human)).sum())
    if covered >= 2:
        replicates = study_replicates(study=study, store=store)
        if progress:
            progress(50)
        chance = chance_for(study=study, item_count=covered, weight_offset=weight_offset, store=store)
        result["ranking"] = evaluate(
            judge_score,
            human,
            weight_offset=weight_offset,
            top_k=top_k,
            human_replicates=replicates,
            chance=chance,
        )
        if per_area:
            result["areas"] = area_coefficients(
                study=study, scores=judge_score, part=part, weight_offset=weight_offset, store=store
            )
    else:
        result["ranking"] = None
    if progress:
        progress(70)

    # The verdict: the card's split halves of the annotators, the judge in each half's place.
    annotator_count = int(votes.annotator_ids.size)
    if annotator_count >= 2 and covered >= 3:
        halves = split_halves(
            annotator_count, np.random.default_rng([study.seed, SPLIT_HALF_STREAM]), SPLIT_HALF_SPLITS
        )
        differences = judging.split_half_differences(
            votes.ballots, _judge_ballots(votes.ballots, outcome), item_count, halves, inside, weight_offset
        )
        result["verdict"] = judging.verdict_figures(differences)
    else:
        result["verdict"] = judging.verdict_figures(
            {"difference": np.zeros(0), "judge_rho_w": np.zeros(0), "crowd_rho_w": np.zeros(0)}
        )
    if progress:
        progress(100)
    return result


def result_for(
    *,
    submission: Submission,
    weight_offset: float,
    top_k: int,
    part: str = Part.ALL,
    store: bool = True,
    progress=None,
) -> dict:
    """The result of a model (``submission_result``) or of a judge (``judge_result``, whose
    ``ranking`` is a model's result) for this n0, K and part."""
    if submission.kind == Kind.JUDGE:
        return judge_result(
            study=submission.study,
            decisions=judge_decisions(submission),
            weight_offset=weight_offset,
            top_k=top_k,
            part=part,
            store=store,
            progress=progress,
        )
    return submission_result(
        submission=submission,
        weight_offset=weight_offset,
        top_k=top_k,
        part=part,
        store=store,
        progress=progress,
    )
