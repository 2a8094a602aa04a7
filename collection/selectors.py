"""Selectors of the collection app: reads for pages, the API, the admin and commands.

Reads that compute on many rows turn them into numpy arrays first: ``collection.arrays``.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import (
    Case,
    Count,
    F,
    Func,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
    Window,
)
from django.db.models.functions import Coalesce, RowNumber

from collection import arrays
from collection.models import Annotator, Ballot, Comparison, Item, SemanticArea, Study, StudyJob, Token, Vote
from common.errors import StudyStateError
from common.numbers import percent_done


def comparison_display(*, comparison_id: int) -> dict:
    """The two items of a comparison as shown to an annotator: item ids and their two tokens each."""
    comparison = Comparison.objects.select_related(
        "left_item__token_a", "left_item__token_b", "right_item__token_a", "right_item__token_b"
    ).get(pk=comparison_id)
    return {
        side: {"item": item.pk, "tokens": [item.token_a.text, item.token_b.text]}
        for side, item in (("left", comparison.left_item), ("right", comparison.right_item))
    }


@dataclass(frozen=True)
class AnnotatorProgress:
    ballot_number: int | None
    ballot_count: int
    votes_in_ballot: int
    cap: int | None
    votes_total: int
    ballot_voted: int
    ballot_comparisons: int

    @property
    def quota_percent(self) -> int | None:
        if not self.cap:
            return None
        return percent_done(self.votes_in_ballot, self.cap)

    @property
    def ballot_percent(self) -> int:
        if not self.ballot_comparisons:
            return 100
        return percent_done(self.ballot_voted, self.ballot_comparisons)

    @property
    def quota_reached(self) -> bool:
        return self.cap is not None and self.votes_in_ballot >= self.cap

    @property
    def ballot_is_new(self) -> bool:
        """True when the annotator voted in an earlier ballot but not yet in this one: a new round for them."""
        return self.votes_total > 0 and self.votes_in_ballot == 0

    def as_dict(self) -> dict:
        return {
            "ballot": self.ballot_number,
            "ballot_count": self.ballot_count,
            "votes_in_ballot": self.votes_in_ballot,
            "cap": self.cap,
            "votes_total": self.votes_total,
            "ballot_voted": self.ballot_voted,
            "ballot_comparisons": self.ballot_comparisons,
            "quota_percent": self.quota_percent,
            "ballot_percent": self.ballot_percent,
        }


def annotator_progress(*, annotator: Annotator) -> AnnotatorProgress:
    """Where the annotator stands: votes in the current (or last) ballot against the cap, and the ballot."""
    study = annotator.study
    ballot = Ballot.objects.filter(study=study).order_by("-number").first()
    counts = Vote.objects.filter(annotator=annotator).aggregate(
        total=Count("pk"), in_ballot=Count("pk", filter=Q(ballot=ballot))
    )
    return AnnotatorProgress(
        ballot_number=ballot.number if ballot else None,
        ballot_count=study.ballot_count,
        votes_in_ballot=counts["in_ballot"] if ballot else 0,
        cap=study.votes_per_annotator_per_ballot,
        votes_total=counts["total"],
        ballot_voted=ballot.votes_recorded if ballot else 0,
        ballot_comparisons=ballot.comparison_count if ballot else 0,
    )


def study_progress(*, study: Study) -> list[dict]:
    """Every ballot of the study with its size, votes and state, in order."""
    return [
        {
            "number": ballot.number,
            "status": ballot.status,
            "items": ballot.item_count,
            "comparisons": ballot.comparison_count,
            "votes": ballot.votes_recorded,
            "percent": percent_done(ballot.votes_recorded, ballot.comparison_count)
            if ballot.comparison_count
            else 0,
            "opened_at": ballot.opened_at,
            "closed_at": ballot.closed_at,
            "deadline": ballot.deadline,
            "rescale_slope": ballot.rescale_slope,
            "area_rescale_slopes": ballot.area_rescale_slopes,
        }
        for ballot in Ballot.objects.filter(study=study)
        .annotate(item_count=Count("items"))
        .order_by("number")
    ]


# --- the researchers' lists and panels ------------------------------------------------------------


def _row_count(queryset) -> Coalesce:
    """COUNT(*) of a correlated subquery, 0 when it has no rows: a count per row without joining
    several relations at once (tokens × items of an area would multiply)."""
    counted = queryset.order_by().annotate(total=Func(F("pk"), function="COUNT")).values("total")
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


def studies_with_progress(studies: QuerySet) -> QuerySet:
    """The studies with ``item_total`` and their open ballot's ``open_ballot_number``,
    ``open_ballot_votes`` and ``open_ballot_comparisons`` (None without one), in one query."""
    open_ballot = Ballot.objects.filter(study=OuterRef("pk"), status=Ballot.Status.OPEN)
    return studies.annotate(
        item_total=_row_count(Item.objects.filter(study=OuterRef("pk"))),
        open_ballot_number=Subquery(open_ballot.values("number")[:1]),
        open_ballot_votes=Subquery(open_ballot.values("votes_recorded")[:1]),
        open_ballot_comparisons=Subquery(open_ballot.values("comparison_count")[:1]),
    )


def areas_with_totals(areas: QuerySet, *, rare: bool = False) -> QuerySet:
    """The semantic areas with their ``token_total`` and ``item_total`` (and ``rare_total``)."""
    totals = {
        "token_total": _row_count(Token.objects.filter(area=OuterRef("pk"))),
        "item_total": _row_count(Item.objects.filter(area=OuterRef("pk"))),
    }
    if rare:
        totals["rare_total"] = _row_count(Token.objects.filter(area=OuterRef("pk"), rare=True))
    return areas.annotate(**totals)


def study_pools(*, study: Study) -> dict:
    """The pools panel of a study: its areas with their totals, by name, and the study's totals."""
    return {
        "areas": areas_with_totals(SemanticArea.objects.filter(study=study), rare=True).order_by("name"),
        "token_total": study.tokens.count(),
        "item_total": study.items.count(),
    }


def study_job_shown(*, study: Study) -> StudyJob | None:
    """The study's latest job if it is still running or it failed (what the researcher must see)."""
    job = study.jobs.first()
    if job is not None and (not job.finished or job.status == StudyJob.Status.FAILED):
        return job
    return None


# --- the final ranking ----------------------------------------------------------------------------


def study_items(*, study: Study) -> QuerySet[Item]:
    """The study's items with their area and tokens, and ``area_rank``: the final rank within the area.

    ``area_rank`` is the item's place among its area's items ordered by final rank (1 = first), as the
    results page and the exports have it (``scoring.borda.ranks_within``); in a study ranked per area
    it is the area's own ranking. None while the study has no final ranking.
    """
    area_order = Window(
        RowNumber(), partition_by=[F("area_id")], order_by=[F("final_rank").asc(nulls_last=True), F("index")]
    )
    return study.items.select_related("area", "token_a", "token_b").annotate(
        area_rank=Case(
            When(final_rank__isnull=False, then=area_order), default=Value(None), output_field=IntegerField()
        )
    )


def study_results(*, study: Study) -> list[dict]:
    """The items by final rank with their tokens, area, final score ȳ, last ballot and x(k) per ballot.

    ``win_ratios[k - 1]`` is x(k) of Eq. 1 for ballots 1 … last_ballot, None where the item got no vote.
    Refused (409) while the study is not finished: ranks exist only once its last ballot has closed.
    """
    if study.status != Study.Status.FINISHED:
        open_ballot = study.ballots.filter(status=Ballot.Status.OPEN).values_list("number", flat=True).first()
        where = f"; ballot {open_ballot} of {study.ballot_count} is open" if open_ballot else ""
        raise StudyStateError(
            f"the study is {study.status}{where}: the final ranking exists once its last ballot has closed"
        )
    item_count = study.items.count()
    win_ratios = arrays.study_score_rows(study_id=study.pk).win_ratio_by_ballot(
        item_count, study.ballot_count
    )
    items = study_items(study=study).order_by("final_rank", "index")
    return [
        {
            "rank": item.final_rank,
            "area_rank": item.area_rank,
            "item": item.pk,
            "index": item.index,
            "tokens": [item.token_a.text, item.token_b.text],
            "area": item.area.name,
            "final_score": item.final_score,
            "last_ballot": item.last_ballot,
            "win_ratios": arrays.nullable(win_ratios[item.index, : item.last_ballot or 0]),
        }
        for item in items
    ]
