"""Voting: annotators, the lease of the next comparison, and the vote.

The path of a vote: ``comparison_next_for`` leases the annotator a comparison of the open ballot;
``vote_record`` stores the vote on it; the vote that completes its ballot asks for the ballot's close
(``collection.lifecycle.ballot_close_request``), which a Celery task does after commit.
``vote_record_and_next`` is a judgement as every caller makes it (the API, the voting page, the
simulated annotators): the vote, then the next comparison, in one call.
"""

from __future__ import annotations

import random
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, transaction
from django.utils import timezone

from collection import checks
from collection.exclusion import annotator_exclude
from collection.lease_start import lease_start, lease_start_forget, lease_start_read
from collection.lifecycle import ballot_close_ask_again, ballot_close_request, ballot_close_wait_seconds
from collection.models import (
    BALLOT_COUNTER_PARTS,
    Annotator,
    AnnotatorVotes,
    Assignment,
    Ballot,
    BallotCounter,
    CheckAnswer,
    Comparison,
    Study,
    Vote,
)
from collection.selectors import AnnotatorProgress
from collection.study_cache import latest_study, study_at_version
from common.database import aware_time, default_vendor, epoch_microseconds_sql
from common.errors import ServiceError
from common.instances import loaded
from common.prepared import PreparedStatement, execute_together

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
    EXCLUDED = "excluded"  # the annotator was excluded (collection/exclusion.py): screened out
    ANNOTATOR_FINISHED = "annotator_finished"  # they pressed Finish (annotator_finish): completed


EXCLUDED_MESSAGE = (
    "you were excluded from this study by its researchers, so your votes are no longer taken; "
    "open the study link for your completion code (screened out)"
)


# The wait told to an annotator who finds every comparison left in the ballot leased to others: about
# one judgement (a crowd of 500 takes about 3 s per judgement). Those leases are mostly voted
# on within that time, which completes the ballot, or one lapses and comes free. Told to wait a lease's
# length (60 s), the annotators at the end of a ballot sat out the ballots that followed it.
# Each is told a whole number of seconds drawn around it
# (ALL_LEASED_RETRY_SPREAD), so that the crowd that found the ballot leased at one moment does not
# come back in one burst.
ALL_LEASED_RETRY_SECONDS = 3
ALL_LEASED_RETRY_SPREAD = 1
_retry_draws = random.Random()


@dataclass
class NextResult:
    """The annotator's assignment with what a page shows of it, or why there is none.

    With an assignment, ``sides`` holds both items as shown (``{"left": {"item": id, "tokens": [a, b]},
    "right": …}``) and ``progress`` where the annotator stands, read in the same statements as the lease.
    ``instruction`` is what an instructed-response check shows in place of the study's question.
    """

    assignment: Assignment | None
    reason: str
    retry_after_seconds: int | None = None
    sides: dict | None = None
    progress: AnnotatorProgress | None = None
    instruction: str = ""

    def question(self, study: Study) -> str:
        """The question shown above this comparison: the study's, or a check's instruction."""
        return self.instruction or study.question


def _nothing_in_open_ballot(
    *, study: Study, ballot_id: int, reason: str, comparison_count: int
) -> NextResult:
    """No assignment although a ballot is open; a closing ballot says how long its close should take,
    and is asked to close again when it has been closing for too long (its message lost)."""
    if reason == NextReason.BALLOT_CLOSING:
        retry = ballot_close_wait_seconds(study_id=study.pk, comparison_count=comparison_count)
        ballot_close_ask_again(ballot_id=ballot_id, expected_close_seconds=retry)
    elif reason == NextReason.ALL_LEASED:
        retry = _retry_draws.randint(  # 2 to 4 s: shorter than any lease (at least 10 s)
            ALL_LEASED_RETRY_SECONDS - ALL_LEASED_RETRY_SPREAD,
            ALL_LEASED_RETRY_SECONDS + ALL_LEASED_RETRY_SPREAD,
        )
    else:
        retry = None
    return NextResult(None, reason, retry_after_seconds=retry)


def _no_open_ballot(*, study: Study) -> NextResult:
    status = Study.objects.values_list("status", flat=True).get(pk=study.pk)
    if status == Study.Status.DRAFT:
        return NextResult(None, NextReason.NOT_STARTED)
    if status == Study.Status.FINISHED:
        return NextResult(None, NextReason.FINISHED)
    return NextResult(
        None, NextReason.BALLOT_CLOSING, retry_after_seconds=ballot_close_wait_seconds(study_id=study.pk)
    )


def _progress(
    study: Study,
    ballot_number: int,
    votes_in_ballot: int,
    votes_total: int,
    ballot_voted: int,
    ballot_comparisons: int,
) -> AnnotatorProgress:
    """The annotator's progress from the counts one lease statement reads (both databases)."""
    return AnnotatorProgress(
        ballot_number=ballot_number,
        ballot_count=study.ballot_count,
        votes_in_ballot=votes_in_ballot,
        cap=study.votes_per_annotator_per_ballot,
        votes_total=votes_total,
        ballot_voted=ballot_voted,
        ballot_comparisons=ballot_comparisons,
    )


def _assignment(*, annotator: Annotator, **values) -> Assignment:
    """An Assignment of ``annotator`` for a row read by raw SQL ({attname: value}; a quality check's
    only when ``quality_check_id`` is given), without another query."""
    assignment = loaded(
        Assignment, DEFAULT_DB_ALIAS, {"quality_check_id": None, **values, "annotator_id": annotator.pk}
    )
    assignment.annotator = annotator
    return assignment


def comparison_next_for(
    *,
    annotator: Annotator,
    now: datetime | None = None,
    rng: random.Random | None = None,
    check_due: bool | None = None,
) -> NextResult:
    """Lease the annotator a comparison of the open ballot, or say why there is none.

    The annotator gets back the assignment they already hold, if its lease runs; otherwise the first
    available comparison (never voted, lease free or expired) whose pair of items they have not judged
    in this study, within their cap for the ballot. Concurrent annotators never receive the same
    comparison: on PostgreSQL the row is taken with ``FOR UPDATE SKIP LOCKED``, in one call (of the
    function ``yardstick_lease_v3``, migrations 0024, 0025 and 0027) that also ends the leases it
    replaces, creates the assignment and returns both items' tokens and the annotator's progress; on
    SQLite the IMMEDIATE transaction serialises the whole lease.

    With the study's ``check_rate`` (a draw from ``rng``), the lease serves instead a check the annotator
    has not answered (``collection.checks``), if they hold nothing and may still vote in the ballot.
    A caller that has drawn already passes ``check_due``, so that a judgement is drawn once.
    """
    if annotator.excluded_at is not None:
        return NextResult(None, NextReason.EXCLUDED)
    # The vote's path loads its annotator without finished_at (a vote needs a running lease, which
    # Finish ends): asked only where the row was read whole, so a judgement costs no extra read.
    if "finished_at" not in annotator.get_deferred_fields() and annotator.finished_at is not None:
        return NextResult(None, NextReason.ANNOTATOR_FINISHED)
    now = now or timezone.now()
    if check_due is None:
        check_due = checks.check_due(rate=annotator.study.check_rate, rng=rng)
    if check_due:
        try:
            with transaction.atomic():  # the annotator's row locked while the check is leased
                served = _check_lease(annotator=annotator, now=now, rng=rng)
        except IntegrityError:  # a comparison's lease of the same annotator won the race: theirs below
            served = None
        if served is not None:
            return served
    if connection.vendor == "postgresql":
        return _lease_in_one_statement(annotator=annotator, now=now)
    with transaction.atomic():
        return _lease_step_by_step(annotator=annotator, now=now)


def _lock_annotator(annotator: Annotator) -> bool:
    """Lock the annotator's row, on databases with row locks other than PostgreSQL (where the unique index
    of active assignments and a retry keep one lease per annotator, ``_lease_in_one_statement``); returns
    whether they are excluded (an exclusion committed meanwhile)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT excluded_at IS NOT NULL FROM collection_annotator WHERE id = %s FOR UPDATE",
            [annotator.pk],
        )
        return bool(cursor.fetchone()[0])


# The whole lease, in one call of the PL/pgSQL function ``yardstick_lease_v3`` (migrations 0024, 0025,
# 0027): the annotator's standing, the lease they hold or its end, the longest-lapsed lease first or else
# the first open comparison by position from ``open_from`` on (SKIP LOCKED), the new assignment, the two
# items' tokens, and, when nothing is given, why. The row it answers is the one ``_lease_result`` reads,
# then "go", then the first open position when the call read it, then the commit's setting. Its times come
# as integers (``common.database.epoch_microseconds_sql``): Django's loader of a timestamptz is pure
# Python.
_LEASE_SQL = """
SELECT o_ballot_id, o_ballot_number, o_comparison_count, o_votes_recorded, o_votes_total, o_votes_in_ballot,
       o_assignment_id, o_comparison_id, {issued_at}, {expires_at}, o_left_item_id, o_left_a, o_left_b,
       o_right_item_id, o_right_a, o_right_b, o_only_judged_left, o_excluded, o_go, o_first_open, o_setting
FROM yardstick_lease_v3(%(study)s, %(annotator)s, %(now)s, %(expires)s, %(cap)s, %(commit_async)s,
                                 %(after_vote)s, %(settings_version)s, %(open_ballot)s, %(open_from)s)
""".format(issued_at=epoch_microseconds_sql("o_issued_at"), expires_at=epoch_microseconds_sql("o_expires_at"))

LEASE_STATEMENT = PreparedStatement(
    "yardstick_lease",
    _LEASE_SQL,
    {
        "study": "bigint",
        "annotator": "bigint",
        "now": "timestamptz",
        "expires": "timestamptz",
        "cap": "integer",
        "commit_async": "boolean",
        "after_vote": "bigint",
        "settings_version": "uuid",
        "open_ballot": "bigint",
        "open_from": "integer",
    },
)

# The lease on its own: not after a vote of the same transaction.
LEASE_ALONE = {"after_vote": None, "settings_version": None}


def _lease_row(parameters: dict) -> tuple:
    """Runs ``LEASE_STATEMENT`` once, or twice when a lease of the same annotator won the race.

    A lease in a transaction of its own commits asynchronously (``synchronous_commit`` off for that
    transaction only): PostgreSQL answers before its WAL reaches the disk, which saves a flush per
    judgement. A lease is not a record to keep: a database crash may forget the leases of its last
    fraction of a second, whose comparisons are then simply open, and an annotator who votes on one is
    told it is not theirs and gets another. Every vote commits synchronously, and its flush takes the
    WAL before it, so the lease a vote was cast on is on disk with the vote. Inside a caller's
    transaction (which may hold a vote) the setting is left alone.
    """
    in_transaction = connection.in_atomic_block
    parameters = {**parameters, **LEASE_ALONE, "commit_async": not in_transaction}
    for attempt in (1, 2):
        try:
            # Inside a caller's transaction, a savepoint keeps a lost race from ending that transaction.
            with transaction.atomic() if in_transaction else nullcontext():
                with connection.cursor() as cursor:
                    LEASE_STATEMENT.execute(cursor, parameters)
                    return cursor.fetchone()[:-1]
        except IntegrityError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _lease_in_one_statement(*, annotator: Annotator, now: datetime) -> NextResult:
    """PostgreSQL: the whole lease in one statement (``_LEASE_SQL``), which commits on its own.

    One lease at a time per annotator: two requests of one annotator at once (a double click, two tabs)
    both find no running lease and both insert one; the partial unique index
    ``one_active_assignment_per_annotator`` makes the second wait for the first and fail, which undoes
    all of that statement (its comparison is open again). The retry then finds the lease the first one
    made and returns it. Without an explicit transaction the lease costs one round trip, not four
    (BEGIN, a lock of the annotator's row, the statement, COMMIT).
    """
    parameters = _lease_parameters(study=annotator.study, annotator_id=annotator.pk, now=now)
    row = _lease_row(parameters)
    lease_start_read(annotator.study.pk, row[0], row[LEASE_FIRST_OPEN])
    return _lease_result(row[:LEASE_COLUMNS], annotator)


def _lease_parameters(*, study: Study, annotator_id: int, now: datetime) -> dict:
    """The parameters of ``LEASE_STATEMENT`` that come from the study's settings, and where the scan of
    its open ballot's comparisons starts (``collection.lease_start``)."""
    return {
        "study": study.pk,
        "annotator": annotator_id,
        "now": now,
        "expires": now + timedelta(seconds=study.lease_seconds),
        "cap": study.votes_per_annotator_per_ballot,
        **lease_start(study.pk),
    }


LEASE_COLUMNS = 18  # the row of _LEASE_SQL that _lease_result reads; then "go", then the first open position
LEASE_FIRST_OPEN = LEASE_COLUMNS + 1  # of the statement's row


def _lease_result(row: tuple, annotator: Annotator) -> NextResult:
    """The lease's answer from the row of ``_LEASE_SQL``."""
    study = annotator.study
    (
        ballot_id,
        ballot_number,
        comparison_count,
        votes_recorded,
        votes_total,
        votes_in_ballot,
        assignment_id,
        comparison_id,
        issued_at,
        expires_at,
        left_item,
        left_a,
        left_b,
        right_item,
        right_a,
        right_b,
        only_judged_left,
        excluded,
    ) = row
    if excluded:
        return NextResult(None, NextReason.EXCLUDED)
    if ballot_id is None:
        return _no_open_ballot(study=study)
    progress = _progress(study, ballot_number, votes_in_ballot, votes_total, votes_recorded, comparison_count)
    if assignment_id is not None:
        assignment = _assignment(
            id=assignment_id,
            comparison_id=comparison_id,
            ballot_id=ballot_id,
            annotator=annotator,
            status=Assignment.Status.ACTIVE,
            issued_at=aware_time(issued_at),
            expires_at=aware_time(expires_at),
        )
        if comparison_id is None:  # a check they hold: its sides are not in the statement's joins
            return _held_check(assignment, progress)
        sides = _sides(left_item, left_a, left_b, right_item, right_a, right_b)
        return NextResult(assignment, NextReason.OK, sides=sides, progress=progress)
    if progress.quota_reached:
        reason = NextReason.QUOTA
    elif votes_recorded >= comparison_count:
        reason = NextReason.BALLOT_CLOSING
    elif only_judged_left:
        reason = NextReason.NONE_FOR_YOU
    else:
        reason = NextReason.ALL_LEASED
    result = _nothing_in_open_ballot(
        study=study, ballot_id=ballot_id, reason=reason, comparison_count=comparison_count
    )
    result.progress = progress
    return result


# The SQLite lease reads where the annotator stands in one statement: the open ballot, their votes in
# it and in all, the assignment they hold and, for it, both items' tokens. No open ballot still gives
# a row (of NULLs), so that "no ballot" and "no assignment held" are told apart from "no row".
_LEASE_STATE_SQL = """
SELECT b.id, b.number, b.comparison_count,
       (SELECT COALESCE(SUM(part.votes), 0) FROM collection_ballotcounter part WHERE part.ballot_id = b.id),
       (SELECT count(*) FROM collection_vote v WHERE v.annotator_id = %(annotator)s),
       (SELECT count(*) FROM collection_vote v WHERE v.annotator_id = %(annotator)s AND v.ballot_id = b.id),
       h.id, h.comparison_id, h.ballot_id, h.issued_at, h.expires_at,
       c.left_item_id, left_a.text, left_b.text, c.right_item_id, right_a.text, right_b.text,
       (SELECT an.excluded_at IS NOT NULL FROM collection_annotator an WHERE an.id = %(annotator)s)
FROM (SELECT 1) AS here  -- the alias PostgreSQL asks for (the lease of a check reads it there too)
LEFT JOIN collection_ballot b ON b.study_id = %(study)s AND b.status = 'open'
LEFT JOIN collection_assignment h ON h.annotator_id = %(annotator)s AND h.status = 'active'
LEFT JOIN collection_comparison c ON c.id = h.comparison_id
LEFT JOIN collection_item left_item ON left_item.id = c.left_item_id
LEFT JOIN collection_token left_a ON left_a.id = left_item.token_a_id
LEFT JOIN collection_token left_b ON left_b.id = left_item.token_b_id
LEFT JOIN collection_item right_item ON right_item.id = c.right_item_id
LEFT JOIN collection_token right_a ON right_a.id = right_item.token_a_id
LEFT JOIN collection_token right_b ON right_b.id = right_item.token_b_id
"""

# The available comparison (never voted, lease free or lapsed) whose pair the annotator has not judged,
# with both items' tokens: the longest-lapsed lease first, else the first open one by position, as on
# PostgreSQL (_LEASE_SQL). Open comparisons and lapsed leases are looked up apart, each in the order of its
# partial index (comparison_open: ballot, position; comparison_lapsing: ballot, expiry, position), so
# that neither sorts the ballot's rows.
_FIRST_AVAILABLE_SQL = """
SELECT c.id, c.status, c.left_item_id, left_a.text, left_b.text, c.right_item_id, right_a.text, right_b.text
FROM (
    SELECT id, 1 AS rank FROM (
        SELECT c.id FROM collection_comparison c
        WHERE c.ballot_id = %(ballot)s AND c.status = 'open'
          AND NOT EXISTS (
              SELECT 1 FROM collection_vote v
              WHERE v.annotator_id = %(annotator)s AND v.pair_low = c.pair_low AND v.pair_high = c.pair_high
          )
        ORDER BY c.position LIMIT 1
    )
    UNION ALL
    SELECT id, 0 AS rank FROM (
        SELECT c.id FROM collection_comparison c
        WHERE c.ballot_id = %(ballot)s AND c.status = 'leased' AND c.lease_expires_at < %(now)s
          AND NOT EXISTS (
              SELECT 1 FROM collection_vote v
              WHERE v.annotator_id = %(annotator)s AND v.pair_low = c.pair_low AND v.pair_high = c.pair_high
          )
        ORDER BY c.lease_expires_at, c.position LIMIT 1
    )
    ORDER BY rank LIMIT 1
) first
JOIN collection_comparison c ON c.id = first.id
JOIN collection_item left_item ON left_item.id = c.left_item_id
JOIN collection_token left_a ON left_a.id = left_item.token_a_id
JOIN collection_token left_b ON left_b.id = left_item.token_b_id
JOIN collection_item right_item ON right_item.id = c.right_item_id
JOIN collection_token right_a ON right_a.id = right_item.token_a_id
JOIN collection_token right_b ON right_b.id = right_item.token_b_id
"""

# Whether anyone could take a comparison now; two lookups on the same index, not a scan of the ballot.
_ANY_AVAILABLE_SQL = """
SELECT EXISTS (SELECT 1 FROM collection_comparison c WHERE c.ballot_id = %(ballot)s AND c.status = 'open')
    OR EXISTS (
        SELECT 1 FROM collection_comparison c
        WHERE c.ballot_id = %(ballot)s AND c.status = 'leased' AND c.lease_expires_at < %(now)s
    )
"""


def _sides(left_item, left_a, left_b, right_item, right_a, right_b) -> dict:
    return {
        "left": {"item": left_item, "tokens": [left_a, left_b]},
        "right": {"item": right_item, "tokens": [right_a, right_b]},
    }


def _datetime_of(value) -> datetime:
    """A datetime column read by raw SQL, as the ORM would give it (aware, on SQLite from its text)."""
    if isinstance(value, datetime) and value.tzinfo is not None:  # PostgreSQL's driver gives it already
        return value
    return connection.ops.convert_datetimefield_value(value, None, connection)


def _where_annotator_stands(annotator: Annotator) -> tuple:
    """The row of ``_LEASE_STATE_SQL`` (the open ballot, the annotator's votes, what they hold), after
    the lock of the annotator's row where the database has row locks."""
    if connection.features.has_select_for_update:
        _lock_annotator(annotator)
    with connection.cursor() as cursor:
        cursor.execute(_LEASE_STATE_SQL, {"study": annotator.study_id, "annotator": annotator.pk})
        return cursor.fetchone()


def _lease_step_by_step(*, annotator: Annotator, now: datetime) -> NextResult:
    """SQLite, the embedded default: the lease in a few raw statements (``UPDATE … RETURNING`` needs
    SQLite 3.35), serialised by the IMMEDIATE transaction, which takes the write lock at BEGIN.

    One read of where the annotator stands (``_LEASE_STATE_SQL``); if they hold a running lease, that
    is the answer; else one read of the first available comparison with its items' tokens
    (``_FIRST_AVAILABLE_SQL``), the comparison's update and the assignment's insert.
    """
    study = annotator.study
    now_value = connection.ops.adapt_datetimefield_value(now)
    (
        ballot_id,
        ballot_number,
        comparison_count,
        votes_recorded,
        votes_total,
        votes_in_ballot,
        held_id,
        held_comparison_id,
        held_ballot_id,
        held_issued_at,
        held_expires_at,
        *held_sides,
        excluded,
    ) = _where_annotator_stands(annotator)
    with connection.cursor() as cursor:
        if excluded:  # an exclusion committed after this request read the annotator's row
            return NextResult(None, NextReason.EXCLUDED)
        if ballot_id is None:
            return _no_open_ballot(study=study)
        progress = _progress(
            study, ballot_number, votes_in_ballot, votes_total, votes_recorded, comparison_count
        )
        if held_id is not None:
            held_expires_at = _datetime_of(held_expires_at)
            if held_expires_at > now and held_ballot_id == ballot_id:
                held = _assignment(
                    id=held_id,
                    comparison_id=held_comparison_id,
                    ballot_id=held_ballot_id,
                    annotator=annotator,
                    status=Assignment.Status.ACTIVE,
                    issued_at=_datetime_of(held_issued_at),
                    expires_at=held_expires_at,
                )
                if held_comparison_id is None:  # a check they hold
                    return _held_check(held, progress)
                return NextResult(held, NextReason.OK, sides=_sides(*held_sides), progress=progress)
            cursor.execute("UPDATE collection_assignment SET status = 'expired' WHERE id = %s", [held_id])
        if progress.quota_reached:
            return NextResult(None, NextReason.QUOTA, progress=progress)
        lookup = {"ballot": ballot_id, "annotator": annotator.pk, "now": now_value}
        cursor.execute(_FIRST_AVAILABLE_SQL, lookup)
        row = cursor.fetchone()
        if row is None:
            if votes_recorded >= comparison_count:
                reason = NextReason.BALLOT_CLOSING
            else:
                cursor.execute(_ANY_AVAILABLE_SQL, lookup)
                reason = NextReason.NONE_FOR_YOU if cursor.fetchone()[0] else NextReason.ALL_LEASED
            result = _nothing_in_open_ballot(
                study=study, ballot_id=ballot_id, reason=reason, comparison_count=comparison_count
            )
            result.progress = progress
            return result
        comparison_id, comparison_status, *sides = row
        if comparison_status == Comparison.Status.LEASED:  # an expired lease: end it before re-leasing
            cursor.execute(
                "UPDATE collection_assignment SET status = 'expired' WHERE comparison_id = %s AND status = 'active'",
                [comparison_id],
            )
        expires_at = now + timedelta(seconds=study.lease_seconds)
        expires_value = connection.ops.adapt_datetimefield_value(expires_at)
        cursor.execute(
            "UPDATE collection_comparison SET status = 'leased', lease_expires_at = %s WHERE id = %s",
            [expires_value, comparison_id],
        )
        cursor.execute(
            "INSERT INTO collection_assignment (comparison_id, ballot_id, annotator_id, status, issued_at, expires_at)"
            " VALUES (%s, %s, %s, 'active', %s, %s) RETURNING id",
            [comparison_id, ballot_id, annotator.pk, now_value, expires_value],
        )
        (assignment_id,) = cursor.fetchone()
    assignment = _assignment(
        id=assignment_id,
        comparison_id=comparison_id,
        ballot_id=ballot_id,
        annotator=annotator,
        status=Assignment.Status.ACTIVE,
        issued_at=now,
        expires_at=expires_at,
    )
    return NextResult(assignment, NextReason.OK, sides=_sides(*sides), progress=progress)


# --- a check in place of a comparison ------------------------------------------------------------


def _held_check(assignment: Assignment, progress: AnnotatorProgress) -> NextResult:
    check_id, instruction, sides = checks.check_held(assignment_id=assignment.pk)
    assignment.quality_check_id = check_id
    return NextResult(
        assignment, NextReason.OK, sides=_sides(*sides), progress=progress, instruction=instruction
    )


def _exclude_on_failed_checks(annotator: Annotator) -> None:
    """The rule of a study that excludes flagged annotators (``exclude_flagged_annotators``): an answer
    that brings the annotator's failed checks to the study's ``quality_max_failed_checks`` screens them
    out at once (``collection.exclusion``), whose pages then show the screened-out exit."""
    study = annotator.study
    if not study.exclude_flagged_annotators or not checks.annotator_failed_checks_threshold_crossed(
        annotator=annotator
    ):
        return
    failed = checks.annotator_failed_checks(annotator=annotator)
    annotator_exclude(
        annotator=annotator,
        reason=f"failed {failed} checks; the study's threshold is {study.quality_max_failed_checks}",
        rule="failed_checks",
    )


def _check_lease(*, annotator: Annotator, now: datetime, rng: random.Random | None) -> NextResult | None:
    """Serve a check (``collection.checks.check_lease``), or None to lease a comparison as usual.

    Only an annotator who holds no assignment and may still vote in an open ballot that is not
    closing gets a check; anything else (a held lease, the cap reached, no check left to answer) is
    left to the lease of a comparison, which says it. The progress is the one of a comparison: a check
    moves nothing in it.
    """
    study = annotator.study
    (
        ballot_id,
        ballot_number,
        comparison_count,
        votes_recorded,
        votes_total,
        votes_in_ballot,
        held_id,
    ) = _where_annotator_stands(annotator)[:7]
    if ballot_id is None or held_id is not None or votes_recorded >= comparison_count:
        return None
    progress = _progress(study, ballot_number, votes_in_ballot, votes_total, votes_recorded, comparison_count)
    if progress.quota_reached:
        return None
    expires_at = now + timedelta(seconds=study.lease_seconds)
    served = checks.check_lease(
        annotator=annotator, ballot_id=ballot_id, now=now, expires_at=expires_at, rng=rng
    )
    if served is None:
        return None
    assignment_id, check_id, instruction, sides = served
    assignment = _assignment(
        id=assignment_id,
        comparison_id=None,
        quality_check_id=check_id,
        ballot_id=ballot_id,
        annotator=annotator,
        status=Assignment.Status.ACTIVE,
        issued_at=now,
        expires_at=expires_at,
    )
    return NextResult(
        assignment, NextReason.OK, sides=_sides(*sides), progress=progress, instruction=instruction
    )


# --- the vote ------------------------------------------------------------------------------------


def _vote_refused(*, status: str, ballot_open: bool, ballot_number: int, expired: bool) -> ServiceError:
    if ballot_open and status == Assignment.Status.CANCELLED:  # withdrawn: its annotator was excluded
        return ServiceError(EXCLUDED_MESSAGE, status=403)
    if not ballot_open or status == Assignment.Status.CANCELLED:
        return ServiceError(
            f"ballot {ballot_number} is closed; this comparison no longer takes votes", status=409
        )
    if status != Assignment.Status.ACTIVE or expired:
        return ServiceError(
            "your time for this comparison ran out and it went back to the pool; ask for the next one",
            status=409,
        )
    return ServiceError("this comparison no longer takes votes", status=409)


def _client_response_ms(value: int | None) -> int | None:
    # A page measures its own time; anything outside (0, one day] is a broken clock, not a response.
    return value if value and 0 < value <= 86_400_000 else None


def vote_record(
    *,
    annotator: Annotator,
    assignment_id: int,
    choice: str,
    client_response_ms: int | None = None,
    now: datetime | None = None,
) -> tuple[Vote | CheckAnswer, bool]:
    """Record the annotator's vote on their assignment; returns (vote, created).

    The assignment of a check (``collection.checks``) records a ``CheckAnswer`` instead, returned in
    place of the vote: found only once the vote's statement took no comparison, so that a vote pays
    nothing for it.

    A retried request for an assignment already voted returns the recorded vote unchanged (created is
    False) whatever its choice. Refused with a 4xx ServiceError: an assignment that is not the
    annotator's (404), a choice the study does not offer (400), an expired lease or a closed ballot
    (409). The comparison is taken by a conditional ``UPDATE … WHERE status = 'leased'`` whose row count
    decides; on PostgreSQL the whole vote, the ballot's counter included, is one statement, atomic by
    itself (no BEGIN and COMMIT around it unless the caller has a transaction). The vote that completes
    its ballot, as its statement sees the ballot's counter, asks for its close, which runs after commit.
    The last votes of a ballot, run at once, may each miss the others' counts: ``vote_record_and_next``
    (every caller of the platform) then asks from its lease (``_close_if_seen_complete``); after this function
    alone, the sweep (``ballots_sweep``) closes such a ballot at its next run.
    """
    recorded = _vote_record(
        annotator=annotator,
        assignment_id=assignment_id,
        choice=choice,
        client_response_ms=client_response_ms,
        now=now,
    )
    return recorded.vote, recorded.created


class _Recorded(NamedTuple):
    """A vote as the vote functions record it: ``ballot_complete`` when its statement saw the ballot's
    counter reach its comparisons (it has asked for the close then)."""

    annotator: Annotator
    vote: Vote | CheckAnswer
    created: bool
    ballot_complete: bool = False


def _vote_record(
    *,
    annotator: Annotator,
    assignment_id: int,
    choice: str,
    client_response_ms: int | None = None,
    now: datetime | None = None,
) -> _Recorded:
    if annotator.excluded_at is not None:
        raise ServiceError(EXCLUDED_MESSAGE, status=403)
    now = now or timezone.now()
    _require_choice(choice)
    if connection.vendor == "postgresql":
        recorded = _vote_in_one_statement(
            owners={annotator.study_id: annotator.pk},
            assignment_id=assignment_id,
            choice=choice,
            client_response_ms=_client_response_ms(client_response_ms),
            now=now,
            annotator=annotator,
        )
        if recorded is None:
            raise ServiceError(f"assignment {assignment_id} is not one of yours", status=404)
        return recorded
    return _vote_step_by_step(
        annotator=annotator,
        assignment_id=assignment_id,
        choice=choice,
        client_response_ms=_client_response_ms(client_response_ms),
        now=now,
    )


_CHOICES = tuple(Vote.Choice.values)  # Django builds the list anew on each read of ``values``


def _require_choice(choice: str) -> None:
    if choice not in _CHOICES:
        raise ServiceError(f"choice must be one of {', '.join(_CHOICES)}, got {choice!r}")


def _tie_refused(annotator: Annotator, choice: str) -> bool:
    return choice == Vote.Choice.TIE and not annotator.study.allow_ties


TIE_REFUSED = 'this study does not allow ties: choose "left" or "right"'

# The vote, in one call of the PL/pgSQL function ``yardstick_vote_v3`` (migrations 0024, 0026, 0027): the
# assignment is locked first (a retry of the same vote waits there, then sees it voted), if it is held by one
# of the annotators the caller names, each with their study (the signed cookie's pairs, or the one annotator a
# caller already knows); the comparison is taken by a conditional UPDATE, whose row decides; the vote,
# the assignment and, last, the ballot's counter follow from that row. The holder's study and exclusion
# come back with it, so that a vote needs no statement to learn who cast it. No row: none of them holds
# the assignment. Its times come as integers, as the lease's (``_LEASE_SQL``).
_VOTE_SQL = """
SELECT o_annotator_id, o_study_id, {excluded_at}, o_settings_version, o_status, o_ballot_open, o_ballot_number,
       o_expired, o_ballot_id, o_marked, o_recorded, o_comparison_count, o_quality_check_id, o_id,
       o_assignment_id, o_comparison_id, o_vote_ballot_id, o_left_item_id, o_right_item_id, o_pair_low,
       o_pair_high, o_choice, o_response_ms, o_client_response_ms, {created_at}
FROM yardstick_vote_v3(%(assignment)s, %(studies)s, %(annotators)s, %(now)s, %(choice)s,
                                %(client_ms)s, %(parts)s)
""".format(
    excluded_at=epoch_microseconds_sql("o_excluded_at"), created_at=epoch_microseconds_sql("o_created_at")
)
_VOTE_FIELDS = [
    "id",
    "assignment_id",
    "comparison_id",
    "ballot_id",
    "left_item_id",
    "right_item_id",
    "pair_low",
    "pair_high",
    "choice",
    "response_ms",
    "client_response_ms",
    "created_at",
]

VOTE_STATEMENT = PreparedStatement(
    "yardstick_vote",
    _VOTE_SQL,
    {
        "assignment": "bigint",
        "studies": "bigint[]",
        "annotators": "bigint[]",
        "now": "timestamptz",
        "choice": "text",
        "client_ms": "integer",
        "parts": "integer",
    },
)

_VOTE_ATTNAMES = [field.attname for field in Vote._meta.concrete_fields]


def _vote_record_by_owner(
    *,
    owners: dict[int, int],
    assignment_id: int,
    choice: str,
    client_response_ms: int | None = None,
    now: datetime | None = None,
) -> _Recorded | None:
    """PostgreSQL: record the vote of whichever of ``owners`` ({study id: annotator id}, the signed
    cookie's) holds the assignment, or return None when none of them holds it (then nothing was
    written, and the caller finds the request's annotator another way).

    The vote's own statement finds the holder, with their study's settings version and exclusion, so
    a vote from a browser whose cookie names its annotator is one statement; the annotator comes back
    with ``study`` attached (``collection.study_cache``). Otherwise as ``vote_record``.
    """
    if connection.vendor != "postgresql" or not owners:
        return None
    now = now or timezone.now()
    _require_choice(choice)
    return _vote_in_one_statement(
        owners=owners,
        assignment_id=assignment_id,
        choice=choice,
        client_response_ms=_client_response_ms(client_response_ms),
        now=now,
    )


def _vote_in_one_statement(
    *,
    owners: dict[int, int],
    assignment_id: int,
    choice: str,
    client_response_ms: int | None,
    now: datetime,
    annotator: Annotator | None = None,
) -> _Recorded | None:
    parameters = _vote_parameters(
        owners=owners,
        assignment_id=assignment_id,
        choice=choice,
        client_response_ms=client_response_ms,
        now=now,
    )
    with connection.cursor() as cursor:
        VOTE_STATEMENT.execute(cursor, parameters)
        row = cursor.fetchone()
    return _recorded_from_vote_row(
        row,
        assignment_id=assignment_id,
        choice=choice,
        client_response_ms=client_response_ms,
        now=now,
        annotator=annotator,
    )


def _vote_parameters(
    *, owners: dict[int, int], assignment_id: int, choice: str, client_response_ms: int | None, now: datetime
) -> dict:
    return {
        "assignment": assignment_id,
        "studies": owners.keys(),  # written as {3} by common.prepared, not by psycopg's list dumpers
        "annotators": owners.values(),
        "now": now,
        "choice": choice,
        "client_ms": client_response_ms,
        "parts": BALLOT_COUNTER_PARTS,
    }


def _recorded_from_vote_row(
    row: tuple | None,
    *,
    assignment_id: int,
    choice: str,
    client_response_ms: int | None,
    now: datetime,
    annotator: Annotator | None,
    study: Study | None = None,
) -> _Recorded | None:
    """The vote as the row of ``VOTE_STATEMENT`` says it went: recorded, a retry, a check's answer, or
    the ServiceError of a refusal; None when none of the statement's owners holds the assignment.

    ``study``, when the caller has one, is the annotator's study if it is the one the row names, at the
    version the row read; otherwise the study is looked up at that version."""
    if row is None:
        return None
    owner_id, study_id, excluded_at, version = row[:4]
    excluded_at = aware_time(excluded_at)
    if annotator is None:
        annotator = loaded(
            Annotator, DEFAULT_DB_ALIAS, {"id": owner_id, "study_id": study_id, "excluded_at": excluded_at}
        )
        if study is None or study.pk != study_id or str(study.settings_version) != str(version):
            study = study_at_version(study_id, version)
        if study is None:  # deleted since the statement: as if the assignment were nobody's
            return None
        annotator.study = study
    status, ballot_open, ballot_number, expired, ballot_id, _marked, recorded, comparison_count = row[4:12]
    check_id = row[12]
    vote_values = row[13:]
    if vote_values[0] is None:
        if excluded_at is not None:  # first: an excluded annotator's votes in the open ballot are set aside
            raise ServiceError(EXCLUDED_MESSAGE, status=403)
        if status == Assignment.Status.VOTED:  # a retry: the vote its first request recorded
            return _Recorded(annotator, Vote.objects.get(assignment_id=assignment_id), False)
        # A check's assignment: its answer, never a vote. A cancelled one: the statement may have
        # waited for a close that cancelled it, and read its ballot as it was before (open), which
        # would say "excluded"; a fresh read tells the closed ballot from an exclusion.
        if check_id is not None or status == Assignment.Status.CANCELLED:
            return _vote_not_taken(
                annotator=annotator,
                assignment_id=assignment_id,
                choice=choice,
                client_response_ms=client_response_ms,
                now=now,
            )
        if _tie_refused(annotator, choice):
            raise ServiceError(TIE_REFUSED)
        raise _vote_refused(
            status=status, ballot_open=ballot_open, ballot_number=ballot_number, expired=expired
        )
    values = dict(zip(_VOTE_FIELDS, vote_values, strict=True), annotator_id=owner_id)
    values["created_at"] = aware_time(values["created_at"])
    vote = loaded(Vote, DEFAULT_DB_ALIAS, {name: values[name] for name in _VOTE_ATTNAMES})
    vote.annotator = annotator
    complete = recorded >= comparison_count
    if complete:
        ballot_close_request(ballot_id=ballot_id)
    return _Recorded(annotator, vote, True, complete)


# Why a vote that took no row was refused: the assignment as its owner sees it, with its ballot.
_VOTE_REFUSAL_SQL = """
SELECT a.status, a.expires_at, b.status, b.number, a.quality_check_id
FROM collection_assignment a
JOIN collection_ballot b ON b.id = a.ballot_id
WHERE a.id = %s AND a.annotator_id = %s
"""


def _vote_not_taken(
    *, annotator: Annotator, assignment_id: int, choice: str, client_response_ms: int | None, now: datetime
) -> _Recorded:
    """A vote that took no comparison: the recorded vote or check answer of a retried request, the
    answer to the check of a check's assignment, or the ServiceError that says why nothing was taken
    (checked in the order people are told: not yours, a tie not offered, expired or closed)."""
    for attempt in range(2):
        with connection.cursor() as cursor:
            cursor.execute(_VOTE_REFUSAL_SQL, [assignment_id, annotator.pk])
            row = cursor.fetchone()
        if row is None:
            raise ServiceError(f"assignment {assignment_id} is not one of yours", status=404)
        status, expires_at, ballot_status, ballot_number, check_id = row
        if status == Assignment.Status.VOTED:  # a retry: the vote its first request recorded
            return _Recorded(annotator, Vote.objects.get(assignment_id=assignment_id), False)
        if status == Assignment.Status.ANSWERED:  # a retry: the check answer its first request recorded
            return _Recorded(annotator, CheckAnswer.objects.get(assignment_id=assignment_id), False)
        if _tie_refused(annotator, choice):
            raise ServiceError(TIE_REFUSED)
        ballot_open = ballot_status == Ballot.Status.OPEN
        expired = _datetime_of(expires_at) <= now
        if check_id is not None and status == Assignment.Status.ACTIVE and ballot_open and not expired:
            answer = checks.check_answer_record(
                annotator=annotator,
                assignment_id=assignment_id,
                choice=choice,
                client_response_ms=client_response_ms,
                now=now,
            )
            if answer is not None:
                if not answer.correct:
                    _exclude_on_failed_checks(annotator)
                return _Recorded(annotator, answer, True)
            if attempt == 0:
                continue  # another request of theirs answered it (or it lapsed) meanwhile: read again
        break
    raise _vote_refused(status=status, ballot_open=ballot_open, ballot_number=ballot_number, expired=expired)


@transaction.atomic
def _vote_step_by_step(
    *, annotator: Annotator, assignment_id: int, choice: str, client_response_ms: int | None, now: datetime
) -> _Recorded:
    """SQLite: the vote in four raw statements inside the IMMEDIATE transaction.

    Each write is conditional and its row says whether the vote goes on: the assignment (the
    annotator's, active, its lease running), then the comparison (still leased, its ballot open); a
    refusal after the first raises inside the transaction, which takes the first write back. Then the
    vote, and last the ballot's counter.
    """
    if _tie_refused(annotator, choice):
        return _vote_not_taken(
            annotator=annotator,
            assignment_id=assignment_id,
            choice=choice,
            client_response_ms=client_response_ms,
            now=now,
        )
    now_value = connection.ops.adapt_datetimefield_value(now)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE collection_assignment SET status = 'voted'"
            " WHERE id = %s AND annotator_id = %s AND status = 'active' AND expires_at > %s"
            " AND comparison_id IS NOT NULL"
            " RETURNING comparison_id, ballot_id, issued_at",
            [assignment_id, annotator.pk, now_value],
        )
        row = cursor.fetchone()
        if row is None:  # a retry, a check's assignment (its answer), or refused
            return _vote_not_taken(
                annotator=annotator,
                assignment_id=assignment_id,
                choice=choice,
                client_response_ms=client_response_ms,
                now=now,
            )
        comparison_id, ballot_id, issued_at = row
        # A conditional UPDATE: its row says whether this vote is the one that takes the comparison.
        cursor.execute(
            "UPDATE collection_comparison SET status = 'voted', lease_expires_at = NULL"
            " WHERE id = %s AND status = 'leased'"
            " AND EXISTS (SELECT 1 FROM collection_ballot b WHERE b.id = %s AND b.status = 'open')"
            " RETURNING left_item_id, right_item_id, pair_low, pair_high",
            [comparison_id, ballot_id],
        )
        taken = cursor.fetchone()
        if taken is None:
            cursor.execute("SELECT status, number FROM collection_ballot WHERE id = %s", [ballot_id])
            ballot_status, ballot_number = cursor.fetchone()
            raise _vote_refused(
                status=Assignment.Status.ACTIVE,
                ballot_open=ballot_status == Ballot.Status.OPEN,
                ballot_number=ballot_number,
                expired=False,
            )
        left_item_id, right_item_id, pair_low, pair_high = taken
        response_ms = max(0, int((now - _datetime_of(issued_at)).total_seconds() * 1000))
        cursor.execute(
            "INSERT INTO collection_vote (assignment_id, comparison_id, annotator_id, ballot_id, left_item_id,"
            " right_item_id, pair_low, pair_high, choice, response_ms, client_response_ms, created_at)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
            [
                assignment_id,
                comparison_id,
                annotator.pk,
                ballot_id,
                left_item_id,
                right_item_id,
                pair_low,
                pair_high,
                choice,
                response_ms,
                client_response_ms,
                now_value,
            ],
        )
        (vote_id,) = cursor.fetchone()
    # The transaction (serialised by its write lock) that brings the count to comparison_count is the
    # one that asks for the ballot to close.
    recorded, comparison_count = BallotCounter.add(ballot_id=ballot_id, votes=1)
    AnnotatorVotes.add(annotator_id=annotator.pk, ballot_id=ballot_id, votes=1)
    values = {
        "id": vote_id,
        "assignment_id": assignment_id,
        "comparison_id": comparison_id,
        "annotator_id": annotator.pk,
        "ballot_id": ballot_id,
        "left_item_id": left_item_id,
        "right_item_id": right_item_id,
        "pair_low": pair_low,
        "pair_high": pair_high,
        "choice": choice,
        "response_ms": response_ms,
        "client_response_ms": client_response_ms,
        "created_at": now,
    }
    vote = loaded(Vote, DEFAULT_DB_ALIAS, {name: values[name] for name in _VOTE_ATTNAMES})
    vote.annotator = annotator
    complete = recorded >= comparison_count
    if complete:
        ballot_close_request(ballot_id=ballot_id)
    return _Recorded(annotator, vote, True, complete)


# --- a judgement: the vote, then the next comparison ----------------------------------------------


def vote_record_and_next(
    *,
    annotator: Annotator,
    assignment_id: int,
    choice: str,
    client_response_ms: int | None = None,
    now: datetime | None = None,
) -> tuple[Vote | CheckAnswer, bool, NextResult]:
    """Record the vote (``vote_record``, a ``CheckAnswer`` for a check's assignment), then lease the
    annotator's next comparison (``comparison_next_for``); returns (vote, created, next).

    One judgement, one call: the API's vote, the voting page's form and the simulated annotators all
    go through it. On PostgreSQL the vote and the lease are one round trip and one transaction
    (``_judgement_in_one_transaction``); elsewhere, and when the judgement serves a check, two: the
    vote commits first, then the lease. Either way the close the vote's ballot may ask for runs after
    the vote's commit (on the embedded default outside a request, after the response within one).
    A refused vote raises its ServiceError and leases nothing; a retried one (created False) still
    answers with the next comparison, which is the one the annotator holds while its lease runs.
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
        raise ServiceError(f"assignment {assignment_id} is not one of yours", status=404)
    return judgement[1:]


def vote_record_and_next_by_owner(
    *,
    owners: dict[int, int],
    assignment_id: int,
    choice: str,
    client_response_ms: int | None = None,
    now: datetime | None = None,
) -> tuple[Annotator, Vote | CheckAnswer, bool, NextResult] | None:
    """``vote_record_and_next`` for whichever of ``owners`` ({study id: annotator id}) holds the
    assignment (``_vote_record_by_owner``); returns (annotator, vote, created, next), or None, with nothing
    written, when none of them holds it or the database is not PostgreSQL."""
    if default_vendor() != "postgresql" or not owners:
        return None
    return _judgement(
        owners=owners,
        annotator=None,
        assignment_id=assignment_id,
        choice=choice,
        client_response_ms=client_response_ms,
        now=now,
    )


def _judgement(
    *,
    owners: dict[int, int],
    annotator: Annotator | None,
    assignment_id: int,
    choice: str,
    client_response_ms: int | None,
    now: datetime | None,
) -> tuple[Annotator, Vote | CheckAnswer, bool, NextResult] | None:
    """The vote of whichever of ``owners`` holds the assignment (``annotator`` when the caller knows
    them) and the lease that follows; None when none of them holds it.

    The study's check is drawn once, here, with the settings the caller or this process last read (a
    judgement that serves a check takes two transactions: the check's lease locks the annotator).
    """
    now = now or timezone.now()
    _require_choice(choice)
    study = annotator.study if annotator is not None else None
    if study is None and len(owners) == 1:
        study = latest_study(next(iter(owners)))
    due = None if study is None else checks.check_due(rate=study.check_rate)
    if due is False and default_vendor() == "postgresql":
        done = _judgement_in_one_transaction(
            owners=owners,
            annotator=annotator,
            study=study,
            assignment_id=assignment_id,
            choice=choice,
            client_response_ms=_client_response_ms(client_response_ms),
            now=now,
        )
        if done is not _IN_TWO:
            return done
    if annotator is None:
        recorded = _vote_record_by_owner(
            owners=owners,
            assignment_id=assignment_id,
            choice=choice,
            client_response_ms=client_response_ms,
            now=now,
        )
        if recorded is None:
            return None
    else:
        recorded = _vote_record(
            annotator=annotator,
            assignment_id=assignment_id,
            choice=choice,
            client_response_ms=client_response_ms,
            now=now,
        )
    result = comparison_next_for(annotator=recorded.annotator, now=now, check_due=due)
    _close_if_seen_complete(recorded, result)
    return recorded.annotator, recorded.vote, recorded.created, result


_IN_TWO = object()  # _judgement_in_one_transaction: "record it in two transactions instead"


def _judgement_in_one_transaction(
    *,
    owners: dict[int, int],
    annotator: Annotator | None,
    study: Study,
    assignment_id: int,
    choice: str,
    client_response_ms: int | None,
    now: datetime,
):
    """PostgreSQL: the vote's statement and the lease's in one round trip (``execute_together``), which
    PostgreSQL runs as one transaction: one commit per judgement, synchronous, as a vote's must be.

    The lease's statement sees the vote's writes and runs only if the vote stands (its assignment
    voted, by this request or by the one it retries) and ``study`` (whose lease length and cap are its
    parameters) is still at its version; otherwise it writes nothing, and the lease runs on its own
    after the vote, as it does after a check's answer. Returns (annotator, vote, created, next), None
    when none of ``owners`` holds the assignment, or ``_IN_TWO`` when the vote was undone (a lease of
    the same annotator won the race for their one active assignment, which undoes the whole
    transaction): then the two transactions of ``_judgement`` record it.

    The last votes of a ballot that run at once may each miss the others' count, in the vote's
    statement and in the lease's, which reads the ballot's count before its own transaction commits.
    None of them gets a comparison then: the others' are leased or being voted as it sees them, and
    ``FOR UPDATE SKIP LOCKED`` passes over a row another transaction holds, and over one voted since
    the statement began. So each vote answered without a comparison reads the count again once it has
    committed (``_close_if_complete``): whichever of the last votes commits last reads all of them. Inside a caller's transaction nothing has committed yet, so, as for a lease in
    one, the sweep closes such a ballot. The vote that completes its ballot leases again after its
    commit, when the close may have run (eager Celery outside a request) and opened the next ballot.
    """
    ((study_id, annotator_id),) = owners.items()
    parameters = {
        **_vote_parameters(
            owners=owners,
            assignment_id=assignment_id,
            choice=choice,
            client_response_ms=client_response_ms,
            now=now,
        ),
        **_lease_parameters(study=study, annotator_id=annotator_id, now=now),
        "after_vote": assignment_id,
        "settings_version": study.settings_version,
        "commit_async": False,
    }
    db = connections[DEFAULT_DB_ALIAS]  # django.db.connection, looked up once (common.database)
    try:
        # Inside a caller's transaction (tests), a savepoint keeps a lost race from ending it.
        with transaction.atomic() if db.in_atomic_block else nullcontext():
            with db.cursor() as cursor:
                vote_row, lease_row = execute_together(cursor, (VOTE_STATEMENT, LEASE_STATEMENT), parameters)
    except IntegrityError:
        return _IN_TWO
    lease_start_read(study.pk, lease_row[0], lease_row[LEASE_FIRST_OPEN])
    recorded = _recorded_from_vote_row(
        vote_row,
        assignment_id=assignment_id,
        choice=choice,
        client_response_ms=client_response_ms,
        now=now,
        annotator=annotator,
        study=study,
    )
    if recorded is None:
        return None
    if not (isinstance(recorded.vote, Vote) and lease_row[LEASE_COLUMNS]):
        # A check's answer, or the settings changed meanwhile: the lease on its own, after the commit.
        result = comparison_next_for(annotator=recorded.annotator, now=now, check_due=False)
        _close_if_seen_complete(recorded, result)
        return recorded.annotator, recorded.vote, recorded.created, result
    result = _lease_result(lease_row[:LEASE_COLUMNS], recorded.annotator)
    _close_if_seen_complete(recorded, result)
    if recorded.created and not db.in_atomic_block:  # committed: after the commit
        if result.reason == NextReason.BALLOT_CLOSING:
            # Where the close ran at the commit (eager Celery outside a request), the next ballot is open.
            result = comparison_next_for(annotator=recorded.annotator, now=now, check_due=False)
        elif result.assignment is None and not recorded.ballot_complete:
            _close_if_complete(recorded.vote.ballot_id)
    return recorded.annotator, recorded.vote, recorded.created, result


def _close_if_seen_complete(recorded: _Recorded, result: NextResult) -> None:
    """Ask for the close of the vote's ballot when the lease that followed it read the ballot complete
    and the vote's own statement did not.

    A vote's statement reads the other parts of the ballot's counter as they were committed when it
    started, so the last votes of a ballot, running at once, may each miss the others' and none see
    the ballot complete. A lease in a transaction of its own starts after its vote committed: whichever
    lease starts last reads every one of those votes. The close is idempotent: two that ask cost a
    message, not a second close. The sweep (``ballots_sweep``) is the net under both, as for a lost
    message.
    """
    progress = result.progress
    if (
        recorded.created
        and not recorded.ballot_complete
        and isinstance(recorded.vote, Vote)
        and progress is not None
        and progress.ballot_voted >= progress.ballot_comparisons
    ):
        ballot_close_request(ballot_id=recorded.vote.ballot_id)


_BALLOT_COMPLETE_SQL = """
SELECT COALESCE(SUM(part.votes), 0) >= b.comparison_count
FROM collection_ballot b
LEFT JOIN collection_ballotcounter part ON part.ballot_id = b.id
WHERE b.id = %s AND b.status = 'open'
GROUP BY b.id, b.comparison_count
"""


def _close_if_complete(ballot_id: int) -> None:
    """After a vote's commit: ask for the close of its ballot if every comparison of it is voted."""
    with connection.cursor() as cursor:
        cursor.execute(_BALLOT_COMPLETE_SQL, [ballot_id])
        row = cursor.fetchone()
    if row is not None and row[0]:
        ballot_close_request(ballot_id=ballot_id)


# --- leaving: Finish, and a lease given back -----------------------------------------------------


def _lease_release(*, assignment_id: int, comparison_id: int | None, now: datetime) -> None:
    """End a running lease now: the assignment expires, its comparison (if not a check's) is open again."""
    Assignment.objects.filter(pk=assignment_id).update(status=Assignment.Status.EXPIRED, expires_at=now)
    if comparison_id is not None:
        Comparison.objects.filter(pk=comparison_id, status=Comparison.Status.LEASED).update(
            status=Comparison.Status.OPEN, lease_expires_at=None
        )
        transaction.on_commit(lease_start_forget)  # open again: this process's leases scan from the start


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
        raise ServiceError(f"assignment {assignment_id} is not one of yours", status=404)
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
                f"this study asks for {annotator.study.min_judgements} comparisons before you finish; you "
                f"have made {votes}, so {remaining} remain",
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
