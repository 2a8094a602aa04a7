"""Voting: the vote on an annotator's assignment, and a judgement, the vote and the lease of the next
comparison in one transaction (``vote_record_and_next``): the API, the voting page and the simulated
annotators all make it here.

The vote is five plain SQL statements with the driver's parameters, the same on PostgreSQL and SQLite
(the ORM would spend 0.3 to 0.8 ms of CPU building each; docs/architecture.md); the rare branches
(refusals, retries, checks) use the ORM. It takes its assignment by a conditional ``UPDATE`` (row count
and row decide), then its comparison by another. The vote that completes its ballot asks for the close
(``collection.lifecycle.ballot_close_request``), which a Celery task runs after the commit. The lease
is ``collection.leasing``'s.
"""

from __future__ import annotations

import itertools
import os
import threading
from datetime import datetime
from typing import NamedTuple

from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy

from collection import checks
from collection.leasing import (
    ALL_LEASED_RETRY_SECONDS,
    ALL_LEASED_RETRY_SPREAD,
    EXCLUDED_MESSAGE,
    NextReason,
    NextResult,
    Standing,
    comparison_next_for,
    db_time,
    exclude_on_failed_checks,
    lease,
    take,
    time_of,
)
from collection.lifecycle import ballot_close_request
from collection.models import (
    BALLOT_COUNTER_PARTS,
    Annotator,
    AnnotatorVotes,
    Assignment,
    Ballot,
    BallotCounter,
    CheckAnswer,
    Vote,
)
from collection.study_cache import study_at_version
from common.errors import ServiceError

__all__ = [  # the lease's names a caller of the vote also needs
    "ALL_LEASED_RETRY_SECONDS",
    "ALL_LEASED_RETRY_SPREAD",
    "EXCLUDED_MESSAGE",
    "NextReason",
    "NextResult",
    "TIE_REFUSED",
    "not_yours",
    "comparison_next_for",
    "vote_record",
    "vote_record_and_next",
    "vote_record_and_next_by_owner",
]

TIE_REFUSED = gettext_lazy('this study does not allow ties: choose "left" or "right"')


def not_yours(assignment_id) -> str:
    return gettext("assignment %(number)s is not one of yours") % {"number": assignment_id}


# --- the vote ------------------------------------------------------------------------------------

# The vote takes its assignment: running, of a comparison, its annotator one of the named ones (each
# in the study named with it, which is its ballot's) and not excluded. Every row is found by its key:
# ``annotator_id + 0`` keeps the index of an annotator's assignments (all they ever held) out of the plan. The row says whose and where; no row: ``_vote_not_taken`` reads why.
_TAKE_ASSIGNMENT_SQL = """
UPDATE collection_assignment SET status = 'voted'
WHERE id = %(assignment)s AND status = 'active' AND expires_at > %(now)s AND comparison_id IS NOT NULL
  AND EXISTS (SELECT 1 FROM collection_ballot b WHERE b.id = collection_assignment.ballot_id AND ({owners}))
  AND NOT EXISTS (SELECT 1 FROM collection_annotator an WHERE an.id = collection_assignment.annotator_id
                  AND an.excluded_at IS NOT NULL)
RETURNING annotator_id, comparison_id, ballot_id, issued_at,
    (SELECT b.study_id FROM collection_ballot b WHERE b.id = collection_assignment.ballot_id),
    (SELECT s.settings_version FROM collection_ballot b JOIN collection_study s ON s.id = b.study_id
      WHERE b.id = collection_assignment.ballot_id),
    (SELECT b.number FROM collection_ballot b WHERE b.id = collection_assignment.ballot_id)
"""
# The comparison, still leased and in an open ballot: the row count decides whether the vote counts.
# ``status || ''`` keeps the partial index of leased comparisons out of the plan, which statistics from a
# ballot's opening (none leased) would choose, reading every lease a crowd holds: the key finds it.
_TAKE_COMPARISON_SQL = """
UPDATE collection_comparison SET status = 'voted', lease_expires_at = NULL
WHERE id = %s AND status || '' = 'leased'
  AND EXISTS (SELECT 1 FROM collection_ballot b WHERE b.id = %s AND b.status = 'open')
RETURNING left_item_id, right_item_id, pair_low, pair_high
"""
_VOTE_FIELDS = (
    "assignment_id", "comparison_id", "annotator_id", "ballot_id", "left_item_id", "right_item_id",
    "pair_low", "pair_high", "choice", "response_ms", "client_response_ms", "created_at",
)  # fmt: skip
_INSERT_VOTE_SQL = (
    f"INSERT INTO collection_vote ({', '.join(_VOTE_FIELDS)})"
    f" VALUES ({', '.join(['%s'] * len(_VOTE_FIELDS))}) RETURNING id"
)


class _Recorded(NamedTuple):
    """A vote as ``_vote`` recorded it; ``standing`` (the counts after it) only when it was recorded now."""

    annotator: Annotator
    vote: Vote | CheckAnswer
    created: bool
    standing: Standing | None = None


def _vote_refused(*, status: str, ballot_open: bool, ballot_number: int, expired: bool) -> ServiceError:
    if ballot_open and status == Assignment.Status.CANCELLED:  # withdrawn: its annotator was excluded
        return ServiceError(EXCLUDED_MESSAGE, status=403)
    if not ballot_open or status == Assignment.Status.CANCELLED:
        return ServiceError(
            gettext("ballot %(number)s is closed; this comparison no longer takes votes")
            % {"number": ballot_number},
            status=409,
        )
    if status != Assignment.Status.ACTIVE or expired:
        return ServiceError(
            gettext(
                "your time for this comparison ran out and it went back to the pool; ask for the next one"
            ),
            status=409,
        )
    return ServiceError(gettext("this comparison no longer takes votes"), status=409)


def _client_response_ms(value: int | None) -> int | None:
    # A page measures its own time; anything outside (0, one day] is a broken clock, not a response.
    return value if value and 0 < value <= 86_400_000 else None


def _require_choice(choice: str) -> None:
    if choice not in Vote.Choice.values:
        raise ServiceError(
            gettext("choice must be one of %(choices)s, got %(choice)s")
            % {"choices": ", ".join(Vote.Choice.values), "choice": repr(choice)}
        )


def _tie_refused(annotator: Annotator, choice: str) -> bool:
    return choice == Vote.Choice.TIE and not annotator.study.allow_ties


def _instance(model, values: dict):
    """A model instance for a row read by raw SQL, as the ORM builds it; fields not given are deferred."""
    names = [field.attname for field in model._meta.concrete_fields if field.attname in values]
    return model.from_db(connection.alias, names, [values[name] for name in names])


def _owner(annotator_id: int, study_id: int, version, excluded_at=None) -> Annotator | None:
    """The annotator, with their study's settings at ``version`` (``collection.study_cache``)."""
    study = study_at_version(study_id, version)
    if study is None:
        return None
    annotator = _instance(Annotator, {"id": annotator_id, "study_id": study_id, "excluded_at": excluded_at})
    annotator.study = study
    return annotator


_thread_part = threading.local()
_parts = itertools.count()


def _counter_part() -> int:
    """This thread's part of the ballots' counters: votes that run at once add to different rows."""
    part = getattr(_thread_part, "value", None)
    if part is None:
        part = _thread_part.value = (os.getpid() * 64 + next(_parts)) % BALLOT_COUNTER_PARTS
    return part


def _vote(
    *,
    owners: dict[int, int],
    assignment_id: int,
    choice: str,
    client_response_ms: int | None,
    now: datetime,
    annotator: Annotator | None = None,
) -> _Recorded | None:
    """Record the vote of whichever of ``owners`` ({study id: annotator id}) holds the assignment, inside
    the caller's transaction; None when none of them holds it (nothing written).

    Five statements: the assignment taken, the comparison taken (a refusal raises, which undoes the
    first), the vote, the ballot's counter, the annotator's counts. The vote that completes its ballot,
    as its counter reads the committed parts, asks for the close, which runs after the commit.
    """
    pairs = " OR ".join(
        f"(collection_assignment.annotator_id + 0 = %(owner{n})s AND b.study_id = %(study{n})s)"
        for n in range(len(owners))
    )
    parameters = {"assignment": assignment_id, "now": db_time(now)}
    for n, (study_id, owner) in enumerate(owners.items()):
        parameters |= {f"study{n}": study_id, f"owner{n}": owner}
    with connection.cursor() as cursor:
        cursor.execute(_TAKE_ASSIGNMENT_SQL.format(owners=pairs), parameters)
        row = cursor.fetchone()
        if row is None:
            return _vote_not_taken(owners, assignment_id, choice, client_response_ms, now, annotator)
        owner_id, comparison_id, ballot_id, issued_at, study_id, version, ballot_number = row
        if annotator is None:
            annotator = _owner(owner_id, study_id, version)
            if annotator is None:  # the study was deleted since
                raise ServiceError(not_yours(assignment_id), status=404)
        if _tie_refused(annotator, choice):
            raise ServiceError(TIE_REFUSED)
        cursor.execute(_TAKE_COMPARISON_SQL, [comparison_id, ballot_id])
        taken = cursor.fetchone()
        if taken is None:
            ballot = Ballot.objects.values_list("status", "number").get(pk=ballot_id)
            raise _vote_refused(
                status=Assignment.Status.ACTIVE,
                ballot_open=ballot[0] == Ballot.Status.OPEN,
                ballot_number=ballot[1],
                expired=False,
            )
        left_item, right_item, pair_low, pair_high = taken
        values = {
            "assignment_id": assignment_id,
            "comparison_id": comparison_id,
            "annotator_id": owner_id,
            "ballot_id": ballot_id,
            "left_item_id": left_item,
            "right_item_id": right_item,
            "pair_low": pair_low,
            "pair_high": pair_high,
            "choice": choice,
            "response_ms": max(0, int((now - time_of(issued_at)).total_seconds() * 1000)),
            "client_response_ms": _client_response_ms(client_response_ms),
            "created_at": now,
        }
        cursor.execute(_INSERT_VOTE_SQL, [values[name] for name in _VOTE_FIELDS[:-1]] + [db_time(now)])
        (values["id"],) = cursor.fetchone()
    voted, comparison_count = BallotCounter.add(ballot_id=ballot_id, votes=1, part=_counter_part())
    total, in_ballot = AnnotatorVotes.add(annotator_id=owner_id, ballot_id=ballot_id, votes=1)
    if voted >= comparison_count:
        ballot_close_request(ballot_id=ballot_id)
    vote = _instance(Vote, values)
    vote.annotator = annotator
    standing = Standing(ballot_id, ballot_number, comparison_count, voted, total, in_ballot)
    return _Recorded(annotator, vote, True, standing)


def _vote_not_taken(owners, assignment_id, choice, client_response_ms, now, annotator) -> _Recorded | None:
    """A vote that took no assignment: the vote or check answer a retried request recorded, the answer to
    a check's assignment, or the ServiceError that says why nothing was taken (in the order people are
    told: excluded, a tie not offered, closed or expired). None: the assignment is none of ``owners``'."""
    for attempt in (1, 2):
        held = (
            Assignment.objects.filter(pk=assignment_id, annotator_id__in=owners.values())
            .values_list(
                "annotator_id",
                "status",
                "expires_at",
                "quality_check_id",
                "ballot__status",
                "ballot__number",
                "annotator__excluded_at",
                "annotator__study_id",
                "annotator__study__settings_version",
            )  # fmt: skip
            .first()
        )
        if held is None or owners.get(held[7]) != held[0]:  # none of theirs, or not in that study
            return None
        (
            owner_id,
            status,
            expires_at,
            check_id,
            ballot_status,
            ballot_number,
            excluded_at,
            study_id,
            version,
        ) = held
        if annotator is None or annotator.pk != owner_id:
            annotator = _owner(owner_id, study_id, version, excluded_at)
            if annotator is None:
                return None
        if excluded_at is not None:  # their votes in the open ballot are set aside
            raise ServiceError(EXCLUDED_MESSAGE, status=403)
        if status == Assignment.Status.VOTED:
            return _Recorded(annotator, Vote.objects.get(assignment_id=assignment_id), False)
        if status == Assignment.Status.ANSWERED:
            return _Recorded(annotator, CheckAnswer.objects.get(assignment_id=assignment_id), False)
        if _tie_refused(annotator, choice):
            raise ServiceError(TIE_REFUSED)
        ballot_open, expired = ballot_status == Ballot.Status.OPEN, expires_at <= now
        if check_id is not None and status == Assignment.Status.ACTIVE and ballot_open and not expired:
            answer = checks.check_answer_record(
                annotator=annotator,
                assignment_id=assignment_id,
                choice=choice,
                client_response_ms=_client_response_ms(client_response_ms),
                now=now,
            )
            if answer is not None:
                if not answer.correct:
                    exclude_on_failed_checks(annotator)
                return _Recorded(annotator, answer, True)
            if attempt == 1:
                continue  # another request of theirs answered it, or it lapsed, meanwhile: read again
        raise _vote_refused(
            status=status, ballot_open=ballot_open, ballot_number=ballot_number, expired=expired
        )
    raise AssertionError("unreachable")


def vote_record(
    *,
    annotator: Annotator,
    assignment_id: int,
    choice: str,
    client_response_ms: int | None = None,
    now: datetime | None = None,
) -> tuple[Vote | CheckAnswer, bool]:
    """Record the annotator's vote on their assignment; returns (vote, created).

    A check's assignment records a ``CheckAnswer`` instead, returned in place of the vote. A retried
    request returns the recorded vote unchanged (created False) whatever its choice. Refused with a 4xx
    ServiceError: not the annotator's (404), a choice the study does not offer (400), an expired lease
    or a closed ballot (409), an excluded annotator (403).
    """
    if annotator.excluded_at is not None:
        raise ServiceError(EXCLUDED_MESSAGE, status=403)
    _require_choice(choice)
    with transaction.atomic():
        recorded = _vote(
            owners={annotator.study_id: annotator.pk},
            assignment_id=assignment_id,
            choice=choice,
            client_response_ms=client_response_ms,
            now=now or timezone.now(),
            annotator=annotator,
        )
    if recorded is None:
        raise ServiceError(not_yours(assignment_id), status=404)
    return recorded.vote, recorded.created


# --- a judgement: the vote, then the next comparison ----------------------------------------------


def vote_record_and_next(
    *,
    annotator: Annotator,
    assignment_id: int,
    choice: str,
    client_response_ms: int | None = None,
    now: datetime | None = None,
) -> tuple[Vote | CheckAnswer, bool, NextResult]:
    """Record the vote (``vote_record``), then lease the annotator's next comparison
    (``comparison_next_for``), in one transaction; returns (vote, created, next).

    A refused vote raises its ServiceError and leases nothing; a retried one (created False) still
    answers with the next comparison, the one they hold while its lease runs.
    """
    if annotator.excluded_at is not None:
        raise ServiceError(EXCLUDED_MESSAGE, status=403)
    judgement = _judgement(
        owners={annotator.study_id: annotator.pk},
        annotator=annotator,
        assignment_id=assignment_id,
        choice=choice,
        client_response_ms=client_response_ms,
        now=now,
    )
    if judgement is None:
        raise ServiceError(not_yours(assignment_id), status=404)
    return judgement[1:]


def vote_record_and_next_by_owner(
    *,
    owners: dict[int, int],
    assignment_id: int,
    choice: str,
    client_response_ms: int | None = None,
    now: datetime | None = None,
) -> tuple[Annotator, Vote | CheckAnswer, bool, NextResult] | None:
    """``vote_record_and_next`` for whichever of ``owners`` ({study id: annotator id}, the signed cookie's)
    holds the assignment; returns (annotator, vote, created, next), or None, with nothing written, when
    none of them holds it (the caller then finds the request's annotator another way)."""
    if not owners:
        return None
    return _judgement(
        owners=owners,
        annotator=None,
        assignment_id=assignment_id,
        choice=choice,
        client_response_ms=client_response_ms,
        now=now,
    )


def _judgement(*, owners, annotator, assignment_id, choice, client_response_ms, now):
    """The vote and the lease that follows, in one transaction: after a vote recorded now, the lease
    knows where the annotator stands from the vote's own statements and only takes a comparison
    (``_take``). A lease of the same annotator that won the race for their one active assignment
    undoes the whole transaction, which is then made again and finds that lease."""
    now = now or timezone.now()
    _require_choice(choice)
    for attempt in (1, 2):
        try:
            with transaction.atomic():
                recorded = _vote(
                    owners=owners,
                    assignment_id=assignment_id,
                    choice=choice,
                    client_response_ms=client_response_ms,
                    now=now,
                    annotator=annotator,
                )
                if recorded is None:
                    return None
                due = checks.check_due(rate=recorded.annotator.study.check_rate)
                if attempt == 1 and recorded.standing is not None and not due:
                    result = take(recorded.annotator, recorded.standing, now)
                else:
                    result = lease(recorded.annotator, now, check_due=due, rng=None)
            break
        except IntegrityError:
            if attempt == 2:
                raise
    if recorded.created and not connection.in_atomic_block:  # committed
        if result.reason == NextReason.BALLOT_CLOSING:
            # Where the close ran at the commit (eager Celery outside a request), the next ballot is open.
            result = comparison_next_for(annotator=recorded.annotator, now=now, check_due=False)
        elif result.assignment is None and isinstance(recorded.vote, Vote):
            _close_if_complete(recorded.vote.ballot_id)
    return recorded.annotator, recorded.vote, recorded.created, result


_BALLOT_COMPLETE_SQL = """
SELECT COALESCE(SUM(part.votes), 0) >= b.comparison_count
FROM collection_ballot b
LEFT JOIN collection_ballotcounter part ON part.ballot_id = b.id
WHERE b.id = %s AND b.status = 'open'
GROUP BY b.id, b.comparison_count
"""


def _close_if_complete(ballot_id: int) -> None:
    """After a vote's commit, when it got no comparison: ask for the close of its ballot if every
    comparison of it is voted. The last votes of a ballot, run at once, may each have missed the others'
    parts of the counter; whichever commits last reads them all here. The sweep is the net under it."""
    with connection.cursor() as cursor:
        cursor.execute(_BALLOT_COMPLETE_SQL, [ballot_id])
        row = cursor.fetchone()
    if row is not None and row[0]:
        ballot_close_request(ballot_id=ballot_id)
