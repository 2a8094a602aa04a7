"""Selectors of the collection app: reads for pages, the API and commands."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q

from collection.models import Annotator, Ballot, Comparison, Study, Vote


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
        return min(100, round(100 * self.votes_in_ballot / self.cap))

    @property
    def ballot_percent(self) -> int:
        if not self.ballot_comparisons:
            return 100
        return min(100, round(100 * self.ballot_voted / self.ballot_comparisons))

    @property
    def quota_reached(self) -> bool:
        return self.cap is not None and self.votes_in_ballot >= self.cap

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
            "percent": round(100 * ballot.votes_recorded / ballot.comparison_count)
            if ballot.comparison_count
            else 0,
            "opened_at": ballot.opened_at,
            "closed_at": ballot.closed_at,
            "deadline": ballot.deadline,
            "rescale_slope": ballot.rescale_slope,
        }
        for ballot in Ballot.objects.filter(study=study)
        .annotate(item_count=Count("items"))
        .order_by("number")
    ]
