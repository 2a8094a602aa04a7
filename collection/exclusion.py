"""Excluding an annotator from a study, and readmitting them.

An exclusion stops the annotator's future votes (``collection.voting`` refuses their leases and votes,
from the ``excluded_at`` of the row it already reads) and returns their work in the OPEN ballot to the
pool: their live lease is released, and their votes in that ballot are set aside (moved to
``ExcludedVote`` with every field, so nothing is lost), their comparisons reopened, and the ballot's
counter lowered by as many (on its part 0, ``BallotCounter``), so that the count still equals the
ballot's votes.

Closed ballots are not re-run: their votes stay where they are and the design stays as it was. The
results, exports and instrument card report the scores with and without the excluded annotators' votes
over the same ballots (``scoring.exclusion``).

Every exclusion and every readmission is a row of ``Exclusion``: who (a researcher, or a rule), when,
why. A rule calls ``annotator_exclude(..., rule="<name>")`` with its figure in the reason (the quality
flags: ``scoring.exclusion.exclusion_rules_apply``; the checks: ``rule="failed_checks"``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime

from django.db import OperationalError, connection, transaction
from django.utils import timezone

from collection.models import (
    Annotator,
    AnnotatorVotes,
    Assignment,
    Ballot,
    BallotCounter,
    Comparison,
    ExcludedVote,
    Exclusion,
    Vote,
)
from common.errors import ServiceError

logger = logging.getLogger(__name__)

MAX_REASON_LENGTH = 2000
MAX_RULE_LENGTH = Exclusion._meta.get_field("rule").max_length
# A vote of the excluded annotator in flight locks its assignment, then (its foreign keys, its counter)
# the annotator's and the ballot's rows; the exclusion locks those rows first. So that the two never
# deadlock, the exclusion takes the annotator's live assignment with NOWAIT: if the vote holds it, the
# exclusion rolls back at once (so the vote completes) and is tried again a moment later, when the vote
# it waited for is there to be set aside. PostgreSQL only: SQLite's IMMEDIATE transactions never overlap.
LOCK_RETRIES = 20
LOCK_RETRY_SECONDS = 0.02
_RETRIED_SQLSTATES = {"55P03", "40P01"}  # lock_not_available (NOWAIT), deadlock_detected

# The columns copied from a vote to its set-aside row, in the order of both tables' INSERT … SELECT.
_VOTE_COLUMNS = (
    "assignment_id",
    "comparison_id",
    "annotator_id",
    "ballot_id",
    "left_item_id",
    "right_item_id",
    "pair_low",
    "pair_high",
    "choice",
    "response_ms",
    "client_response_ms",
    "created_at",
)


@dataclass(frozen=True)
class ExclusionResult:
    exclusion: Exclusion
    created: bool  # False: the annotator was already excluded, and nothing changed


def _who(by) -> tuple[object | None, str]:
    if by is None or not getattr(by, "is_authenticated", False):
        return None, ""
    return by, by.get_username()


def _clean_reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ServiceError(
            "give a reason for the exclusion: it is logged with who excluded the annotator and when"
        )
    if len(reason) > MAX_REASON_LENGTH:
        raise ServiceError(f"the reason is {len(reason):,} characters long; at most {MAX_REASON_LENGTH:,}")
    return reason


def annotator_exclude(
    *, annotator: Annotator, reason: str, by=None, rule: str = "", now: datetime | None = None
) -> ExclusionResult:
    """Exclude ``annotator`` from their study: log it, release their lease, set their open-ballot votes aside.

    ``by`` is the researcher (a user) who decided, None for a rule; ``rule`` names the rule (blank: a
    researcher's decision). One transaction, with the open ballot's row locked first, as its close locks
    it, so that a close cannot run in the middle: either the close came first (the ballot is closed and
    its votes stay), or the exclusion (the close sees the ballot without them). Idempotent: an annotator
    already excluded keeps their exclusion, and the result says ``created=False``.
    """
    reason = _clean_reason(reason)
    rule = (rule or "").strip()
    if len(rule) > MAX_RULE_LENGTH:
        raise ServiceError(f"a rule's name is at most {MAX_RULE_LENGTH} characters, got {len(rule)}")
    user, username = _who(by)
    for attempt in range(LOCK_RETRIES):
        try:
            return _exclude(
                annotator=annotator, reason=reason, user=user, username=username, rule=rule, now=now
            )
        except OperationalError as error:
            if connection.in_atomic_block or attempt == LOCK_RETRIES - 1 or not _retried(error):
                raise
            time.sleep(LOCK_RETRY_SECONDS * (attempt + 1))
    raise AssertionError("unreachable")


def _retried(error: OperationalError) -> bool:
    return getattr(error.__cause__, "sqlstate", None) in _RETRIED_SQLSTATES


@transaction.atomic
def _exclude(*, annotator: Annotator, reason: str, user, username: str, rule: str, now) -> ExclusionResult:
    # The annotator's row first: a lease of theirs in progress (which holds it) ends before, and none
    # starts after. Then the open ballot's row, which the close locks too. Both NO KEY UPDATE, as the
    # UPDATEs that follow take anyway: they exclude the lease's and the close's locks, but not the key
    # share that a vote's or a lease's INSERT takes on them through its foreign keys, so neither waits
    # for the other in a cycle.
    locked = Annotator.objects.select_for_update(no_key=True).get(pk=annotator.pk)
    ballot = (
        Ballot.objects.select_for_update(no_key=True)
        .filter(study_id=annotator.study_id, status=Ballot.Status.OPEN)
        .first()
    )
    now = now or timezone.now()
    active = Exclusion.objects.filter(annotator_id=annotator.pk, lifted_at__isnull=True).first()
    if active is not None:
        annotator.excluded_at = locked.excluded_at
        return ExclusionResult(active, created=False)
    exclusion = Exclusion.objects.create(
        study_id=annotator.study_id,
        annotator_id=annotator.pk,
        reason=reason,
        rule=rule,
        user=user,
        username=username,
        excluded_at=now,
    )
    Annotator.objects.filter(pk=annotator.pk).update(excluded_at=now)
    annotator.excluded_at = now

    # The live lease: its comparison goes back to the pool at once, not when the lease runs out.
    leased = list(
        Assignment.objects.select_for_update(nowait=True)
        .filter(annotator_id=annotator.pk, status=Assignment.Status.ACTIVE)
        .values_list("pk", "comparison_id")
    )
    if leased:
        Comparison.objects.filter(
            pk__in=[comparison for _, comparison in leased], status=Comparison.Status.LEASED
        ).update(status=Comparison.Status.OPEN, lease_expires_at=None)
        Assignment.objects.filter(pk__in=[pk for pk, _ in leased]).update(status=Assignment.Status.CANCELLED)

    set_aside = 0
    if ballot is not None:
        set_aside = _votes_set_aside(exclusion=exclusion, ballot=ballot, annotator_id=annotator.pk)
    exclusion.votes_set_aside, exclusion.leases_released = set_aside, len(leased)
    Exclusion.objects.filter(pk=exclusion.pk).update(votes_set_aside=set_aside, leases_released=len(leased))
    logger.info(
        "excluded annotator %s of study %s (%s): %d votes of ballot %s set aside, %d leases released",
        annotator.pk,
        annotator.study_id,
        rule or f"by {username or 'unknown'}",
        set_aside,
        ballot.number if ballot is not None else "-",
        len(leased),
    )
    return ExclusionResult(exclusion, created=True)


def _votes_set_aside(*, exclusion: Exclusion, ballot: Ballot, annotator_id: int) -> int:
    """Move the annotator's votes of the open ``ballot`` to ``ExcludedVote``, reopen their comparisons and
    lower the ballot's counter by as many; returns how many. Set-based statements, no loop over votes."""
    votes = Vote.objects.filter(annotator_id=annotator_id, ballot_id=ballot.pk)
    columns = ", ".join(_VOTE_COLUMNS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {ExcludedVote._meta.db_table} (exclusion_id, vote_id, {columns})"
            f" SELECT %s, id, {columns} FROM {Vote._meta.db_table} WHERE annotator_id = %s AND ballot_id = %s",
            [exclusion.pk, annotator_id, ballot.pk],
        )
        count = cursor.rowcount
    if not count:
        return 0
    # The assignments lose their votes: cancelled, not "voted" (every voted assignment has its vote).
    Assignment.objects.filter(pk__in=votes.values("assignment_id")).update(status=Assignment.Status.CANCELLED)
    Comparison.objects.filter(pk__in=votes.values("comparison_id")).update(
        status=Comparison.Status.OPEN, lease_expires_at=None
    )
    deleted, _ = votes.delete()
    if deleted != count:  # the annotator's row is locked and their lease cancelled: nothing can vote now
        raise ServiceError(f"set aside {count} votes but deleted {deleted}; nothing was changed", status=409)
    BallotCounter.add(ballot_id=ballot.pk, votes=-count)
    AnnotatorVotes.add(annotator_id=annotator_id, ballot_id=ballot.pk, votes=-count)
    return count


@transaction.atomic
def annotator_readmit(
    *, annotator: Annotator, by=None, reason: str = "", now: datetime | None = None
) -> Exclusion:
    """Lift the annotator's active exclusion: they may vote again from now on (logged: who, when, why).

    Their votes set aside from the open ballot at the exclusion are NOT restored: their comparisons went
    back to the pool and may have been judged by others since. Their votes in closed ballots count again
    in the scores "without the excluded annotators". Refused (409) for an annotator who is not excluded.
    """
    locked = Annotator.objects.select_for_update().get(pk=annotator.pk)
    exclusion = Exclusion.objects.filter(annotator_id=locked.pk, lifted_at__isnull=True).first()
    if exclusion is None:
        raise ServiceError(f"annotator {annotator.pk} is not excluded; there is nothing to lift", status=409)
    user, username = _who(by)
    exclusion.lifted_at = now or timezone.now()
    exclusion.lifted_by = user
    exclusion.lifted_by_username = username
    exclusion.lift_reason = (reason or "").strip()[:MAX_REASON_LENGTH]
    exclusion.save(update_fields=["lifted_at", "lifted_by", "lifted_by_username", "lift_reason"])
    Annotator.objects.filter(pk=locked.pk).update(excluded_at=None)
    annotator.excluded_at = None
    logger.info("readmitted annotator %s of study %s", annotator.pk, annotator.study_id)
    return exclusion
