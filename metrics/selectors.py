"""Reads of the metrics app: a study's votes and scores as the metrology engine reads them, and the
querysets its pages list.

The rows become arrays in ``collection.arrays`` (one query each, no Python loop over rows); this module
arranges them for ``metrics.metrology``. Nothing here writes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db.models import Count, Max

from collection import arrays
from collection.models import Ballot, Item, Study, Vote
from common.errors import StudyStateError
from metrics.metrology import BallotVotes
from metrics.models import Kind, Submission


@dataclass(frozen=True)
class StudyVotes:
    """The closed ballots of a study with their votes, as the metrology engine reads them."""

    item_count: int
    ballots: list[BallotVotes]
    annotator_ids: np.ndarray  # database id of annotator code 0 … A-1
    pair_low: np.ndarray
    pair_high: np.ndarray
    winner_is_low: np.ndarray  # 1 the lower-index item won, 0 the higher, 0.5 a tie
    chosen: np.ndarray  # decisive votes: the chosen item index …
    rejected: np.ndarray  # … and the other one
    chosen_annotator: np.ndarray  # annotator code of each decisive vote


def study_votes(*, study: Study) -> StudyVotes:
    """Every vote of the study's closed ballots, grouped by ballot, with the ballots' items."""
    votes = arrays.study_votes(study_id=study.pk, closed_only=True)
    members = arrays.study_memberships(study_id=study.pk, closed_only=True)
    left, right, outcome = votes.left, votes.right, votes.outcome
    annotator_ids, annotator = np.unique(votes.annotator, return_inverse=True)
    ballots = []
    for number in np.unique(members.ballot):  # one pass per ballot (n_b of them), not per vote
        in_ballot = votes.ballot == number
        ballots.append(
            BallotVotes(
                items=members.of_ballot(number),
                left=left[in_ballot],
                right=right[in_ballot],
                outcome=outcome[in_ballot],
                annotator=annotator[in_ballot],
            )
        )
    decisive = outcome != 0.5
    return StudyVotes(
        item_count=study.items.count(),
        ballots=ballots,
        annotator_ids=annotator_ids,
        pair_low=votes.pair_low,
        pair_high=votes.pair_high,
        winner_is_low=np.where(left < right, outcome, 1.0 - outcome),
        chosen=np.where(outcome == 1.0, left, right)[decisive],
        rejected=np.where(outcome == 1.0, right, left)[decisive],
        chosen_annotator=annotator[decisive],
    )


def final_scores(*, study: Study) -> np.ndarray:
    """ȳ of every item of a finished study, by item index (NaN for an item without one)."""
    if study.status != Study.Status.FINISHED:
        raise StudyStateError(f"the study is {study.status}: its final ranking exists once it has finished")
    return arrays.final_scores(study_id=study.pk, item_count=study.items.count())[0]


def current_scores(*, study: Study, item_count: int) -> np.ndarray:
    """Final scores of a finished study; for a running one, each item's ȳ after its latest closed ballot."""
    if study.status == Study.Status.FINISHED:
        return final_scores(study=study)
    return arrays.latest_scores(study_id=study.pk, item_count=item_count)[0]


def model_scores(submission: Submission) -> np.ndarray:
    """A submission's scores by item index, NaN where it gives none."""
    return np.array(submission.scores, dtype=np.float64)  # None becomes NaN


def study_state_key(*, study: Study) -> str:
    """The state a cached figure was computed from: status, closed ballots and votes."""
    votes = Vote.objects.filter(ballot__study=study).aggregate(count=Count("pk"), last=Max("pk"))
    closed = study.ballots.filter(status=Ballot.Status.CLOSED).count()
    return f"{study.status}:{closed}:{votes['count']}:{votes['last']}"


def finished_replications(*, study: Study) -> list[Study]:
    """The finished studies of the same items: the study's duplicates, then the study it duplicates."""
    related = list(Study.objects.filter(duplicated_from=study, status=Study.Status.FINISHED))
    if study.duplicated_from_id:
        related += list(Study.objects.filter(pk=study.duplicated_from_id, status=Study.Status.FINISHED))
    return related


def submissions_of(*, owner, study: Study | None = None, kind: str = Kind.MODEL):
    """A model owner's own submissions of ``kind`` (models, or judges), newest first."""
    queryset = Submission.objects.filter(owner=owner, kind=kind).select_related("study")
    return queryset.filter(study=study) if study is not None else queryset


def items_for_model_owners(*, study: Study):
    """The items a model owner scores: ids and tokens of a finished study's items, no human scores."""
    if study.status != Study.Status.FINISHED:
        raise StudyStateError(
            f"study {study.slug!r} is {study.status}: its items are open for models once it has finished"
        )
    return Item.objects.filter(study=study).select_related("token_a", "token_b", "area").order_by("index")
