"""Checks: gold comparisons and instructed-response checks mixed into the annotators' streams.

A researcher adds checks to a study (``check_create``, ``checks_import``, or inline in the study's
admin). The lease (``collection.voting.comparison_next_for``) serves one, at the study's
``check_rate``, in place of a comparison: an ``Assignment`` whose ``quality_check`` is set and whose
``comparison`` is not, shown through the same page and the same API body as any comparison. Its answer
(``check_answer_record``, called by ``vote_record`` when the assignment is a check's) is a
``CheckAnswer``: never a ``Vote``, never in a ballot's counter, never in the annotator's quota.

The lease of a comparison pays nothing for this: whether to serve a check is a draw in this process
(``check_due``), and only a served check reads and writes more (``check_lease``).

A check shows two items of the study, not free text: the page and the API show an item's id with its
tokens, so a gold comparison made of two items is told apart from a real comparison by nothing, and
its words are tokens of the study's own areas.
"""

from __future__ import annotations

import random
from datetime import datetime

from django.db import connection, transaction
from django.db.models import F

from collection import limits
from collection.models import Annotator, Check, CheckAnswer, Item, Study
from collection.pools import _csv_rows, _decode_upload, _normalise
from common.errors import ServiceError, reported_errors
from common.numbers import counted, listed

# The draws of check_due when the caller passes none: a check is a sample, not a secret.
_DRAWS = random.Random()


def check_due(*, rate: float, rng: random.Random | None = None) -> bool:
    """Whether this lease serves a check: true with probability ``rate`` (the study's ``check_rate``)."""
    return rate > 0 and (rng or _DRAWS).random() < rate


# --- serving -------------------------------------------------------------------------------------

# What a check shows: its instruction (blank for gold) and both items with their tokens, in the order
# of leasing._sides.
_SHOWN_COLUMNS = """
ch.id, ch.instruction,
ch.left_item_id, left_a.text, left_b.text, ch.right_item_id, right_a.text, right_b.text
"""
_SHOWN_JOINS = """
JOIN collection_item left_item ON left_item.id = ch.left_item_id
JOIN collection_token left_a ON left_a.id = left_item.token_a_id
JOIN collection_token left_b ON left_b.id = left_item.token_b_id
JOIN collection_item right_item ON right_item.id = ch.right_item_id
JOIN collection_token right_a ON right_a.id = right_item.token_a_id
JOIN collection_token right_b ON right_b.id = right_item.token_b_id
"""

# The checks of the study the annotator has not answered (a study holds at most MAX_CHECKS).
_UNANSWERED_SQL = f"""
SELECT {_SHOWN_COLUMNS}
FROM collection_check ch
{_SHOWN_JOINS}
WHERE ch.study_id = %(study)s
  AND NOT EXISTS (
      SELECT 1 FROM collection_checkanswer answer
      WHERE answer.annotator_id = %(annotator)s AND answer.quality_check_id = ch.id
  )
ORDER BY ch.id
"""

_HELD_SQL = f"""
SELECT {_SHOWN_COLUMNS}
FROM collection_assignment a
JOIN collection_check ch ON ch.id = a.quality_check_id
{_SHOWN_JOINS}
WHERE a.id = %s
"""


def check_lease(
    *,
    annotator: Annotator,
    ballot_id: int,
    now: datetime,
    expires_at: datetime,
    rng: random.Random | None = None,
) -> tuple[int, int, str, tuple] | None:
    """Lease the annotator a check they have not answered, drawn at random among those left.

    Returns (assignment id, check id, instruction, the six values of both sides), or None when they
    answered every check. The caller holds the annotator's lease lock and knows they hold no assignment.
    """
    with connection.cursor() as cursor:
        cursor.execute(_UNANSWERED_SQL, {"study": annotator.study_id, "annotator": annotator.pk})
        candidates = cursor.fetchall()
        if not candidates:
            return None
        check_id, instruction, *sides = candidates[(rng or _DRAWS).randrange(len(candidates))]
        cursor.execute(
            "INSERT INTO collection_assignment"
            " (comparison_id, quality_check_id, ballot_id, annotator_id, status, issued_at, expires_at)"
            " VALUES (NULL, %s, %s, %s, 'active', %s, %s) RETURNING id",
            [
                check_id,
                ballot_id,
                annotator.pk,
                connection.ops.adapt_datetimefield_value(now),
                connection.ops.adapt_datetimefield_value(expires_at),
            ],
        )
        (assignment_id,) = cursor.fetchone()
    return assignment_id, check_id, instruction, tuple(sides)


def check_held(*, assignment_id: int) -> tuple[int, str, tuple]:
    """What the check of a held assignment shows: (check id, instruction, the six values of both sides)."""
    with connection.cursor() as cursor:
        cursor.execute(_HELD_SQL, [assignment_id])
        check_id, instruction, *sides = cursor.fetchone()
    return check_id, instruction, tuple(sides)


# --- answering -----------------------------------------------------------------------------------

_ANSWERED_ATTNAMES = [field.attname for field in CheckAnswer._meta.concrete_fields]


@transaction.atomic
def check_answer_record(
    *,
    annotator: Annotator,
    assignment_id: int,
    choice: str,
    client_response_ms: int | None,
    now: datetime,
) -> CheckAnswer | None:
    """Record the annotator's answer to the check of their assignment; None if the assignment does not
    take it (not theirs, not a check's, no longer active, its lease run out, its ballot closed).

    Two conditional writes: the assignment becomes ``answered`` (its row decides), then the answer,
    correct when the choice is the check's expected side. No vote, no counter: the ballot and the
    annotator's quota do not move.
    """
    now_value = connection.ops.adapt_datetimefield_value(now)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE collection_assignment SET status = 'answered'"
            " WHERE id = %s AND annotator_id = %s AND status = 'active' AND expires_at > %s"
            " AND quality_check_id IS NOT NULL"
            " AND EXISTS (SELECT 1 FROM collection_ballot b"
            "             WHERE b.id = collection_assignment.ballot_id AND b.status = 'open')"
            " RETURNING quality_check_id, issued_at",
            [assignment_id, annotator.pk, now_value],
        )
        row = cursor.fetchone()
        if row is None:
            return None
        check_id, issued_at = row
        if not (isinstance(issued_at, datetime) and issued_at.tzinfo is not None):  # SQLite: text or naive
            issued_at = connection.ops.convert_datetimefield_value(issued_at, None, connection)
        response_ms = max(0, int((now - issued_at).total_seconds() * 1000))
        cursor.execute(
            "INSERT INTO collection_checkanswer (assignment_id, quality_check_id, annotator_id, choice,"
            " correct, response_ms, client_response_ms, created_at)"
            " SELECT %s, ch.id, %s, %s, ch.expected = %s, %s, %s, %s FROM collection_check ch WHERE ch.id = %s"
            " RETURNING id, correct",
            [
                assignment_id,
                annotator.pk,
                choice,
                choice,
                response_ms,
                client_response_ms,
                now_value,
                check_id,
            ],
        )
        answer_id, correct = cursor.fetchone()
    values = {
        "id": answer_id,
        "assignment_id": assignment_id,
        "quality_check_id": check_id,
        "annotator_id": annotator.pk,
        "choice": choice,
        "correct": bool(correct),
        "response_ms": response_ms,
        "client_response_ms": client_response_ms,
        "created_at": now,
    }
    return CheckAnswer.from_db(
        connection.alias, _ANSWERED_ATTNAMES, [values[name] for name in _ANSWERED_ATTNAMES]
    )


# --- the researcher's checks ---------------------------------------------------------------------


def check_problems(
    *,
    study: Study,
    kind: str,
    left_item: Item | None,
    right_item: Item | None,
    expected: str,
    instruction: str,
) -> list[str]:
    """What is wrong with a check for ``study``, in words (empty when it is fine): ``Check.problems``,
    the rules the admin's form applies too."""
    return Check(
        study=study,
        kind=kind,
        left_item=left_item,
        right_item=right_item,
        expected=expected,
        instruction=instruction,
    ).problems()


def check_item_key(first: str, second: str) -> frozenset[str]:
    """How a check names an item: its two tokens, in either order, in any case and spacing."""
    return frozenset(_normalise(name).casefold() for name in (first, second))


def study_items_by_tokens(*, study: Study) -> dict[frozenset[str], Item]:
    """The study's items by ``check_item_key`` of their tokens, with their areas (a study holds at most
    ``limits.MAX_ITEMS``)."""
    return {
        check_item_key(item.token_a.text, item.token_b.text): item
        for item in study.items.select_related("token_a", "token_b", "area")
    }


def check_item_missing(first: str, second: str, side: str) -> str:
    """The problem of a side whose two tokens name no item of the study."""
    return f"no item of the study pairs {_normalise(first)!r} with {_normalise(second)!r} ({side})"


# The gold checks a study ranked per area refuses, named in a refusal at most this many at a time.
_CHECKS_NAMED = 5


def _gold_checks_across_areas(study: Study) -> tuple[int, str]:
    """How many gold checks of ``study`` set items of two semantic areas against each other, and the
    first ``_CHECKS_NAMED`` of them in words: "5 (lion – tiger against salt – pepper)"."""
    across = (
        Check.objects.filter(study=study, kind=Check.Kind.GOLD)
        .exclude(left_item__area=F("right_item__area"))
        .select_related(
            "left_item__token_a", "left_item__token_b", "right_item__token_a", "right_item__token_b"
        )
        .order_by("pk")
    )
    count = across.count()
    named = [f"{check.pk} ({check.left_item} against {check.right_item})" for check in across[:_CHECKS_NAMED]]
    if count > _CHECKS_NAMED:
        named.append(f"{count - _CHECKS_NAMED:,} more")
    return count, listed(named)


def checks_across_areas_problem(*, study: Study) -> str | None:
    """Why ``study`` cannot be ranked per area while gold checks of it set items of two semantic areas
    against each other (``Check.problems`` refuses such a check in a study ranked per area), or None."""
    count, named = _gold_checks_across_areas(study)
    if not count:
        return None
    one = count == 1
    return (
        "a study ranked per area compares items of one semantic area only, and its "
        f"{'gold check' if one else 'gold checks'} {named} {'sets' if one else 'set'} items of two "
        "areas against each other, where annotators would tell "
        f"{'it' if one else 'them'} from a comparison: delete {'it' if one else 'them'}, or make "
        f"{'it an instructed-response check' if one else 'them instructed-response checks'}, first"
    )


def checks_across_areas_warning(*, study: Study) -> str | None:
    """What to do about gold checks across areas that a study ranked per area holds from before they were
    refused (served, annotators would tell them from comparisons), or None."""
    if study.ranking_scope != Study.RankingScope.PER_AREA:
        return None
    count, named = _gold_checks_across_areas(study)
    if not count:
        return None
    one = count == 1
    return (
        f"{'gold check' if one else 'gold checks'} {named} {'sets' if one else 'set'} items of two semantic "
        "areas against each other, which no comparison of a study ranked per area does, so annotators can "
        f"tell {'it' if one else 'them'} from a comparison: delete {'it' if one else 'them'} in the Checks "
        f"below, or make {'it an instructed-response check' if one else 'them instructed-response checks'}"
    )


def _require_room(study: Study, adding: int) -> None:
    present = Check.objects.filter(study=study).count()
    if present + adding > limits.MAX_CHECKS:
        raise ServiceError(
            f"the study has {counted(present, 'check')}; adding {adding:,} would pass the limit: "
            f"{limits.CHECKS_MESSAGE}",
            status=413,
        )


@transaction.atomic
def check_create(
    *, study: Study, kind: str, left_item: Item, right_item: Item, expected: str, instruction: str = ""
) -> Check:
    """Add a check to the study (any state: checks change no vote and no part of the design)."""
    problems = check_problems(
        study=study,
        kind=kind,
        left_item=left_item,
        right_item=right_item,
        expected=expected,
        instruction=instruction,
    )
    if problems:
        raise ServiceError("; ".join(problems))
    _require_room(study, 1)
    return Check.objects.create(
        study=study,
        kind=kind,
        left_item=left_item,
        right_item=right_item,
        expected=expected,
        instruction=instruction.strip(),
    )


CHECK_COLUMNS = ("kind", "left_a", "left_b", "right_a", "right_b", "expected")


@transaction.atomic
def checks_import(*, study: Study, data: bytes | str) -> int:
    """Add checks from CSV: ``kind, left_a, left_b, right_a, right_b, expected[, instruction]``, each
    side named by the two tokens of an item of the study (in either order); returns how many were added.

    All or nothing: a bad row refuses the whole file, with every problem listed by line.
    """
    study = Study.objects.select_for_update().get(pk=study.pk)
    text = _decode_upload(data, what="checks")
    rows, _separator = _csv_rows(text, CHECK_COLUMNS, ("instruction",), what="checks")
    _require_room(study, len(rows))
    items = study_items_by_tokens(study=study)
    errors: list[str] = []
    checks: list[Check] = []
    for line, row in rows:
        sides = {}
        for side in ("left", "right"):
            names = (row[f"{side}_a"], row[f"{side}_b"])
            sides[side] = items.get(check_item_key(*names))
            if sides[side] is None:
                errors.append(f"line {line}: {check_item_missing(*names, side)}")
        kind = row["kind"].strip().lower()
        expected = row["expected"].strip().lower()
        instruction = " ".join(row.get("instruction", "").split())
        problems = check_problems(
            study=study,
            kind=kind,
            left_item=sides["left"],
            right_item=sides["right"],
            expected=expected,
            instruction=instruction,
        )
        errors.extend(f"line {line}: {problem}" for problem in problems)
        if not problems and None not in sides.values():
            checks.append(
                Check(
                    study=study,
                    kind=kind,
                    left_item=sides["left"],
                    right_item=sides["right"],
                    expected=expected,
                    instruction=instruction,
                )
            )
    if errors:
        raise ServiceError(
            f"the checks file has {counted(len(errors), 'problem')}; nothing was imported",
            errors=reported_errors(errors),
        )
    Check.objects.bulk_create(checks)
    return len(checks)


# --- what the answers say ------------------------------------------------------------------------


def annotator_failed_checks(*, annotator: Annotator) -> int:
    """How many checks the annotator failed (answered otherwise than expected, a tie included)."""
    return CheckAnswer.objects.filter(annotator=annotator, correct=False).count()


def annotator_failed_checks_threshold_crossed(*, annotator: Annotator) -> bool:
    """Whether the annotator failed the study's ``quality_max_failed_checks`` checks or more (the flag
    of the results page, and the rule an exclusion may follow)."""
    threshold = annotator.study.quality_max_failed_checks
    return threshold is not None and annotator_failed_checks(annotator=annotator) >= threshold
