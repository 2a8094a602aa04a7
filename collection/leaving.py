"""Leaving a study: Finish, and a lease given back when the voting page is left."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone
from django.utils.translation import ngettext

from collection.models import Annotator, Assignment, Comparison, Study, Vote
from collection.voting import EXCLUDED_MESSAGE, not_yours
from common.errors import ServiceError


def _lease_release(*, assignment_id: int, comparison_id: int | None, now: datetime) -> None:
    """End a running lease now: the assignment expires, its comparison (if not a check's) is open again."""
    Assignment.objects.filter(pk=assignment_id).update(status=Assignment.Status.EXPIRED, expires_at=now)
    if comparison_id is not None:
        Comparison.objects.filter(pk=comparison_id, status=Comparison.Status.LEASED).update(
            status=Comparison.Status.OPEN, lease_expires_at=None
        )


@transaction.atomic
def assignment_release(*, annotator: Annotator, assignment_id: int, now: datetime | None = None) -> bool:
    """Give back the annotator's running lease on ``assignment_id`` (they left the voting page), so that
    its comparison goes back to the pool at once rather than when the lease lapses.

    Returns True when it was released; False when it is theirs but no longer running (voted, answered,
    lapsed or released already: a second call changes nothing). Refused (404) when it is not theirs,
    with the same words for another's and for none. The assignment's row is locked first, as a vote
    locks it, so a vote and a release of one lease never both take effect.
    """
    now = now or timezone.now()
    held = (
        Assignment.objects.select_for_update()
        .filter(pk=assignment_id, annotator_id=annotator.pk)
        .values_list("status", "comparison_id", "expires_at")
        .first()
    )
    if held is None:
        raise ServiceError(not_yours(assignment_id), status=404)
    status, comparison_id, expires_at = held
    if status != Assignment.Status.ACTIVE or expires_at <= now:
        return False
    _lease_release(assignment_id=assignment_id, comparison_id=comparison_id, now=now)
    return True


def finish_remaining(*, study: Study, votes: int) -> int:
    """Judgements still to make before Finish: the study's ``min_judgements`` less the votes, at least 0."""
    return max(0, study.min_judgements - votes)


@transaction.atomic
def annotator_finish(*, annotator: Annotator, now: datetime | None = None) -> int:
    """End the annotator's session with the completed outcome (Finish); returns their votes.

    Allowed once they have cast the study's ``min_judgements`` votes (answers to checks are not
    judgements; 0 allows it at any time); refused before with 409 and how many remain, and with 403
    for an excluded annotator. Records ``Annotator.finished_at`` (a second Finish keeps the first) and
    releases their running lease at once. From then on their pages show the completed exit and the lease
    gives them nothing (``NextReason.ANNOTATOR_FINISHED``).
    """
    # NO KEY UPDATE, as the exclusion takes it: a vote's insert (a key share through its foreign key)
    # does not wait for it, and the vote holding the lease's row ends before the release below.
    locked = Annotator.objects.select_for_update(no_key=True).get(pk=annotator.pk)
    if locked.excluded_at is not None:
        raise ServiceError(EXCLUDED_MESSAGE, status=403)
    votes = Vote.objects.filter(annotator_id=annotator.pk).count()
    now = now or timezone.now()
    if locked.finished_at is None:
        remaining = finish_remaining(study=annotator.study, votes=votes)
        if remaining:
            raise ServiceError(
                ngettext(
                    "this study asks for %(minimum)s comparisons before you finish; you have made %(votes)s, "
                    "so %(remaining)s remains",
                    "this study asks for %(minimum)s comparisons before you finish; you have made %(votes)s, "
                    "so %(remaining)s remain",
                    remaining,
                )
                % {"minimum": annotator.study.min_judgements, "votes": votes, "remaining": remaining},
                status=409,
            )
        Annotator.objects.filter(pk=annotator.pk).update(finished_at=now)
        locked.finished_at = now
    held = (
        Assignment.objects.select_for_update()
        .filter(annotator_id=annotator.pk, status=Assignment.Status.ACTIVE)
        .values_list("pk", "comparison_id")
    )
    for assignment_id, comparison_id in held:  # one at most: one active assignment per annotator
        _lease_release(assignment_id=assignment_id, comparison_id=comparison_id, now=now)
    annotator.finished_at = locked.finished_at
    return votes
