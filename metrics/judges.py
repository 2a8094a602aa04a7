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
from metrics.judging import PairNumbering, number_pairs


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
