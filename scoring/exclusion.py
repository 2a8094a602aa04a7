"""The excluded annotators in the results: the scores with and without their votes, the design held fixed;
and the rule that excludes the annotators the quality thresholds flag.

Closed ballots are never re-run (``collection.exclusion``): their items, comparisons and survivors stay
as the close made them. ``scores_without_excluded`` recomputes every closed ballot's win ratios and
rescaled scores (Eq. 1, 5, 6, through ``scoring.borda.study_scores``, the closes' own functions) from the
votes of the annotators NOT excluded, over the same ballots and items, and reports them beside the
scores with every vote: the results page, ``without-excluded.csv`` and the instrument card show them.
A study whose score model is not rescaled Borda gets both sets of scores from that model
(``scoring.score_models.scores_from_votes``), as its final ranking.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.db.models import Count, Sum

from collection import arrays
from collection.exclusion import annotator_exclude
from collection.models import Annotator, Ballot, ExcludedVote, Exclusion, Item, Study
from metrics.correlation import kendall, ranks_from_scores, spearman
from scoring.borda import final_order, study_scores
from scoring.score_models import BORDA, scores_from_votes
from scoring.selectors import QUALITY_FLAGS, annotator_figures

logger = logging.getLogger(__name__)

RESEARCHER = "researcher"  # the reason group of exclusions decided by a person (no rule)
# The rule name of an exclusion by the quality flags: "quality:" and the flags raised, e.g. quality:fast.
QUALITY_RULE_PREFIX = "quality:"


@dataclass(frozen=True)
class ExcludedAnnotator:
    annotator_id: int
    label: str
    rule: str  # blank: a researcher's decision
    by: str  # the rule, else the researcher's name
    reason: str
    excluded_at: datetime
    votes_excluded: int  # their votes in closed ballots, left out of the scores without them
    votes_set_aside: int  # their votes of the open ballot at the exclusion, taken out of it


@dataclass(frozen=True)
class ScoresWithout:
    """The scores of the closed ballots with every vote and without the excluded annotators' votes."""

    annotators: list[ExcludedAnnotator]
    ballots_closed: int
    votes_closed: int  # votes in the closed ballots
    votes_excluded: int  # … of which by excluded annotators
    votes_set_aside: int  # open-ballot votes set aside at the exclusions
    by_reason: dict[
        str, dict[str, int]
    ]  # rule (or "researcher") → annotators, votes_excluded, votes_set_aside
    score_with: np.ndarray  # ȳ per item index, every vote (NaN: never measured)
    score_without: np.ndarray  # ȳ per item index, without the excluded annotators' votes
    rank_with: np.ndarray  # final rank, 1 = most related (0: never in a closed ballot)
    rank_without: np.ndarray
    spearman: float  # ρ and τ between the two sets of scores, over the items that have both
    kendall: float
    unmeasured_without: int  # items measured with every vote but by no vote without the excluded ones

    @property
    def votes_kept(self) -> int:
        return self.votes_closed - self.votes_excluded

    def as_dict(self) -> dict:
        """The summary (without the per-item arrays), for the card and the API."""
        return {
            "annotators": [
                {
                    "annotator": person.annotator_id,
                    "label": person.label,
                    "rule": person.rule,
                    "by": person.by,
                    "reason": person.reason,
                    "excluded_at": person.excluded_at.isoformat(),
                    "votes_excluded": person.votes_excluded,
                    "votes_set_aside": person.votes_set_aside,
                }
                for person in self.annotators
            ],
            "ballots_closed": self.ballots_closed,
            "votes_closed": self.votes_closed,
            "votes_excluded": self.votes_excluded,
            "votes_set_aside": self.votes_set_aside,
            "by_reason": self.by_reason,
            "spearman_with_without": _finite(self.spearman),
            "kendall_with_without": _finite(self.kendall),
            "unmeasured_without": self.unmeasured_without,
        }


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def _ranks(score: np.ndarray, last_ballot: np.ndarray) -> np.ndarray:
    rank = np.zeros(score.size, dtype=np.int64)
    order = final_order(score, last_ballot)
    measured = np.isfinite(score[order])
    rank[order[measured]] = np.arange(1, int(measured.sum()) + 1)
    return rank


def scores_without_excluded(*, study: Study, always: bool = False) -> ScoresWithout | None:
    """The closed ballots scored with and without the votes of the study's excluded annotators (those whose
    exclusion is active), the ballots and their items as they were; None when nobody is excluded (unless
    ``always``: then both sets of scores are the same)."""
    exclusions = list(
        Exclusion.objects.filter(study=study, lifted_at__isnull=True)
        .select_related("annotator__user")
        .order_by("excluded_at", "pk")
    )
    if not exclusions and not always:
        return None
    item_count = study.items.count()
    ballots_closed = Ballot.objects.filter(study=study, status=Ballot.Status.CLOSED).count()
    votes = arrays.study_votes(study_id=study.pk, closed_only=True)
    excluded_ids = np.array(sorted(exclusion.annotator_id for exclusion in exclusions), dtype=np.int64)
    dropped = np.isin(votes.annotator, excluded_ids)
    kept = ~dropped
    with_all = study_scores(votes.ballot, votes.left, votes.right, votes.outcome, item_count, ballots_closed)
    without = study_scores(
        votes.ballot[kept],
        votes.left[kept],
        votes.right[kept],
        votes.outcome[kept],
        item_count,
        ballots_closed,
    )
    empty = np.full(item_count, np.nan)
    score_with = with_all[-1].score if with_all else empty
    score_without = without[-1].score if without else empty
    if study.score_model != BORDA:  # the final ranking's model, with and without their votes
        _, annotator = np.unique(votes.annotator, return_inverse=True)
        columns = dict(item_count=item_count, ballot_count=ballots_closed)
        score_with = scores_from_votes(
            study.score_model,
            ballot=votes.ballot,
            left=votes.left,
            right=votes.right,
            outcome=votes.outcome,
            annotator=annotator,
            **columns,
        )
        score_without = scores_from_votes(
            study.score_model,
            ballot=votes.ballot[kept],
            left=votes.left[kept],
            right=votes.right[kept],
            outcome=votes.outcome[kept],
            annotator=annotator[kept],
            **columns,
        )
    _, last_ballot = arrays.latest_scores(study_id=study.pk, item_count=item_count)
    both = np.isfinite(score_with) & np.isfinite(score_without)
    rho = tau = float("nan")
    if both.sum() >= 2:
        ranks_with = ranks_from_scores(score_with[both])
        ranks_without = ranks_from_scores(score_without[both])
        rho, tau = spearman(ranks_with, ranks_without), kendall(ranks_with, ranks_without)

    dropped_per_annotator = dict(zip(*np.unique(votes.annotator[dropped], return_counts=True), strict=True))
    set_aside = dict(
        ExcludedVote.objects.filter(annotator_id__in=excluded_ids.tolist())
        .values("annotator_id")
        .annotate(count=Count("pk"))
        .values_list("annotator_id", "count")
    )
    people = [
        ExcludedAnnotator(
            annotator_id=exclusion.annotator_id,
            label=str(exclusion.annotator),
            rule=exclusion.rule,
            by=exclusion.by,
            reason=exclusion.reason,
            excluded_at=exclusion.excluded_at,
            votes_excluded=int(dropped_per_annotator.get(exclusion.annotator_id, 0)),
            votes_set_aside=int(set_aside.get(exclusion.annotator_id, 0)),
        )
        for exclusion in exclusions
    ]
    by_reason: dict[str, dict[str, int]] = {}
    for person in people:  # one entry per excluded annotator, not per vote
        group = by_reason.setdefault(
            person.rule or RESEARCHER, {"annotators": 0, "votes_excluded": 0, "votes_set_aside": 0}
        )
        group["annotators"] += 1
        group["votes_excluded"] += person.votes_excluded
        group["votes_set_aside"] += person.votes_set_aside
    return ScoresWithout(
        annotators=people,
        ballots_closed=ballots_closed,
        votes_closed=len(votes),
        votes_excluded=int(dropped.sum()),
        votes_set_aside=sum(person.votes_set_aside for person in people),
        by_reason=by_reason,
        score_with=score_with,
        score_without=score_without,
        rank_with=_ranks(score_with, last_ballot),
        rank_without=_ranks(score_without, last_ballot),
        spearman=rho,
        kendall=tau,
        unmeasured_without=int((np.isfinite(score_with) & ~np.isfinite(score_without)).sum()),
    )


def study_exclusion_totals(*, study: Study) -> dict:
    """How many exclusions a study has, active and lifted, and the open-ballot votes they set aside."""
    totals = Exclusion.objects.filter(study=study).aggregate(
        exclusions=Count("pk"), set_aside=Sum("votes_set_aside")
    )
    return {"exclusions": totals["exclusions"], "votes_set_aside": totals["set_aside"] or 0}


# --- the rule ------------------------------------------------------------------------------------


def exclusion_rules_apply(*, study: Study, now: datetime | None = None) -> list[Exclusion]:
    """Exclude every annotator of the study whom the quality thresholds flag and who is not excluded yet.

    The rule is named ``quality:<flags>`` (e.g. ``quality:fast,position``) and the reason gives each
    flag's figure and threshold in words. Returns the new exclusions. Runs after each close of a study
    with ``exclude_flagged_annotators`` (the task ``scoring.exclusion_rules_apply``), from the admin's
    "Apply the exclusion rules now", and from ``manage.py exclusion_rules_apply``.
    """
    figures = annotator_figures(study=study)
    flagged = figures.annotator_id[figures.flagged]
    if not flagged.size:
        return []
    already = set(
        Annotator.objects.filter(pk__in=flagged.tolist(), excluded_at__isnull=False).values_list(
            "pk", flat=True
        )
    )
    people = Annotator.objects.in_bulk([pk for pk in flagged.tolist() if pk not in already])
    positions = {int(pk): position for position, pk in enumerate(figures.annotator_id.tolist())}
    created = []
    for annotator_id, annotator in sorted(people.items()):  # the flagged few, not the votes
        flags = figures.row(positions[annotator_id]).flags
        rule = QUALITY_RULE_PREFIX + ",".join(flag.code for flag in flags)
        reason = "; ".join(f"{QUALITY_FLAGS[flag.code]}: {flag.reason}" for flag in flags)
        annotator.study = study
        result = annotator_exclude(annotator=annotator, reason=reason, rule=rule, now=now)
        if result.created:
            created.append(result.exclusion)
    if created:
        logger.info("the exclusion rules excluded %d annotators of %s", len(created), study)
    return created


WITHOUT_EXCLUDED_COLUMNS = (
    "index",
    "item_id",
    "token_a",
    "token_b",
    "score_with",
    "rank_with",
    "score_without_excluded",
    "rank_without_excluded",
)


def without_excluded_rows(*, study: Study):
    """The rows of ``without-excluded.csv``: every item's final ȳ and rank with every vote of the closed
    ballots and without the excluded annotators' votes (rank 0: never measured)."""
    report = scores_without_excluded(study=study, always=True)
    items = (
        Item.objects.filter(study=study)
        .order_by("index")
        .values_list("index", "pk", "token_a__text", "token_b__text")
    )
    columns = zip(
        items,
        arrays.nullable(report.score_with),
        report.rank_with.tolist(),
        arrays.nullable(report.score_without),
        report.rank_without.tolist(),
        strict=True,
    )
    for (index, item_id, token_a, token_b), with_score, with_rank, without_score, without_rank in columns:
        yield [index, item_id, token_a, token_b, with_score, with_rank, without_score, without_rank]
