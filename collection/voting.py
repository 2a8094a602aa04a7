"""Voting: annotators, the lease of the next comparison, and the vote.

A judgement is the vote on the annotator's assignment and the lease of their next comparison, in one
transaction (``vote_record_and_next``): the API, the voting page and the simulated annotators all
make it here. The same statements run on PostgreSQL and on SQLite, written in plain SQL with the
driver's parameters. The ORM costs 0.3 to 0.8 ms of CPU to build each query; on this path that would
be most of a judgement (docs/architecture.md). The rare branches (refusals, retries, checks) use the ORM.

Concurrency: the vote takes its assignment by a conditional ``UPDATE`` (row count and row decide); a
lease takes a comparison ``FOR UPDATE SKIP LOCKED`` on PostgreSQL, and SQLite's IMMEDIATE transaction
serialises it there. The partial unique indexes ``one_active_assignment_per_annotator`` and
``…_per_comparison`` keep one lease per annotator and per comparison: a lease that loses that race
is retried once, and then finds the winner's. The vote that completes its ballot asks for the close
(``collection.lifecycle.ballot_close_request``), which a Celery task runs after the commit.
"""

from __future__ import annotations

import itertools
import os
import random
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from collection import checks
from collection.exclusion import annotator_exclude
from collection.lifecycle import ballot_close_ask_again, ballot_close_request, ballot_close_wait_seconds
from collection.models import (
    BALLOT_COUNTER_PARTS,
    Annotator,
    AnnotatorVotes,
    Assignment,
    Ballot,
    BallotCounter,
    CheckAnswer,
    Item,
    Study,
    Vote,
)
from collection.selectors import AnnotatorProgress
from collection.study_cache import study_at_version
from common.errors import ServiceError

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


EXCLUDED_MESSAGE = (
    "you were excluded from this study by its researchers, so your votes are no longer taken; "
    "open the study link for your completion code (screened out)"
)
TIE_REFUSED = 'this study does not allow ties: choose "left" or "right"'

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


class _Standing(NamedTuple):
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


def _db_time(value: datetime):
    return connection.ops.adapt_datetimefield_value(value)


def _time_of(value) -> datetime:
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
                return _lease(annotator, now, check_due=check_due, rng=rng)
        except IntegrityError:  # another lease of theirs won: the retry finds it
            if attempt == 2:
                raise
            check_due = False
    raise AssertionError("unreachable")


def _lease(annotator: Annotator, now: datetime, *, check_due: bool, rng) -> NextResult:
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
    standing = _Standing(*row[:6])
    held_id, comparison_id, _check_id, held_ballot, issued_at, expires_at = row[6:12]
    if held_id is not None:
        expires_at = _time_of(expires_at)
        if expires_at > now and held_ballot == standing.ballot_id:
            held = _assignment(
                annotator, held_id, comparison_id, held_ballot, _time_of(issued_at), expires_at
            )
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
    return _take(annotator, standing, now)


def _take(annotator: Annotator, standing: _Standing, now: datetime) -> NextResult:
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
        "now": _db_time(now),
        "expires": _db_time(expires_at),
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


def _nothing_to_take(annotator: Annotator, standing: _Standing, lookup: dict, progress) -> NextResult:
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


def _check_lease(annotator: Annotator, standing: _Standing, now: datetime, rng) -> NextResult | None:
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


def _exclude_on_failed_checks(annotator: Annotator) -> None:
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
    standing: _Standing | None = None


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


def _require_choice(choice: str) -> None:
    if choice not in Vote.Choice.values:
        raise ServiceError(f"choice must be one of {', '.join(Vote.Choice.values)}, got {choice!r}")


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
    parameters = {"assignment": assignment_id, "now": _db_time(now)}
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
                raise ServiceError(f"assignment {assignment_id} is not one of yours", status=404)
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
            "response_ms": max(0, int((now - _time_of(issued_at)).total_seconds() * 1000)),
            "client_response_ms": _client_response_ms(client_response_ms),
            "created_at": now,
        }
        cursor.execute(_INSERT_VOTE_SQL, [values[name] for name in _VOTE_FIELDS[:-1]] + [_db_time(now)])
        (values["id"],) = cursor.fetchone()
    voted, comparison_count = BallotCounter.add(ballot_id=ballot_id, votes=1, part=_counter_part())
    total, in_ballot = AnnotatorVotes.add(annotator_id=owner_id, ballot_id=ballot_id, votes=1)
    if voted >= comparison_count:
        ballot_close_request(ballot_id=ballot_id)
    vote = _instance(Vote, values)
    vote.annotator = annotator
    standing = _Standing(ballot_id, ballot_number, comparison_count, voted, total, in_ballot)
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
                    _exclude_on_failed_checks(annotator)
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
        raise ServiceError(f"assignment {assignment_id} is not one of yours", status=404)
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
                    result = _take(recorded.annotator, recorded.standing, now)
                else:
                    result = _lease(recorded.annotator, now, check_due=due, rng=None)
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
