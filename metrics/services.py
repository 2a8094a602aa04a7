"""Services of the metrics app: model owners' submissions and their evaluations (the writes).

A submission is parsed, stored once and evaluated at the study's defaults (at once when small, else in a
task); its standings, the leaderboard's figures at every n0 it offers, follow in a task, so that the
public leaderboard only reads (``metrics.leaderboard``). Evaluations at other n0 and K are computed when
their owner asks and stored once. The numbers come from ``metrics.figures`` (the study's replicates
and chance level) and the pure ``metrics.evaluation``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import math
import re
import secrets
from datetime import datetime, timedelta

import numpy as np
from django.db import IntegrityError, transaction
from django.db.models import Count
from django.utils import timezone

from collection.models import Study
from collection.parts import has_hidden_part
from common.csvexport import unescape_cell
from common.errors import ServiceError, StudyStateError, reported_errors
from common.numbers import counted, finite_or_none
from common.tasks import enqueue_each, enqueue_on_commit
from metrics.correlation import MIN_WEIGHT_OFFSET, MIN_WEIGHT_OFFSET_MESSAGE
from metrics.figures import (
    DEFAULT_WEIGHT_OFFSET,
    owner_part,
    part_mask,
    part_top_k,
    ranked_part,
    ranking_of,
    submission_area_coefficients,
)
from metrics.judges import result_for
from metrics.leaderboard import LEADERBOARD_WEIGHT_OFFSETS, has_plain_chance, standing_values
from metrics.models import Evaluation, Kind, Part, Seal, Standing, Submission

logger = logging.getLogger(__name__)

MAX_SUBMISSION_BYTES = 5 * 1024 * 1024
SYNC_EVALUATION_ITEMS = 3000  # larger submissions are evaluated by a Celery task
# Beyond this n0 every rank weighs the same (ρ_w and τ_w are ρ and τ), and (n + n0)² overflows near 1e154.
MAX_WEIGHT_OFFSET = 1e6
MAX_WEIGHT_OFFSET_MESSAGE = (
    f"n0 must be at most {MAX_WEIGHT_OFFSET:,.0f}: beyond it every rank weighs the same, as in ρ and τ"
)
SWEEP_RECOVERY = "the submissions sweep"
EVALUATION_FAILED = (
    "the evaluation failed on our side (reference {reference}): it does not count against your models for this "
    "study, and its name is free; submit it again, and if it fails again, send us the reference"
)


class EvaluationFailed(ServiceError):
    """A server error while evaluating a submission: its owner reads the plain message, the log the cause."""

    status = 500


# --- submissions ---------------------------------------------------------------------------------


def scores_file_read(upload) -> bytes:
    """The bytes of an uploaded scores file; a 413 beyond ``MAX_SUBMISSION_BYTES``, before reading it."""
    if upload.size > MAX_SUBMISSION_BYTES:
        raise _file_too_large(upload.size)
    return upload.read()


def _file_too_large(size: int) -> ServiceError:
    return ServiceError(
        f"the file is {size:,} bytes; the limit is {MAX_SUBMISSION_BYTES:,} bytes (5 MiB)", status=413
    )


def _normalise(text: str) -> str:
    return " ".join(str(text).split()).casefold()


def _parse_rows(*, data, source_format: str) -> list[tuple[str, dict]]:
    """(where, row) pairs from a JSON list of objects or a CSV file with a header."""
    if source_format == "json":
        if not isinstance(data, list):
            raise ServiceError('"scores" must be a list of objects like {"item": 12, "score": 0.87}')
        return [(f"scores[{i}]", row) for i, row in enumerate(data)]
    if isinstance(data, bytes):
        if len(data) > MAX_SUBMISSION_BYTES:
            raise _file_too_large(len(data))
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ServiceError("the file is not UTF-8 text; save it as CSV UTF-8 and retry") from None
    reader = csv.DictReader(io.StringIO(data))
    header = [name.strip().lower() for name in reader.fieldnames or []]
    if "score" not in header or not ({"item"} <= set(header) or {"token_a", "token_b"} <= set(header)):
        raise ServiceError(
            "the CSV needs a header with the columns item,score or token_a,token_b,score; got "
            + (", ".join(header) if header else "an empty file")
        )
    reader.fieldnames = header
    # The items file we hand out escapes tokens that a spreadsheet would take for formulas
    # (common.csvexport); a file scored in a spreadsheet comes back with them, so undo the escape.
    return [
        (
            f"line {line}",
            {name: unescape_cell(value) if isinstance(value, str) else value for name, value in row.items()},
        )
        for line, row in enumerate(reader, start=2)
    ]


class OutOfRangeNumber(float):
    """A JSON number that a 64-bit float cannot hold, as the float it rounds to (±inf, or 0 for a nonzero
    number), with its ``text`` as sent: ``submission_parse`` refuses it by that text."""

    def __new__(cls, text: str):
        number = super().__new__(cls, text)
        number.text = text
        return number


def json_number(text: str) -> float:
    """A JSON number of a submission as a float (the JSON parser's ``parse_float``); one beyond the float
    range, or nonzero but read as 0, as an ``OutOfRangeNumber`` that keeps its text."""
    value = float(text)
    if math.isinf(value) or (value == 0.0 and _nonzero(text)):
        return OutOfRangeNumber(text)
    return value


def _nonzero(text: str) -> bool:
    """Whether the number written as ``text`` has a nonzero digit before its exponent."""
    mantissa = re.split(r"[eE]", text, maxsplit=1)[0]
    return any(character.isdecimal() and int(character) != 0 for character in mantissa)


SCORE_BEYOND_RANGE = "is beyond the range of a 64-bit float (about ±1.8e308); rescale your scores"
SCORE_UNDERFLOW = (
    "is too close to 0 for a 64-bit float, which would read it as 0 and tie it with every other such score "
    "(the smallest is about 4.9e-324); rescale your scores"
)


def _score(raw) -> tuple[float, str]:
    """A submitted score (a JSON number or string, or a CSV cell) as a float, and "" when it is one; else
    NaN and why it is refused: not a number, not finite, beyond the float range, or a nonzero number that
    would read as 0 (which would tie it with every other such score). Subnormal numbers are accepted."""
    if isinstance(raw, OutOfRangeNumber):
        text = raw.text
    elif isinstance(raw, float):
        return (raw, "") if math.isfinite(raw) else (math.nan, "is not a finite number")
    elif isinstance(raw, int) and not isinstance(raw, bool):
        text = str(raw)  # an integer of any size: float() of a huge one raises OverflowError
    elif isinstance(raw, str):
        text = raw
    else:
        return math.nan, "is not a number"
    try:
        value = float(text)
    except ValueError:
        return math.nan, "is not a number"
    if math.isnan(value) or (math.isinf(value) and text.strip().lstrip("+-").lower() in ("inf", "infinity")):
        return math.nan, "is not a finite number"
    if math.isinf(value):
        return math.nan, SCORE_BEYOND_RANGE
    if value == 0.0 and _nonzero(text):
        return math.nan, SCORE_UNDERFLOW
    return value, ""


SHOWN_CHARACTERS = 40  # a score is echoed in full up to this length, else its start and its length


def _shown(raw) -> str:
    """A submitted score as an error message echoes it: strings quoted, long ones cut."""
    text = raw.text if isinstance(raw, OutOfRangeNumber) else raw if isinstance(raw, str) else repr(raw)
    quoted = isinstance(raw, str)
    if len(text) <= SHOWN_CHARACTERS:
        return repr(text) if quoted else text
    start = text[: SHOWN_CHARACTERS // 2] + "…"
    unit = "characters" if quoted or not text.lstrip("+-").isdigit() else "digits"
    return f"{repr(start) if quoted else start} ({len(text):,} {unit})"


def submission_parse(*, study: Study, data, source_format: str) -> np.ndarray:
    """Scores by item index (NaN where not given) from submitted rows, or a ServiceError listing the
    first offending rows: unknown items, duplicates, missing, non-numeric, NaN or infinite scores, and
    scores a 64-bit float cannot hold (``_score``), each named by its row and its item."""
    rows = _parse_rows(data=data, source_format=source_format)
    if not rows:
        raise ServiceError("the submission holds no scores")
    items = list(
        study.items.select_related("token_a", "token_b").values_list(
            "pk", "index", "token_a__text", "token_b__text"
        )
    )
    index_of_id = {pk: index for pk, index, _, _ in items}
    index_of_pair = {}
    pair_of_index = {}
    for _, index, a, b in items:
        pair_of_index[index] = f"the pair {a!r} – {b!r}"  # the study's texts: bounded, unlike a row's
        index_of_pair[(_normalise(a), _normalise(b))] = index
        index_of_pair[(_normalise(b), _normalise(a))] = index
    scores = np.full(len(items), np.nan)
    first_seen: dict[int, str] = {}
    errors: list[str] = []
    for where, row in rows:
        if not isinstance(row, dict):
            errors.append(f"{where}: expected an object with item (or token_a and token_b) and score")
            continue
        index = None
        if row.get("item") not in (None, ""):
            try:
                item_id = int(str(row["item"]).strip())
            except ValueError:
                errors.append(f"{where}: item must be an item id (a whole number), got {row['item']!r}")
                continue
            index = index_of_id.get(item_id)
            if index is None:
                errors.append(f"{where}: item {item_id} is not an item of study {study.slug!r}")
                continue
            named = f"item {item_id}"
        elif row.get("token_a") not in (None, "") and row.get("token_b") not in (None, ""):
            index = index_of_pair.get((_normalise(row["token_a"]), _normalise(row["token_b"])))
            if index is None:
                errors.append(
                    f"{where}: the pair {row['token_a']!r} – {row['token_b']!r} is not an item of study "
                    f"{study.slug!r}"
                )
                continue
            named = pair_of_index[index]
        else:
            errors.append(f"{where}: give the item id, or token_a and token_b")
            continue
        value, problem = _score(row.get("score"))
        if problem:
            errors.append(f"{where}, {named}: the score {_shown(row.get('score'))} {problem}")
            continue
        if index in first_seen:
            errors.append(f"{where}: this item was already scored at {first_seen[index]}")
            continue
        first_seen[index] = where
        scores[index] = value
    if errors:
        raise ServiceError(
            f"the submission has {counted(len(errors), 'problem')}; nothing was stored",
            errors=reported_errors(errors),
        )
    return scores


_SHA256 = re.compile(r"[0-9a-f]{64}")


def seal_create(*, study: Study, owner, model_name: str, sha256: str, kind: str = Kind.MODEL) -> Seal:
    """Commit to a scores (or a judge's decisions) file before showing it: its SHA-256 for ``model_name``,
    at any state of the study (before it finishes, no final ranking has been published). The submission
    of that name must then be the file itself (``submission_create``, ``judge_create``). A seal takes one
    of the owner's variants of its ``kind``; models and judges share the owner's names."""
    if kind not in Kind.values:
        raise ServiceError(f"kind must be model or judge, got {kind!r}")
    model_name = _model_name(model_name)
    digest = str(sha256 or "").strip().lower()
    if not _SHA256.fullmatch(digest):
        raise ServiceError(
            "sha256 must be the SHA-256 of your scores file, 64 hexadecimal digits (sha256sum scores.csv prints it)"
        )
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).first()
        sealed = Seal.objects.filter(study=study, owner=owner, model_name=model_name).first()
        if sealed is not None:
            raise StudyStateError(
                f"you already sealed a {sealed.kind} named {model_name!r} for this study; seals are kept"
            )
        submitted = (
            Submission.objects.filter(study=study, owner=owner, model_name=model_name)
            .exclude(status=Submission.Status.FAILED)
            .first()
        )
        if submitted is not None:
            raise StudyStateError(
                f"you already submitted a {submitted.kind} named {model_name!r}: a seal comes before it"
            )
        _check_variants(study, owner, kind=kind)
        return Seal.objects.create(
            study=study,
            owner=owner,
            kind=kind,
            model_name=model_name,
            sha256=digest,
            study_status=study.status,
        )


def _model_name(model_name, *, field: str = "model_name") -> str:
    model_name = " ".join(str(model_name or "").split())
    if not model_name or len(model_name) > 100:
        raise ServiceError(f"{field} must be 1 to 100 characters long")
    return model_name


def _check_variants(study: Study, owner, *, kind: str = Kind.MODEL, revealing: Seal | None = None) -> None:
    """Refuse past the study's cap of variants per owner, counted per kind (models, judges): submissions
    and seals not yet revealed (the one being revealed aside) count, whatever became of them, but for a
    submission that failed on our side. Call with the study's row locked."""
    submitted = (
        Submission.objects.filter(study=study, owner=owner, kind=kind)
        .exclude(status=Submission.Status.FAILED)
        .count()
    )
    sealed = Seal.objects.filter(study=study, owner=owner, kind=kind, submission__isnull=True)
    if revealing is not None:
        sealed = sealed.exclude(pk=revealing.pk)
    used = submitted + sealed.count()
    if used >= study.max_variants_per_owner:
        raise StudyStateError(
            f"you have submitted {used} {kind}{'s' if used != 1 else ''} for this study, its limit per owner "
            f"({study.max_variants_per_owner}); every submission counts, sealed, pending or evaluated (not one that "
            "failed on our side), so that the leaderboard can say how many variants each owner tried"
        )


def submission_create(
    *, study: Study, owner, model_name: str, data, source_format: str, description: str = ""
) -> Submission:
    """Store a model's scores for a finished study; evaluate at once when small, else in a task.

    Refused: a study that has not finished (409), a model name the owner already used for this
    study (409), an owner who has submitted the study's ``max_variants_per_owner`` models already
    (409: every submission counts, but for one that failed on our side), coverage below the study's
    minimum (400), and any bad row (400, listed). An evaluation that fails here raises
    ``EvaluationFailed`` (500) with the plain message the submission keeps.
    """
    if source_format not in ("json", "csv"):
        raise ServiceError(f"the format must be json or csv, got {source_format!r}")
    model_name = _model_name(model_name)
    if study.status != Study.Status.FINISHED:
        raise StudyStateError(
            f"study {study.slug!r} is {study.status}: models are evaluated against its final ranking, once it has finished"
        )
    seal = _seal_of(study, owner, model_name, data)
    scores = submission_parse(study=study, data=data, source_format=source_format)
    covered = int(np.isfinite(scores).sum())
    coverage = covered / scores.size
    if has_hidden_part(study) and covered < scores.size:
        # Every item, so that neither the coverage of a part nor a refusal tells which items are hidden.
        raise ServiceError(
            f"the submission scores {covered} of {scores.size} items; study {study.slug!r} keeps a hidden test "
            f"part on which the leaderboard ranks models, so score every one of its {scores.size} items"
        )
    if covered < 2 or coverage < study.minimum_coverage:
        raise ServiceError(
            f"the submission scores {covered} of {scores.size} items ({coverage:.1%}); this study needs at least "
            f"{study.minimum_coverage:.0%} and two items"
        )
    submission = _submission_store(
        seal=seal,
        study=study,
        owner=owner,
        kind=Kind.MODEL,
        model_name=model_name,
        description=description or "",
        scores=[finite_or_none(value) for value in scores],
        covered=covered,
        coverage=coverage,
        source_format=source_format,
    )
    return _evaluated_now_or_later(submission, size=covered, at_once=SYNC_EVALUATION_ITEMS)


def _submission_store(*, study: Study, owner, kind: str, seal: Seal | None, **fields) -> Submission:
    """Create a submission (a model or a judge) with the study's row locked, so that two submissions of
    one owner at once cannot both pass the cap of its kind; a name taken is a 409."""
    try:
        with transaction.atomic():
            Study.objects.select_for_update().filter(pk=study.pk).first()
            _check_variants(study, owner, kind=kind, revealing=seal)
            if seal is not None and seal.kind != kind:
                # A seal made without its kind (a model's, by default) is revealed by a judge of its name.
                Seal.objects.filter(pk=seal.pk).update(kind=kind)
            return Submission.objects.create(seal=seal, study=study, owner=owner, kind=kind, **fields)
    except IntegrityError:
        taken = Submission.objects.filter(study=study, owner=owner, model_name=fields["model_name"]).first()
        taken_kind = taken.kind if taken is not None else kind
        shared = "" if taken_kind == kind else " (models and judges share your names)"
        raise StudyStateError(
            f"you already submitted a {taken_kind} named {fields['model_name']!r} for this study{shared}; "
            "submissions are never replaced, so choose another name"
        ) from None


def _evaluated_now_or_later(submission: Submission, *, size: int, at_once: int) -> Submission:
    """Evaluate at once when ``size`` is at most ``at_once``, else in a task after the commit."""
    if size <= at_once:
        submission_evaluate(submission_id=submission.pk)
        submission.refresh_from_db()
    else:
        enqueue_on_commit("metrics.submission_evaluate", submission.pk, recovered_by=SWEEP_RECOVERY)
    return submission


def _seal_of(study: Study, owner, model_name: str, data) -> Seal | None:
    """The owner's seal of this name, checked against the file being revealed; None if none."""
    seal = Seal.objects.filter(study=study, owner=owner, model_name=model_name).first()
    if seal is not None:
        _check_seal(seal, data)
    return seal


def _check_seal(seal: Seal, data) -> None:
    """A sealed model (or judge) is revealed by uploading the sealed file itself: its SHA-256 must match."""
    if not isinstance(data, bytes | bytearray):
        raise ServiceError(
            f"you sealed {seal.model_name!r} on {seal.sealed_at:%Y-%m-%d %H:%M} UTC: upload the sealed file itself "
            "(multipart field 'file'), whose SHA-256 the seal holds, not JSON rows"
        )
    digest = hashlib.sha256(bytes(data)).hexdigest()
    if digest != seal.sha256:
        raise ServiceError(
            f"this file's SHA-256 is {digest}, and your seal of {seal.model_name!r} made on "
            f"{seal.sealed_at:%Y-%m-%d %H:%M} UTC holds {seal.sha256}: upload the very file you sealed; nothing "
            "was stored"
        )


# --- judges --------------------------------------------------------------------------------------

# 200,000 pairs as JSONL lines of up to 80 bytes ({"pair": 200000, "decision": "right"} is 39; CSV 13).
MAX_JUDGE_BYTES = 16 * 1024 * 1024
SYNC_EVALUATION_PAIRS = 20000  # about the pairs of a study of SYNC_EVALUATION_ITEMS items; more go to a task
DECISIONS = {"left": 1.0, "right": 0.0, "tie": 0.5, "1": 1.0, "0": 0.0, "0.5": 0.5}
DECISION_HINT = "write left, right or tie (or 1, 0, 0.5)"
NO_TIES = "this study does not allow ties: decide left or right"


def judge_file_read(upload) -> bytes:
    """The bytes of an uploaded decisions file; a 413 beyond ``MAX_JUDGE_BYTES``, before reading it."""
    if upload.size > MAX_JUDGE_BYTES:
        raise _judge_file_too_large(upload.size)
    return upload.read()


def _judge_file_too_large(size: int) -> ServiceError:
    return ServiceError(
        f"the file is {size:,} bytes; the limit is {MAX_JUDGE_BYTES:,} bytes (16 MiB): write the decisions as "
        "CSV (pair,decision), which takes a third of the space of JSONL",
        status=413,
    )


def _judge_rows(*, data, source_format: str) -> tuple[list[tuple[str, object]], str]:
    """(where, row) pairs and the format read: JSON rows as sent, or a file told apart by its content,
    JSONL when its first character is "{", else CSV with the header pair,decision."""
    if source_format == "json":
        if not isinstance(data, list):
            raise ServiceError('"decisions" must be a list of objects like {"pair": 1, "decision": "left"}')
        return [(f"decisions[{i}]", row) for i, row in enumerate(data)], "json"
    if len(data) > MAX_JUDGE_BYTES:
        raise _judge_file_too_large(len(data))
    try:
        text = bytes(data).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ServiceError("the file is not UTF-8 text; save it as CSV UTF-8 (or JSONL) and retry") from None
    if text.lstrip().startswith("{"):
        rows = []
        for line, content in enumerate(text.splitlines(), start=1):
            if not content.strip():
                continue
            try:
                rows.append((f"line {line}", json.loads(content, parse_constant=_no_constant)))
            except ValueError:
                rows.append((f"line {line}", None))
        return rows, "jsonl"
    reader = csv.DictReader(io.StringIO(text))
    header = [name.strip().lower() for name in reader.fieldnames or []]
    if not {"pair", "decision"} <= set(header):
        raise ServiceError(
            "the CSV needs a header with the columns pair,decision (or send JSONL: one "
            '{"pair": 1, "decision": "left"} per line); got '
            + (", ".join(header) if header else "an empty file")
        )
    reader.fieldnames = header
    return [(f"line {line}", row) for line, row in enumerate(reader, start=2)], "csv"


def _no_constant(name: str):
    raise ValueError(f"{name} is not a decision")


def _pair_number(raw, pair_count: int) -> tuple[int | None, str]:
    """A pair number 1 … ``pair_count`` from a JSON number or a text cell, and "" when it is one; else
    None and why not."""
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        return (
            None,
            f"pair must be a pair number (a whole number from 1 to {pair_count:,}), got {_shown(raw)}",
        )
    text = str(raw).strip()
    if not text.isdecimal() or len(text) > 12:
        return (
            None,
            f"pair must be a pair number (a whole number from 1 to {pair_count:,}), got {_shown(raw)}",
        )
    number = int(text)
    if not 1 <= number <= pair_count:
        return None, f"pair {number} is not one of the study's pairs, numbered 1 to {pair_count:,}"
    return number, ""


def _decision(raw) -> float | None:
    """left/right/tie (any case) or 1/0/0.5 as 1.0, 0.0 or 0.5; None for anything else."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        return float(raw) if raw in (0, 0.5, 1) else None
    if isinstance(raw, str):
        text = raw.strip().lower()
        value = DECISIONS.get(text)
        if value is None:
            try:
                number = float(text)
            except ValueError:
                return None
            return number if number in (0.0, 0.5, 1.0) else None
        return value
    return None


def judge_parse(*, pair_count: int, ties_allowed: bool, data, source_format: str) -> tuple[np.ndarray, str]:
    """A judge's decisions by pair index (1 left, 0 right, 0.5 tie, NaN undecided) and the format read,
    from JSON rows or a CSV/JSONL file; or a ServiceError listing the first offending rows: not an
    object, unknown pair numbers, duplicates, decisions that are not one, and ties where the study has
    none, each named by its row."""
    rows, read_format = _judge_rows(data=data, source_format=source_format)
    if not rows:
        raise ServiceError("the judge holds no decisions")
    decisions = np.full(pair_count, np.nan)
    first_seen: dict[int, str] = {}
    errors: list[str] = []
    for where, row in rows:
        if not isinstance(row, dict):
            errors.append(
                f'{where}: expected an object with pair and decision, like {{"pair": 1, "decision": "left"}}'
            )
            continue
        number, problem = _pair_number(row.get("pair"), pair_count)
        if problem:
            errors.append(f"{where}: {problem}")
            continue
        value = _decision(row.get("decision"))
        if value is None:
            errors.append(
                f"{where}, pair {number}: the decision {_shown(row.get('decision'))} is not one: {DECISION_HINT}"
            )
            continue
        if value == 0.5 and not ties_allowed:
            errors.append(f"{where}, pair {number}: {NO_TIES}")
            continue
        if number in first_seen:
            errors.append(f"{where}: pair {number} was already decided at {first_seen[number]}")
            continue
        first_seen[number] = where
        decisions[number - 1] = value
    if errors:
        raise ServiceError(
            f"the judge has {counted(len(errors), 'problem')}; nothing was stored",
            errors=reported_errors(errors),
        )
    return decisions, read_format


def judge_create(
    *, study: Study, owner, judge_name: str, data, source_format: str, description: str = ""
) -> Submission:
    """Store a judge's decisions on a finished study's pairs (``metrics.judges.judge_pairs``); evaluate at
    once when small, else in a task.

    ``source_format`` is "json" (rows) or "file" (bytes of a CSV or JSONL file). Refused as models are
    (``submission_create``): a study that has not finished (409), a name the owner already used for a
    model or a judge of this study (409), the cap of judges per owner (409), a seal of this name that
    the file does not match, coverage below the study's minimum or, in a study with a hidden test part,
    any pair undecided (400), and any bad row (400, listed).
    """
    from metrics.judges import judge_pairs  # selectors of the pairs; heavy figures stay out of web imports

    if source_format not in ("json", "file"):
        raise ServiceError(f"the format must be json or file, got {source_format!r}")
    judge_name = _model_name(judge_name, field="judge_name")
    if study.status != Study.Status.FINISHED:
        raise StudyStateError(
            f"study {study.slug!r} is {study.status}: judges are evaluated against its crowd's votes, once it has "
            "finished"
        )
    seal = _seal_of(study, owner, judge_name, data)
    pair_count = judge_pairs(study=study).count
    decisions, read_format = judge_parse(
        pair_count=pair_count, ties_allowed=study.allow_ties, data=data, source_format=source_format
    )
    decided = int(np.isfinite(decisions).sum())
    coverage = decided / pair_count
    if has_hidden_part(study) and decided < pair_count:
        # Every pair, so that neither the coverage of a part nor a refusal tells which pairs are hidden.
        raise ServiceError(
            f"the judge decides {decided:,} of {pair_count:,} pairs; study {study.slug!r} keeps a hidden test part "
            f"on which the leaderboard ranks judges, so decide every one of its {pair_count:,} pairs"
        )
    if decided < 1 or coverage < study.minimum_coverage:
        raise ServiceError(
            f"the judge decides {decided:,} of {pair_count:,} pairs ({coverage:.1%}); this study needs at least "
            f"{study.minimum_coverage:.0%} of its pairs decided"
        )
    submission = _submission_store(
        seal=seal,
        study=study,
        owner=owner,
        kind=Kind.JUDGE,
        model_name=judge_name,
        description=description or "",
        decisions=[finite_or_none(value) for value in decisions],
        covered=decided,
        coverage=coverage,
        source_format=read_format,
    )
    return _evaluated_now_or_later(submission, size=decided, at_once=SYNC_EVALUATION_PAIRS)


def _progress(submission_id: int, percent: int) -> None:
    Submission.objects.filter(pk=submission_id).update(progress=percent)


def submission_evaluate(*, submission_id: int) -> Evaluation | None:
    """The evaluation at the study's defaults (n0 = 2, its K), storing status and progress, with the
    standing at the default n0; the standings at the leaderboard's other n0 follow in a task.

    A server error on the way fails the submission (``_submission_failed``): the log gets the cause and a
    reference, the owner a plain message with that reference, raised as ``EvaluationFailed``."""
    submission = Submission.objects.select_related("study").filter(pk=submission_id).first()
    if submission is None:
        logger.warning("submission %s does not exist", submission_id)
        return None
    Submission.objects.filter(pk=submission_id).update(status=Submission.Status.RUNNING, progress=5, error="")
    study = submission.study
    try:
        evaluation = evaluation_for(
            submission=submission,
            weight_offset=DEFAULT_WEIGHT_OFFSET,
            top_k=part_top_k(study, owner_part(study)),
            part=owner_part(study),
            progress=lambda percent: _progress(submission_id, percent),
        )
        ranked = ranked_part(study)
        if ranked != evaluation.part:  # a hidden test part: the leaderboard's figures are on it alone
            standing_evaluation = evaluation_for(
                submission=submission,
                weight_offset=DEFAULT_WEIGHT_OFFSET,
                top_k=part_top_k(study, ranked),
                part=ranked,
            )
        else:
            standing_evaluation = evaluation
        _standing_store(
            submission, DEFAULT_WEIGHT_OFFSET, ranking_of(submission, standing_evaluation.result), part=ranked
        )
    except Exception as exc:
        reference = secrets.token_hex(6)
        logger.exception("the evaluation of submission %s failed (reference %s)", submission_id, reference)
        message = EVALUATION_FAILED.format(reference=reference)
        _submission_failed(submission_id, message)
        raise EvaluationFailed(message) from exc
    Submission.objects.filter(pk=submission_id).update(status=Submission.Status.DONE, progress=100)
    enqueue_on_commit("metrics.submission_standings", submission_id, recovered_by=SWEEP_RECOVERY)
    return evaluation


def _submission_failed(submission_id: int, message: str) -> None:
    """Record a failure on our side: status failed with ``message``, no figure of it kept, and its seal
    freed for the retry (a failed submission holds neither its name nor a variant: ``_check_variants``)."""
    with transaction.atomic():
        Evaluation.objects.filter(submission_id=submission_id).delete()
        Standing.objects.filter(submission_id=submission_id).delete()
        Submission.objects.filter(pk=submission_id).update(
            status=Submission.Status.FAILED, error=message, seal=None
        )


def submission_standings(*, submission_id: int) -> int:
    """Store the submission's standings at every n0 the leaderboard offers (those not stored yet, so a
    second run or a run after a crash adds nothing twice); returns how many were added."""
    submission = Submission.objects.select_related("study").filter(pk=submission_id).first()
    if submission is None or submission.status != Submission.Status.DONE:
        logger.warning("submission %s does not exist or is not evaluated yet; no standings", submission_id)
        return 0
    part = ranked_part(submission.study)
    top_k = part_top_k(submission.study, part)
    stored = {
        weight_offset
        for weight_offset, coefficients in submission.standings.values_list("weight_offset", "coefficients")
        if has_plain_chance(coefficients)
    }
    added = 0
    for weight_offset in LEADERBOARD_WEIGHT_OFFSETS:
        if weight_offset in stored:
            continue
        evaluation = Evaluation.objects.filter(
            submission=submission, part=part, weight_offset=weight_offset, top_k=top_k
        ).first()
        result = (
            evaluation.result
            if evaluation is not None and has_plain_chance(ranking_of(submission, evaluation.result))
            else result_for(submission=submission, weight_offset=weight_offset, top_k=top_k, part=part)
        )
        added += _standing_store(submission, weight_offset, ranking_of(submission, result), part=part)
    # Stored now, so that the leaderboard only reads them; a judge's areas are in its evaluation's result.
    if submission.kind == Kind.MODEL:
        for weight_offset in LEADERBOARD_WEIGHT_OFFSETS:
            submission_area_coefficients(submission=submission, weight_offset=weight_offset)
    return added


def _standing_store(submission: Submission, weight_offset: float, result: dict, *, part: str) -> int:
    """Store the standing of ``result`` (over ``part``: a model's result, or a judge's ranking) unless one
    is stored already; 1 if this call stored it. A standing stored before ρ and τ had a chance level is replaced (the same numbers, and
    those)."""
    standing, created = Standing.objects.get_or_create(
        submission=submission, weight_offset=weight_offset, defaults={**standing_values(result), "part": part}
    )
    if not created and not has_plain_chance(standing.coefficients) and has_plain_chance(result):
        Standing.objects.filter(pk=standing.pk).update(**standing_values(result))
        return 1
    return int(created)


def submissions_sweep(*, now: datetime | None = None, stale_seconds: int = 60) -> int:
    """Start again what a lost task left undone (e.g. the broker was down) after ``stale_seconds``: the
    evaluations still pending and the standings still missing; returns how many tasks (Celery beat)."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=stale_seconds)
    pending = list(
        Submission.objects.filter(status=Submission.Status.PENDING, created_at__lte=stale).values_list(
            "pk", flat=True
        )
    )
    unranked = list(
        Submission.objects.filter(status=Submission.Status.DONE, created_at__lte=stale)
        .annotate(standing_count=Count("standings"))
        .filter(standing_count__lt=len(LEADERBOARD_WEIGHT_OFFSETS))
        .values_list("pk", flat=True)
    )
    # Standings stored before ρ and τ had a chance level are computed again (their other numbers are
    # the same: the replicates and the permutations are seeded by the study).
    outdated = set(
        Standing.objects.filter(submission__status=Submission.Status.DONE, submission__created_at__lte=stale)
        .exclude(coefficients__rho__has_key="p_value", coefficients__tau__has_key="p_value")
        .values_list("submission_id", flat=True)
    )
    unranked += sorted(outdated - set(unranked))
    recovery = "the next submissions sweep"
    return enqueue_each("metrics.submission_evaluate", pending, recovered_by=recovery) + enqueue_each(
        "metrics.submission_standings", unranked, recovered_by=recovery
    )


# --- evaluations ---------------------------------------------------------------------------------


def evaluation_for(
    *, submission: Submission, weight_offset: float, top_k: int, part: str = Part.ALL, progress=None
) -> Evaluation:
    """The submission's evaluation for this n0 and K over ``part`` of the items: stored once, then read
    back."""
    if not math.isfinite(weight_offset) or weight_offset < MIN_WEIGHT_OFFSET:
        raise ServiceError(f"{MIN_WEIGHT_OFFSET_MESSAGE}, got {weight_offset:g}")
    if weight_offset > MAX_WEIGHT_OFFSET:
        raise ServiceError(f"{MAX_WEIGHT_OFFSET_MESSAGE}, got {weight_offset:g}")
    item_count = int(part_mask(submission.study, part).sum())
    if not 1 <= top_k <= item_count:
        where = "the study's" if part == Part.ALL else f"the {Part(part).label}'s"
        raise ServiceError(f"K must lie between 1 and {where} {item_count} items, got {top_k}")
    existing = Evaluation.objects.filter(
        submission=submission, part=part, weight_offset=weight_offset, top_k=top_k
    ).first()
    if existing is not None and has_plain_chance(ranking_of(submission, existing.result)):
        return existing
    result = result_for(
        submission=submission, weight_offset=weight_offset, top_k=top_k, part=part, progress=progress
    )
    if progress:
        progress(95)
    if existing is not None:
        # Stored before ρ and τ had a chance level: the same numbers again (seeded), with those.
        Evaluation.objects.filter(pk=existing.pk).update(result=result)
        existing.result = result
        return existing
    evaluation, _ = Evaluation.objects.get_or_create(
        submission=submission,
        part=part,
        weight_offset=weight_offset,
        top_k=top_k,
        defaults={"result": result},
    )
    return evaluation


def owner_evaluation(*, submission: Submission, weight_offset: float | None = None, top_k: int | None = None):
    """The evaluation its owner reads: over the development part of a study that keeps a hidden test
    part (else over all items), at ``weight_offset`` and ``top_k`` (the study's defaults when None)."""
    study = submission.study
    part = owner_part(study)
    return evaluation_for(
        submission=submission,
        weight_offset=DEFAULT_WEIGHT_OFFSET if weight_offset is None else weight_offset,
        top_k=part_top_k(study, part) if top_k is None else top_k,
        part=part,
    )


def test_part_summary(*, submission: Submission) -> dict | None:
    """What the leaderboard says of the submission on the hidden test part, at the default n0 and K:
    the four coefficients (value, interval, chance level, p-value) and the retrieval measures, aggregates
    over the part; None for a study without one, or before the evaluation is done."""
    study = submission.study
    if not has_hidden_part(study) or submission.status != Submission.Status.DONE:
        return None
    evaluation = evaluation_for(
        submission=submission,
        weight_offset=DEFAULT_WEIGHT_OFFSET,
        top_k=part_top_k(study, Part.TEST),
        part=Part.TEST,
    )
    result = public_result(evaluation.result)
    if submission.kind == Kind.JUDGE:
        # Its overall figures only: a disagreement by area, band or closeness over a few test pairs would
        # tell their crowd's decisions apart, as an area's coefficient over a few test items would.
        result = {key: value for key, value in result.items() if key not in ("disagreement", "areas")}
    return result


def public_result(result: dict) -> dict:
    """An evaluation result without its bootstrap replicate values (kept for the leaderboard); a judge's
    without those of its ranking."""
    public = {key: value for key, value in result.items() if key != "replicates"}
    if isinstance(public.get("ranking"), dict):
        public["ranking"] = public_result(public["ranking"])
    return public
