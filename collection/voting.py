"""Voting: annotators, the lease of the next comparison, and the vote.

The path of a vote: ``comparison_next_for`` leases the annotator a comparison of the open ballot;
``vote_record`` stores the vote on it; the vote that completes its ballot asks for the ballot's close
(``collection.lifecycle.ballot_close_request``), which a Celery task does after commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from collection.lifecycle import ballot_close_request
from collection.models import Annotator, Assignment, Ballot, Comparison, Study, Vote
from common.errors import ServiceError

# --- annotators ----------------------------------------------------------------------------------


def annotator_for(
    *, study: Study, participant_id: str | None = None, session_key: str | None = None, user=None
) -> Annotator:
    """The annotator for a crowd participant id, else a logged-in user, else a browser session."""
    if participant_id:
        lookup = {"participant_id": participant_id[:128]}
    elif user is not None and user.is_authenticated:
        lookup = {"user": user}
    elif session_key:
        lookup = {"session_key": session_key}
    else:
        raise ServiceError("an annotator needs a participant id, a login or a browser session", status=403)
    try:
        with transaction.atomic():
            annotator, _ = Annotator.objects.get_or_create(study=study, **lookup)
    except IntegrityError:  # two first requests of the same annotator at once
        annotator = Annotator.objects.get(study=study, **lookup)
    return annotator


def annotator_consent(*, annotator: Annotator, now: datetime | None = None) -> Annotator:
    if annotator.consented_at is None:
        annotator.consented_at = now or timezone.now()
        annotator.save(update_fields=["consented_at"])
    return annotator


# --- the next comparison -------------------------------------------------------------------------


class NextReason:
    """Why ``comparison_next_for`` returned no assignment."""

    OK = "ok"
    NOT_STARTED = "not_started"
    FINISHED = "finished"
    QUOTA = "quota"
    BALLOT_CLOSING = "ballot_closing"
    NONE_FOR_YOU = "none_for_you"
    ALL_LEASED = "all_leased"


@dataclass
class NextResult:
    assignment: Assignment | None
    reason: str
    retry_after_seconds: int | None = None


def _available_comparisons(ballot: Ballot, now: datetime):
    return Comparison.objects.filter(ballot=ballot).filter(
        Q(status=Comparison.Status.OPEN) | Q(status=Comparison.Status.LEASED, lease_expires_at__lt=now)
    )


_FIRST_AVAILABLE_SQL = """
    SELECT c.id, c.ballot_id, c.position, c.left_item_id, c.right_item_id, c.pair_low, c.pair_high,
           c.status, c.lease_expires_at
    FROM collection_comparison c
    WHERE c.ballot_id = %s
      AND (c.status = 'open' OR (c.status = 'leased' AND c.lease_expires_at < %s))
      AND NOT EXISTS (
          SELECT 1 FROM collection_vote v
          WHERE v.annotator_id = %s AND v.pair_low = c.pair_low AND v.pair_high = c.pair_high
      )
    ORDER BY c.position
    LIMIT 1
"""


def _first_available_comparison(*, ballot_id: int, annotator_id: int, now: datetime) -> Comparison | None:
    """The first comparison of the ballot that is free (never voted, lease free or expired) and whose
    pair the annotator has not judged, locked with FOR UPDATE SKIP LOCKED where the database has it.

    Written in SQL because it runs for every vote: the ORM spent ten times longer building this query
    than the database spent answering it.
    """
    sql = _FIRST_AVAILABLE_SQL
    if connection.features.has_select_for_update_skip_locked:
        sql += (
            " FOR UPDATE OF c SKIP LOCKED"
            if connection.features.has_select_for_update_of
            else " FOR UPDATE SKIP LOCKED"
        )
    rows = list(
        Comparison.objects.raw(sql, [ballot_id, connection.ops.adapt_datetimefield_value(now), annotator_id])
    )
    return rows[0] if rows else None


@transaction.atomic
def comparison_next_for(*, annotator: Annotator, now: datetime | None = None) -> NextResult:
    """Lease the annotator a comparison of the open ballot, or say why there is none.

    The annotator gets back the assignment they already hold, if its lease runs; otherwise the first
    available comparison (never voted, lease free or expired) whose pair of items they have not judged
    in this study, within their cap for the ballot. On PostgreSQL the row is taken with
    ``SELECT … FOR UPDATE SKIP LOCKED``, so concurrent annotators never receive the same comparison;
    on SQLite the IMMEDIATE transaction serialises the whole lease. The returned assignment carries
    its comparison with both items and their tokens.
    """
    # One lease at a time per annotator: two requests of one annotator at once (a double click, two
    # tabs) would both create an active assignment and the second would break the unique constraint;
    # with the annotator's row locked, the second waits and gets the assignment the first made.
    list(Annotator.objects.select_for_update().filter(pk=annotator.pk).values_list("pk", flat=True))
    now = now or timezone.now()
    study = annotator.study
    ballot = Ballot.objects.filter(study_id=study.pk, status=Ballot.Status.OPEN).order_by()[:1]
    ballot = ballot[0] if ballot else None
    if ballot is None:
        status = Study.objects.values_list("status", flat=True).get(pk=study.pk)
        if status == Study.Status.DRAFT:
            return NextResult(None, NextReason.NOT_STARTED)
        if status == Study.Status.FINISHED:
            return NextResult(None, NextReason.FINISHED)
        return NextResult(None, NextReason.BALLOT_CLOSING, retry_after_seconds=30)

    held = Assignment.objects.filter(annotator=annotator, status=Assignment.Status.ACTIVE).select_related(
        "comparison"
    )[:1]
    held = held[0] if held else None
    if held is not None:
        if held.expires_at > now and held.ballot_id == ballot.pk:
            return NextResult(held, NextReason.OK)
        Assignment.objects.filter(pk=held.pk).update(status=Assignment.Status.EXPIRED)

    cap = study.votes_per_annotator_per_ballot
    if cap is not None and Vote.objects.filter(annotator=annotator, ballot=ballot).count() >= cap:
        return NextResult(None, NextReason.QUOTA)

    comparison = _first_available_comparison(ballot_id=ballot.pk, annotator_id=annotator.pk, now=now)
    if comparison is None:
        if ballot.votes_recorded >= ballot.comparison_count:
            return NextResult(None, NextReason.BALLOT_CLOSING, retry_after_seconds=30)
        if not _available_comparisons(ballot, now).exists():
            return NextResult(None, NextReason.ALL_LEASED, retry_after_seconds=min(study.lease_seconds, 60))
        return NextResult(None, NextReason.NONE_FOR_YOU)

    if comparison.status == Comparison.Status.LEASED:  # an expired lease: end it before re-leasing
        Assignment.objects.filter(comparison=comparison, status=Assignment.Status.ACTIVE).update(
            status=Assignment.Status.EXPIRED
        )
    expires_at = now + timedelta(seconds=study.lease_seconds)
    Comparison.objects.filter(pk=comparison.pk).update(
        status=Comparison.Status.LEASED, lease_expires_at=expires_at
    )
    comparison.status, comparison.lease_expires_at = Comparison.Status.LEASED, expires_at
    assignment = Assignment.objects.create(
        comparison=comparison, ballot=ballot, annotator=annotator, issued_at=now, expires_at=expires_at
    )
    return NextResult(assignment, NextReason.OK)


# --- the vote ------------------------------------------------------------------------------------


@transaction.atomic
def vote_record(
    *,
    annotator: Annotator,
    assignment_id: int,
    choice: str,
    client_response_ms: int | None = None,
    now: datetime | None = None,
) -> tuple[Vote, bool]:
    """Record the annotator's vote on their assignment; returns (vote, created).

    A retried request for an assignment already voted returns the recorded vote unchanged (created is
    False) whatever its choice. Refused with a 4xx ServiceError: an assignment that is not the
    annotator's (404), a choice the study does not offer (400), an expired lease or a closed ballot
    (409). The vote that completes its ballot asks for its close, which runs after commit.
    """
    now = now or timezone.now()
    if choice not in Vote.Choice.values:
        raise ServiceError(f"choice must be one of {', '.join(Vote.Choice.values)}, got {choice!r}")
    assignment = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("comparison", "ballot")
        .filter(pk=assignment_id, annotator=annotator)
        .first()
    )
    if assignment is None:
        raise ServiceError(f"assignment {assignment_id} is not one of yours", status=404)
    if assignment.status == Assignment.Status.VOTED:
        return Vote.objects.get(assignment=assignment), False
    if choice == Vote.Choice.TIE and not annotator.study.allow_ties:
        raise ServiceError('this study does not allow ties: choose "left" or "right"')
    ballot, comparison = assignment.ballot, assignment.comparison
    if ballot.status != Ballot.Status.OPEN or assignment.status == Assignment.Status.CANCELLED:
        raise ServiceError(
            f"ballot {ballot.number} is closed; this comparison no longer takes votes", status=409
        )
    if assignment.status != Assignment.Status.ACTIVE or assignment.expires_at <= now:
        raise ServiceError(
            "your time for this comparison ran out and it went back to the pool; ask for the next one",
            status=409,
        )
    # A conditional UPDATE: its row count says whether this vote is the one that takes the comparison.
    taken = Comparison.objects.filter(pk=comparison.pk, status=Comparison.Status.LEASED).update(
        status=Comparison.Status.VOTED, lease_expires_at=None
    )
    if taken != 1:
        raise ServiceError("this comparison no longer takes votes", status=409)
    vote = Vote.objects.create(
        assignment=assignment,
        comparison=comparison,
        annotator=annotator,
        ballot=ballot,
        left_item_id=comparison.left_item_id,
        right_item_id=comparison.right_item_id,
        pair_low=comparison.pair_low,
        pair_high=comparison.pair_high,
        choice=choice,
        response_ms=max(0, int((now - assignment.issued_at).total_seconds() * 1000)),
        # A page measures its own time; anything outside (0, one day] is a broken clock, not a response.
        client_response_ms=client_response_ms
        if client_response_ms and 0 < client_response_ms <= 86_400_000
        else None,
    )
    Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.VOTED)
    # The counter row is the last one locked, so votes of one ballot serialise only briefly; the
    # transaction that brings it to comparison_count is the one that asks for the ballot to close.
    with connection.cursor() as cursor:  # UPDATE … RETURNING: PostgreSQL, and SQLite since 3.35
        cursor.execute(
            "UPDATE collection_ballot SET votes_recorded = votes_recorded + 1 WHERE id = %s RETURNING votes_recorded",
            [ballot.pk],
        )
        (recorded,) = cursor.fetchone()
    if recorded >= ballot.comparison_count:
        ballot_close_request(ballot_id=ballot.pk)
    return vote, True
