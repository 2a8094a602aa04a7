"""The lease of an annotator's next comparison: where they stand, the comparison taken, or why there is
none (``comparison_next_for``); a check served in its place; both items' tokens, kept per study.

The statements are plain SQL with the driver's parameters, the same on PostgreSQL and SQLite (the ORM
would spend 0.3 to 0.8 ms of CPU building each; docs/architecture.md). A lease takes a comparison
``FOR UPDATE SKIP LOCKED`` on PostgreSQL, and SQLite's IMMEDIATE transaction serialises it there. The
partial unique indexes ``one_active_assignment_per_annotator`` and ``…_per_comparison`` keep one lease
per annotator and per comparison: a lease that loses that race is made again and finds the winner's.
A vote and the lease that follows it are one transaction (``collection.voting``).
"""

from __future__ import annotations

import random
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy

from collection import checks
from collection.exclusion import annotator_exclude
from collection.lifecycle import ballot_close_ask_again, ballot_close_wait_seconds
from collection.models import Annotator, Assignment, Item, Study
from collection.selectors import AnnotatorProgress

# --- what a lease answers ------------------------------------------------------------------------


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
    ANNOTATOR_FINISHED = "annotator_finished"  # they pressed Finish (collection/leaving.py): completed


# Lazy: said in the language of the request that meets it (collection/languages.py).
EXCLUDED_MESSAGE = gettext_lazy(
    "you were excluded from this study by its researchers, so your votes are no longer taken; "
    "open the study link for your completion code (screened out)"
)

# Every comparison left leased to others: those leases are mostly voted within about one judgement
# (3 s for a crowd of 500), or one lapses. Each annotator is told a whole number of seconds drawn
# around it, so that those who found the ballot leased at one moment do not come back in one burst.
ALL_LEASED_RETRY_SECONDS = 3
ALL_LEASED_RETRY_SPREAD = 1
_retry_draws = random.Random()


@dataclass
class NextResult:
    """The annotator's assignment with what a page shows of it, or why there is none.

    With an assignment, ``sides`` holds both items as shown (``{"left": {"item": id, "tokens": [a, b]},
    "right": …}``) and ``progress`` where the annotator stands. ``instruction`` is what an
    instructed-response check shows in place of the study's question.
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


class Standing(NamedTuple):
    """Where an annotator stands in their study's open ballot, as the lease reads it."""

    ballot_id: int
    ballot_number: int
    comparison_count: int
    ballot_voted: int
    votes_total: int
    votes_in_ballot: int

    def progress(self, study: Study) -> AnnotatorProgress:
        return AnnotatorProgress(
            ballot_number=self.ballot_number,
            ballot_count=study.ballot_count,
            votes_in_ballot=self.votes_in_ballot,
            cap=study.votes_per_annotator_per_ballot,
            votes_total=self.votes_total,
            ballot_voted=self.ballot_voted,
            ballot_comparisons=self.comparison_count,
        )


def db_time(value: datetime):
    return connection.ops.adapt_datetimefield_value(value)


def time_of(value) -> datetime:
    """A datetime column read by raw SQL, as the ORM gives it (SQLite returns its text)."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value
    return connection.ops.convert_datetimefield_value(value, None, connection)


def _lock(clause: str) -> str:
    """A row-locking clause where the database has one (PostgreSQL); SQLite's IMMEDIATE transaction
    holds the write lock from BEGIN instead."""
    return clause if connection.features.has_select_for_update_skip_locked else ""


# --- both items' tokens, kept per study ----------------------------------------------------------

_tokens_lock = threading.Lock()
_tokens: OrderedDict[object, dict[int, list[str]]] = OrderedDict()  # settings version -> {item: tokens}
_TOKENS_STUDIES = 16


def _item_tokens(study: Study, item_ids: tuple[int, ...]) -> dict[int, list[str]]:
    """{item id: [token, token]} of the study's items, read once per study (its items change only while
    it is a draft, and nothing is leased then) and kept for the ``_TOKENS_STUDIES`` latest studies."""
    with _tokens_lock:
        kept = _tokens.get(study.settings_version)
    if kept is None or any(item not in kept for item in item_ids):
        rows = Item.objects.filter(study_id=study.pk).values_list("id", "token_a__text", "token_b__text")
        kept = {item: [a, b] for item, a, b in rows}
        with _tokens_lock:
            _tokens[study.settings_version] = kept
            while len(_tokens) > _TOKENS_STUDIES:
                _tokens.popitem(last=False)
    return kept


def _sides(study: Study, left_item: int, right_item: int) -> dict:
    tokens = _item_tokens(study, (left_item, right_item))
    return {
        "left": {"item": left_item, "tokens": tokens[left_item]},
        "right": {"item": right_item, "tokens": tokens[right_item]},
    }


# --- the lease -----------------------------------------------------------------------------------

# Where the annotator stands: the study's open ballot with its count, their own counts, the assignment
# they hold, whether they were excluded or finished. No open ballot still gives a row.
_STANDING_SQL = """
SELECT b.id, b.number, b.comparison_count,
       (SELECT COALESCE(SUM(part.votes), 0) FROM collection_ballotcounter part WHERE part.ballot_id = b.id),
       COALESCE(n.total, 0), CASE WHEN n.ballot_id = b.id THEN n.in_ballot ELSE 0 END,
       h.id, h.comparison_id, h.quality_check_id, h.ballot_id, h.issued_at, h.expires_at,
       an.excluded_at IS NOT NULL, an.finished_at IS NOT NULL, hc.left_item_id, hc.right_item_id
FROM collection_annotator an
LEFT JOIN collection_ballot b ON b.study_id = an.study_id AND b.status = 'open'
LEFT JOIN collection_annotatorvotes n ON n.annotator_id = an.id
LEFT JOIN collection_assignment h ON h.annotator_id = an.id AND h.status = 'active'
LEFT JOIN collection_comparison hc ON hc.id = h.comparison_id
WHERE an.id = %s
"""

# The comparison to lease: the longest-lapsed lease first, else the first open comparison by position,
# whose pair the annotator has not judged. Each look-up is one index-ordered probe of a partial index
# (comparison_lapsing, comparison_open), so a lease costs the same in a full ballot as in an empty one.
_NOT_JUDGED = """NOT EXISTS (SELECT 1 FROM collection_vote v WHERE v.annotator_id = %(annotator)s
                       AND v.pair_low = c.pair_low AND v.pair_high = c.pair_high)"""
_LAPSED = f"""SELECT c.id FROM collection_comparison c
    WHERE c.ballot_id = %(ballot)s AND c.status = 'leased' AND c.lease_expires_at < %(now)s AND {_NOT_JUDGED}
    ORDER BY c.lease_expires_at, c.position LIMIT 1{{lock}}"""
_OPEN = f"""SELECT c.id FROM collection_comparison c
    WHERE c.ballot_id = %(ballot)s AND c.status = 'open' AND {_NOT_JUDGED}
    ORDER BY c.position LIMIT 1{{lock}}"""
_TAKE_SQL = f"""
UPDATE collection_comparison SET status = 'leased', lease_expires_at = %(expires)s
WHERE id = COALESCE(({_LAPSED}), ({_OPEN}))
RETURNING id, left_item_id, right_item_id
"""
# Nothing to take: "none for you" when comparisons are left (open, or lapsed) and all are pairs the
# annotator judged; otherwise they are leased to others, or being leased by others at this instant.
_ONLY_JUDGED_LEFT_SQL = """
SELECT EXISTS (SELECT 1 FROM collection_comparison c WHERE c.ballot_id = %(ballot)s AND (c.status = 'open'
               OR (c.status = 'leased' AND c.lease_expires_at < %(now)s)))
   AND NOT EXISTS (SELECT 1 FROM collection_comparison c WHERE c.ballot_id = %(ballot)s
                   AND (c.status = 'open' OR (c.status = 'leased' AND c.lease_expires_at < %(now)s))
                   AND NOT EXISTS (SELECT 1 FROM collection_vote v WHERE v.annotator_id = %(annotator)s
                                   AND v.pair_low = c.pair_low AND v.pair_high = c.pair_high))
"""


def comparison_next_for(
    *,
    annotator: Annotator,
    now: datetime | None = None,
    rng: random.Random | None = None,
    check_due: bool | None = None,
) -> NextResult:
    """Lease the annotator a comparison of the open ballot, or say why there is none.

    They get back the assignment they hold while its lease runs; otherwise the longest-lapsed lease or
    else the first open comparison whose pair of items they have not judged in this study, within their
    cap for the ballot. With the study's ``check_rate`` (a draw from ``rng``, or the caller's
    ``check_due``) it serves instead a check they have not answered, if they hold nothing and may vote.
    """
    if annotator.excluded_at is not None:
        return NextResult(None, NextReason.EXCLUDED)
    now = now or timezone.now()
    if check_due is None:
        check_due = checks.check_due(rate=annotator.study.check_rate, rng=rng)
    for attempt in (1, 2):
        try:
            with transaction.atomic():
                return lease(annotator, now, check_due=check_due, rng=rng)
        except IntegrityError:  # another lease of theirs won: the retry finds it
            if attempt == 2:
                raise
            check_due = False
    raise AssertionError("unreachable")


def lease(annotator: Annotator, now: datetime, *, check_due: bool, rng) -> NextResult:
    """The lease inside the caller's transaction: where the annotator stands, then ``_take``."""
    study = annotator.study
    with connection.cursor() as cursor:
        cursor.execute(_STANDING_SQL, [annotator.pk])
        row = cursor.fetchone()
    if row is None or row[12]:  # deleted, or an exclusion committed after the request read them
        return NextResult(None, NextReason.EXCLUDED)
    if row[13]:
        return NextResult(None, NextReason.ANNOTATOR_FINISHED)
    if row[0] is None:
        return _no_open_ballot(study)
    standing = Standing(*row[:6])
    held_id, comparison_id, _check_id, held_ballot, issued_at, expires_at = row[6:12]
    if held_id is not None:
        expires_at = time_of(expires_at)
        if expires_at > now and held_ballot == standing.ballot_id:
            held = _assignment(annotator, held_id, comparison_id, held_ballot, time_of(issued_at), expires_at)
            if comparison_id is None:
                return _held_check(held, standing.progress(study))
            sides = _sides(study, row[14], row[15])
            return NextResult(held, NextReason.OK, sides=sides, progress=standing.progress(study))
        Assignment.objects.filter(pk=held_id, status=Assignment.Status.ACTIVE).update(
            status=Assignment.Status.EXPIRED
        )
    if check_due:
        served = _check_lease(annotator, standing, now, rng)
        if served is not None:
            return served
    return take(annotator, standing, now)


def take(annotator: Annotator, standing: Standing, now: datetime) -> NextResult:
    """Lease a comparison to an annotator who holds none, or say why there is none: three statements
    (the comparison taken, the lapsed lease it replaces ended, the assignment)."""
    study = annotator.study
    progress = standing.progress(study)
    if progress.quota_reached:
        return NextResult(None, NextReason.QUOTA, progress=progress)
    expires_at = now + timedelta(seconds=study.lease_seconds)
    lookup = {
        "ballot": standing.ballot_id,
        "annotator": annotator.pk,
        "now": db_time(now),
        "expires": db_time(expires_at),
    }
    with connection.cursor() as cursor:
        cursor.execute(_TAKE_SQL.format(lock=_lock(" FOR UPDATE SKIP LOCKED")), lookup)
        taken = cursor.fetchone()
        if taken is None:
            return _nothing_to_take(annotator, standing, lookup, progress)
        comparison_id, left_item, right_item = taken
        cursor.execute(  # a lapsed lease's assignment ends before the new one begins
            "UPDATE collection_assignment SET status = 'expired' WHERE comparison_id = %s AND status = 'active'",
            [comparison_id],
        )
        cursor.execute(
            "INSERT INTO collection_assignment (comparison_id, ballot_id, annotator_id, status, issued_at, expires_at)"
            " VALUES (%s, %s, %s, 'active', %s, %s) RETURNING id",
            [comparison_id, standing.ballot_id, annotator.pk, lookup["now"], lookup["expires"]],
        )
        (assignment_id,) = cursor.fetchone()
    assignment = _assignment(annotator, assignment_id, comparison_id, standing.ballot_id, now, expires_at)
    return NextResult(
        assignment, NextReason.OK, sides=_sides(study, left_item, right_item), progress=progress
    )


def _nothing_to_take(annotator: Annotator, standing: Standing, lookup: dict, progress) -> NextResult:
    study = annotator.study
    if standing.ballot_voted >= standing.comparison_count:
        retry = ballot_close_wait_seconds(study_id=study.pk, comparison_count=standing.comparison_count)
        # Closing for longer than its close should take: its message was lost, so ask again.
        ballot_close_ask_again(ballot_id=standing.ballot_id, expected_close_seconds=retry)
        return NextResult(None, NextReason.BALLOT_CLOSING, retry_after_seconds=retry, progress=progress)
    with connection.cursor() as cursor:
        cursor.execute(_ONLY_JUDGED_LEFT_SQL, lookup)
        only_judged_left = bool(cursor.fetchone()[0])
    if only_judged_left:
        return NextResult(None, NextReason.NONE_FOR_YOU, progress=progress)
    retry = _retry_draws.randint(  # 2 to 4 s: shorter than any lease (at least 10 s)
        ALL_LEASED_RETRY_SECONDS - ALL_LEASED_RETRY_SPREAD, ALL_LEASED_RETRY_SECONDS + ALL_LEASED_RETRY_SPREAD
    )
    return NextResult(None, NextReason.ALL_LEASED, retry_after_seconds=retry, progress=progress)


def _no_open_ballot(study: Study) -> NextResult:
    status = Study.objects.values_list("status", flat=True).get(pk=study.pk)
    if status == Study.Status.DRAFT:
        return NextResult(None, NextReason.NOT_STARTED)
    if status == Study.Status.FINISHED:
        return NextResult(None, NextReason.FINISHED)
    return NextResult(
        None, NextReason.BALLOT_CLOSING, retry_after_seconds=ballot_close_wait_seconds(study_id=study.pk)
    )


def _assignment(annotator, assignment_id, comparison_id, ballot_id, issued_at, expires_at, check_id=None):
    assignment = Assignment(
        id=assignment_id,
        comparison_id=comparison_id,
        quality_check_id=check_id,
        ballot_id=ballot_id,
        annotator_id=annotator.pk,
        status=Assignment.Status.ACTIVE,
        issued_at=issued_at,
        expires_at=expires_at,
    )
    assignment.annotator = annotator
    return assignment


# --- a check in place of a comparison ------------------------------------------------------------


def _check_sides(left, left_a, left_b, right, right_a, right_b) -> dict:
    return {
        "left": {"item": left, "tokens": [left_a, left_b]},
        "right": {"item": right, "tokens": [right_a, right_b]},
    }


def _held_check(assignment: Assignment, progress: AnnotatorProgress) -> NextResult:
    check_id, instruction, sides = checks.check_held(assignment_id=assignment.pk)
    assignment.quality_check_id = check_id
    return NextResult(
        assignment, NextReason.OK, sides=_check_sides(*sides), progress=progress, instruction=instruction
    )


def _check_lease(annotator: Annotator, standing: Standing, now: datetime, rng) -> NextResult | None:
    """Serve a check (``collection.checks.check_lease``) to an annotator who holds nothing and may vote in
    a ballot that is not closing, or None to lease a comparison. A check moves nothing in the progress."""
    progress = standing.progress(annotator.study)
    if standing.ballot_voted >= standing.comparison_count or progress.quota_reached:
        return None
    expires_at = now + timedelta(seconds=annotator.study.lease_seconds)
    served = checks.check_lease(
        annotator=annotator, ballot_id=standing.ballot_id, now=now, expires_at=expires_at, rng=rng
    )
    if served is None:
        return None
    assignment_id, check_id, instruction, sides = served
    assignment = _assignment(annotator, assignment_id, None, standing.ballot_id, now, expires_at, check_id)
    return NextResult(
        assignment, NextReason.OK, sides=_check_sides(*sides), progress=progress, instruction=instruction
    )


def exclude_on_failed_checks(annotator: Annotator) -> None:
    """A study that excludes flagged annotators screens one out at the answer that brings their failed
    checks to its ``quality_max_failed_checks`` (``collection.exclusion``)."""
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
