"""Services of the collection app: every write to studies, pools, ballots, assignments and votes.

Views, API views, admin actions, commands and tasks call these; they validate, write inside one
transaction, and raise ``ServiceError`` (with the HTTP status it maps to) when the request cannot be
honoured. Nothing is left half-written.
"""

from __future__ import annotations

import csv
import io
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np
from django.core.cache import cache
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Q
from django.utils import timezone

from collection import limits
from collection.models import (
    Annotator,
    Assignment,
    Ballot,
    BallotItem,
    Comparison,
    Item,
    SemanticArea,
    Study,
    StudyChange,
    StudyJob,
    Token,
    Vote,
)
from collection.pairs import area_pairs, pair_count
from collection.schedule import ballot_schedule
from common.errors import ServiceError, StudyStateError
from common.tasks import enqueue, enqueue_on_commit
from scoring.plan import BallotPlan, ballot_plan, plan_for_budget

logger = logging.getLogger(__name__)

MAX_UPLOAD_BYTES = 2 * 1024 * 1024
# What closes a ballot whose closing task could not be sent (Celery beat, every SWEEP_SECONDS).
BALLOT_CLOSE_RECOVERY = "the ballots sweep"
MAX_REPORTED_ERRORS = 20


# --- plan ----------------------------------------------------------------------------------------


def study_plan(*, study: Study, item_count: int | None = None) -> BallotPlan:
    """The study's ballot plan for its current number of items (Eq. 2-4, 10 and §2.7 warnings)."""
    count = study.items.count() if item_count is None else item_count
    common = dict(
        item_count=count,
        ballot_count=study.ballot_count,
        keep_fraction=study.keep_fraction,
        seconds_per_comparison=study.seconds_per_comparison,
    )
    try:
        if study.appearances:
            plan = ballot_plan(appearances=study.appearances, **common)
        elif study.comparison_budget:
            plan = plan_for_budget(comparison_budget=study.comparison_budget, **common)
        else:
            raise ServiceError("the plan needs either appearances M or a comparison budget")
    except ValueError as exc:
        raise ServiceError(str(exc)) from None
    if plan.total_comparisons > limits.MAX_TOTAL_COMPARISONS:
        raise ServiceError(
            f"this plan needs {plan.total_comparisons:,} comparisons (N_comp, Eq. 3); a study runs at most "
            f"{limits.MAX_TOTAL_COMPARISONS:,} (833 person-hours at 6 s each; every comparison is a row made "
            "when its ballot opens): lower M, n_b or α, or use fewer items"
        )
    return plan


# --- pools ---------------------------------------------------------------------------------------


@dataclass
class ImportReport:
    areas_created: int = 0
    tokens_created: int = 0
    items_created: int = 0
    warnings: list[str] = field(default_factory=list)


_TRUE = {"1", "true", "yes", "y", "rare", "x"}
_FALSE = {"", "0", "false", "no", "n"}


def _decode_upload(data: bytes | str, *, what: str) -> str:
    if isinstance(data, str):
        text = data
    else:
        if len(data) > MAX_UPLOAD_BYTES:
            raise ServiceError(
                f"the {what} file is {len(data):,} bytes; the limit is {MAX_UPLOAD_BYTES:,} bytes (2 MiB)",
                status=413,
            )
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise ServiceError(
                f"the {what} file is not UTF-8 text (invalid byte at line {line}); save it as CSV UTF-8 and retry"
            ) from None
    if len(text.encode("utf-8")) > MAX_UPLOAD_BYTES:
        raise ServiceError(f"the {what} file is larger than {MAX_UPLOAD_BYTES:,} bytes (2 MiB)", status=413)
    if not text.strip():
        raise ServiceError(f"the {what} file is empty")
    if "\x00" in text:  # no text CSV holds one, and PostgreSQL cannot store it
        line = text[: text.index("\x00")].count("\n") + 1
        raise ServiceError(
            f"the {what} file contains a NUL character at line {line}: it is not a text CSV; "
            "save it as CSV UTF-8 and retry"
        )
    return text


def _normalise(text: str) -> str:
    return " ".join(text.split())


def _csv_rows(text: str, expected: tuple[str, ...], optional: tuple[str, ...] = ()) -> list[tuple[int, dict]]:
    """Rows as dicts keyed by the expected column names, with their line numbers.

    A first row naming the columns (any order, any case) is a header; otherwise the columns are taken
    in the order ``expected + optional``.
    """
    rows = list(csv.reader(io.StringIO(text)))
    columns = expected + optional
    header = [cell.strip().lower() for cell in rows[0]] if rows else []
    first_line = 1
    if set(expected) <= set(header):
        positions = {name: header.index(name) for name in columns if name in header}
        rows = rows[1:]
        first_line = 2
    else:
        positions = {name: index for index, name in enumerate(columns)}
    parsed = []
    for line, row in enumerate(rows, start=first_line):
        if not any(cell.strip() for cell in row):
            continue
        parsed.append(
            (line, {name: (row[index] if index < len(row) else "") for name, index in positions.items()})
        )
    return parsed


def _require_draft(study: Study, action: str) -> None:
    if study.status != Study.Status.DRAFT:
        raise StudyStateError(
            f"cannot {action}: the study is {study.status}; only a draft study can change its pools"
        )


@transaction.atomic
def tokens_import(*, study: Study, data: bytes | str) -> ImportReport:
    """Add tokens from CSV rows ``token, area[, rare]`` (a header row is optional).

    All or nothing: any bad row refuses the whole file, with every problem listed by line.
    """
    study = Study.objects.select_for_update().get(pk=study.pk)
    _require_draft(study, "import tokens")
    _require_no_job(study, "import tokens")
    text = _decode_upload(data, what="tokens")
    rows = _csv_rows(text, ("token", "area"), ("rare",))
    if not rows:
        raise ServiceError("the tokens file has no rows: expected lines of token, area[, rare]")
    existing_count = study.tokens.count()
    if existing_count + len(rows) > limits.MAX_TOKENS:
        raise ServiceError(
            f"the file has {len(rows):,} tokens and the study {existing_count:,}; a study holds at most "
            f"{limits.MAX_TOKENS:,} tokens (its items pair them, and it holds at most {limits.MAX_ITEMS:,} "
            "items): nothing was imported",
            status=413,
        )

    errors: list[str] = []
    existing = {_normalise(t).casefold(): t for t in study.tokens.values_list("text", flat=True)}
    seen: dict[str, int] = {}
    accepted: list[tuple[str, str, bool]] = []
    for line, row in rows:
        token = _normalise(row.get("token", ""))
        area = _normalise(row.get("area", ""))
        rare_text = row.get("rare", "").strip().lower()
        key = token.casefold()
        if not token:
            errors.append(f"line {line}: the token is empty")
        elif len(token) > Token.MAX_LENGTH:
            errors.append(
                f"line {line}: the token is {len(token)} characters long; the limit is {Token.MAX_LENGTH}"
            )
        elif key in seen:
            errors.append(f"line {line}: {token!r} repeats line {seen[key]}")
        elif key in existing:
            errors.append(f"line {line}: {token!r} is already in this study")
        if not area:
            errors.append(f"line {line}: the semantic area is empty")
        elif len(area) > 100:
            errors.append(f"line {line}: the area name is longer than 100 characters")
        if rare_text not in _TRUE | _FALSE:
            errors.append(f"line {line}: rare must be 1/0, true/false or yes/no, not {row.get('rare')!r}")
        seen.setdefault(key, line)
        accepted.append((token, area, rare_text in _TRUE))

    area_sizes: dict[str, int] = {}
    for name, count in (
        SemanticArea.objects.filter(study=study).values_list("name").annotate(n=Count("tokens"))
    ):
        area_sizes[name] = count
    for _, area, _ in accepted:
        area_sizes[area] = area_sizes.get(area, 0) + 1
    for area, count in sorted(area_sizes.items()):
        if area and count < 2:
            errors.append(
                f"area {area!r} has {count} token; an area needs at least two tokens to form an item"
            )
    if errors:
        shown = errors[:MAX_REPORTED_ERRORS]
        more = len(errors) - len(shown)
        raise ServiceError(
            f"the tokens file has {len(errors)} problem(s); nothing was imported",
            errors=shown + ([f"… and {more} more"] if more else []),
        )

    report = ImportReport()
    areas = {a.name: a for a in study.areas.all()}
    for _, area, _ in accepted:
        if area not in areas:
            areas[area] = SemanticArea.objects.create(study=study, name=area)
            report.areas_created += 1
    Token.objects.bulk_create(
        [Token(study=study, area=areas[area], text=token, rare=rare) for token, area, rare in accepted]
    )
    report.tokens_created = len(accepted)
    return report


def _generation_sizes(study: Study, max_per_area: int | None) -> list[tuple[int, str, int, int]]:
    """(area id, area name, tokens, items it will give) for every area of the study, by name."""
    rows = (
        SemanticArea.objects.filter(study=study)
        .order_by("name")
        .values_list("pk", "name")
        .annotate(token_count=Count("tokens"))
    )
    sizes = []
    for area_id, name, token_count in rows:
        pairs = pair_count(token_count)
        sizes.append(
            (area_id, name, token_count, pairs if max_per_area is None else min(pairs, max_per_area))
        )
    return sizes


def items_generation_size(*, study: Study, max_per_area: int | None = None) -> int:
    """How many items ``items_generate`` would make; a ServiceError if the study's limits refuse it."""
    if max_per_area is not None and max_per_area < 1:
        raise ServiceError(f"the cap per area must be at least 1, got {max_per_area}")
    sizes = _generation_sizes(study, max_per_area)
    total = sum(items for *_, items in sizes)
    if total > limits.MAX_ITEMS:
        areas = max(1, sum(1 for *_, token_count, _ in sizes if token_count >= 2))
        raise ServiceError(
            f"these tokens give {total:,} items; a study holds at most {limits.MAX_ITEMS:,} (the instrument "
            f"card's bootstrap and every evaluation grow with the items): set a cap of at most "
            f"{limits.MAX_ITEMS // areas:,} pairs per area, or use fewer tokens",
            status=413,
        )
    return total


@transaction.atomic
def items_generate(
    *, study: Study, max_per_area: int | None = None, seed: int | None = None, progress=None
) -> ImportReport:
    """Replace the study's items by all pairs of distinct tokens within each area (§2.2).

    With ``max_per_area``, each area keeps a uniform random sample of that many pairs (drawn without
    listing every pair: ``collection.pairs``). Refused beyond ``limits.MAX_ITEMS`` items.
    ``progress(done, total)`` is called as the items are written.
    """
    study = Study.objects.select_for_update().get(pk=study.pk)
    _require_draft(study, "generate items")
    total = items_generation_size(study=study, max_per_area=max_per_area)
    if total < 2:
        raise ServiceError("the study needs at least two items: add tokens (two or more per area) first")
    rng = np.random.default_rng(study.seed if seed is None else seed)
    tokens_by_area: dict[int, list[int]] = {}
    for area_id, token_id in (
        Token.objects.filter(study=study).order_by("area_id", "pk").values_list("area_id", "pk")
    ):
        tokens_by_area.setdefault(area_id, []).append(token_id)
    report = ImportReport()
    areas, lows, highs = [], [], []
    for area_id, name, token_count, _ in _generation_sizes(study, max_per_area):
        if token_count < 2:
            report.warnings.append(f"area {name!r} has fewer than two tokens and gives no item")
            continue
        first, second = area_pairs(token_count, max_per_area, rng)
        if max_per_area is not None and pair_count(token_count) > max_per_area:
            report.warnings.append(
                f"area {name!r}: sampled {max_per_area} of {pair_count(token_count)} pairs"
            )
        token_ids = np.asarray(tokens_by_area[area_id], dtype=np.int64)
        areas.append(np.full(first.size, area_id, dtype=np.int64))
        lows.append(token_ids[first])
        highs.append(token_ids[second])
    area_of, token_a, token_b = (np.concatenate(parts) for parts in (areas, lows, highs))
    study.items.all().delete()
    batch = 2000
    for start in range(0, area_of.size, batch):
        stop = min(start + batch, area_of.size)
        Item.objects.bulk_create(
            [
                Item(study=study, area_id=area, token_a_id=a, token_b_id=b, index=index)
                for index, area, a, b in zip(
                    range(start, stop),
                    area_of[start:stop].tolist(),
                    token_a[start:stop].tolist(),
                    token_b[start:stop].tolist(),
                    strict=True,
                )
            ]
        )
        if progress:
            progress(stop, area_of.size)
    report.items_created = int(area_of.size)
    return report


def items_generate_start(
    *, study: Study, max_per_area: int | None = None, user=None
) -> ImportReport | StudyJob:
    """Generate the items now when they are few (``limits.SYNC_GENERATION_ITEMS``), else as a job:
    returns the report, or the job whose progress ``study_job_state`` reads."""
    _require_draft(study, "generate items")
    _require_no_job(study, "generate items")
    total = items_generation_size(study=study, max_per_area=max_per_area)
    if total <= limits.SYNC_GENERATION_ITEMS:
        return items_generate(study=study, max_per_area=max_per_area)
    return _study_job_start(
        study=study,
        kind=StudyJob.Kind.ITEMS_GENERATE,
        parameters={"max_per_area": max_per_area},
        total=total,
        user=user,
    )


# --- jobs ----------------------------------------------------------------------------------------

JOB_PROGRESS_KEY = "study-job-progress:{}"


@transaction.atomic
def _study_job_start(*, study: Study, kind: str, parameters: dict, total: int, user=None) -> StudyJob:
    from collection.tasks import study_job_run_task

    Study.objects.select_for_update().filter(pk=study.pk).first()  # one job start at a time per study
    running = study.jobs.filter(status__in=(StudyJob.Status.PENDING, StudyJob.Status.RUNNING)).first()
    if running is not None:
        raise StudyStateError(
            f"the study is already busy: {running.get_kind_display()} (job {running.pk}) has not finished; "
            "wait for it (GET its progress) and try again"
        )
    job = StudyJob.objects.create(
        study=study,
        kind=kind,
        parameters=parameters,
        total=total,
        requested_by=user if user and user.pk else None,
    )
    enqueue_on_commit(study_job_run_task, job.pk, recovered_by="the ballots sweep (pending jobs)")
    return job


def _require_no_job(study: Study, action: str) -> None:
    running = study.jobs.filter(status__in=(StudyJob.Status.PENDING, StudyJob.Status.RUNNING)).first()
    if running is not None:
        raise StudyStateError(
            f"cannot {action} while the study's job {running.pk} ({running.get_kind_display()}) runs; "
            "wait for it to finish"
        )


def study_job_run(*, job_id: int) -> StudyJob | None:
    """Run a stored job (idempotent: a finished job is left as it is); returns it, or None if missing."""
    job = StudyJob.objects.select_related("study").filter(pk=job_id).first()
    if job is None:
        logger.warning("study job %s does not exist", job_id)
        return None
    if job.finished:
        return job
    StudyJob.objects.filter(pk=job_id).update(status=StudyJob.Status.RUNNING)

    def progress(done: int, total: int) -> None:
        try:
            cache.set(JOB_PROGRESS_KEY.format(job_id), done, 3600)
        except Exception:  # progress is a courtesy; the job goes on without it
            logger.warning("progress of job %s not stored: the cache does not answer", job_id)

    try:
        if job.kind == StudyJob.Kind.ITEMS_GENERATE:
            report = items_generate(
                study=job.study, max_per_area=job.parameters.get("max_per_area"), progress=progress
            )
            result = {
                "areas_created": report.areas_created,
                "tokens_created": report.tokens_created,
                "items_created": report.items_created,
                "warnings": report.warnings,
            }
        else:
            raise ServiceError(f"unknown job kind {job.kind!r}")
    except ServiceError as exc:
        StudyJob.objects.filter(pk=job_id).update(
            status=StudyJob.Status.FAILED, error=exc.message, finished_at=timezone.now()
        )
    except Exception as exc:
        StudyJob.objects.filter(pk=job_id).update(
            status=StudyJob.Status.FAILED, error=f"an unexpected error: {exc}", finished_at=timezone.now()
        )
        raise
    else:
        StudyJob.objects.filter(pk=job_id).update(
            status=StudyJob.Status.DONE, result=result, finished_at=timezone.now()
        )
    job.refresh_from_db()
    return job


def study_job_done_count(job: StudyJob) -> int:
    """Units done: the total once finished, else the progress the task last reported."""
    if job.status == StudyJob.Status.DONE:
        return job.total
    try:
        return int(cache.get(JOB_PROGRESS_KEY.format(job.pk)) or 0)
    except Exception:
        return 0


def study_jobs_restart(*, now: datetime | None = None, stale_seconds: int = 60) -> int:
    """Send again the jobs still pending after ``stale_seconds`` (their task was never sent)."""
    from collection.tasks import study_job_run_task

    now = now or timezone.now()
    pending = list(
        StudyJob.objects.filter(
            status=StudyJob.Status.PENDING, created_at__lte=now - timedelta(seconds=stale_seconds)
        ).values_list("pk", flat=True)
    )
    for job_id in pending:
        enqueue(study_job_run_task, job_id, recovered_by="the next ballots sweep")
    return len(pending)


@transaction.atomic
def items_import_pairs(*, study: Study, data: bytes | str) -> ImportReport:
    """Replace the study's items by explicit pairs ``token_a, token_b`` of tokens already imported.

    Both tokens must belong to the same semantic area. All or nothing, errors listed by line.
    """
    study = Study.objects.select_for_update().get(pk=study.pk)
    _require_draft(study, "import items")
    _require_no_job(study, "import items")
    text = _decode_upload(data, what="items")
    rows = _csv_rows(text, ("token_a", "token_b"))
    if len(rows) > limits.MAX_ITEMS:
        raise ServiceError(
            f"the file has {len(rows):,} pairs; a study holds at most {limits.MAX_ITEMS:,} items (the instrument "
            "card's bootstrap and every evaluation grow with the items): nothing was imported",
            status=413,
        )
    tokens = {_normalise(t.text).casefold(): t for t in study.tokens.all()}
    errors: list[str] = []
    seen: dict[tuple[int, int], int] = {}
    pairs: list[tuple[Token, Token]] = []
    for line, row in rows:
        names = [_normalise(row.get("token_a", "")), _normalise(row.get("token_b", ""))]
        found = [tokens.get(name.casefold()) for name in names]
        missing = [name for name, token in zip(names, found, strict=True) if token is None]
        if missing:
            errors.append(
                f"line {line}: unknown token(s) {', '.join(repr(m) for m in missing)}; import them first"
            )
            continue
        a, b = sorted(found, key=lambda t: t.id)
        if a.id == b.id:
            errors.append(f"line {line}: an item needs two different tokens, got {names[0]!r} twice")
        elif a.area_id != b.area_id:
            errors.append(f"line {line}: {a.text!r} and {b.text!r} belong to different semantic areas")
        elif (a.id, b.id) in seen:
            errors.append(f"line {line}: the pair repeats line {seen[(a.id, b.id)]}")
        else:
            seen[(a.id, b.id)] = line
            pairs.append((a, b))
    if not errors and len(pairs) < 2:
        errors.append(f"the file gives {len(pairs)} item(s); a study needs at least two")
    if errors:
        shown = errors[:MAX_REPORTED_ERRORS]
        more = len(errors) - len(shown)
        raise ServiceError(
            f"the items file has {len(errors)} problem(s); nothing was imported",
            errors=shown + ([f"… and {more} more"] if more else []),
        )
    study.items.all().delete()
    Item.objects.bulk_create(
        [
            Item(study=study, area_id=a.area_id, token_a=a, token_b=b, index=i)
            for i, (a, b) in enumerate(pairs)
        ],
        batch_size=2000,
    )
    study.item_source = "explicit pairs uploaded by the researcher"
    study.save(update_fields=["item_source"])
    return ImportReport(items_created=len(pairs))


# --- lifecycle -----------------------------------------------------------------------------------


@transaction.atomic
def study_start(*, study: Study, now: datetime | None = None) -> Ballot:
    """Freeze the plan and open ballot 1 with its schedule."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    if study.status != Study.Status.DRAFT:
        raise StudyStateError(f"the study is already {study.status}")
    _require_no_job(study, "start the study")
    plan = study_plan(study=study)
    study.appearances = plan.appearances  # a budget becomes the M it allows, frozen from now on
    study.status = Study.Status.RUNNING
    study.started_at = now or timezone.now()
    study.save(update_fields=["appearances", "status", "started_at"])
    indices = np.arange(plan.item_count)
    return ballot_open(study=study, number=1, item_indices=indices, now=now)


def ballot_open(*, study: Study, number: int, item_indices, now: datetime | None = None) -> Ballot:
    """Create ballot ``number`` over the given items with its comparisons (call inside a transaction).

    The schedule is drawn from ``numpy.random.default_rng([study.seed, number])``: re-running the
    opening of a ballot (after a crash) draws the same comparisons.
    """
    now = now or timezone.now()
    item_indices = np.asarray(item_indices, dtype=np.int64)
    items = dict(study.items.filter(index__in=item_indices.tolist()).values_list("index", "id"))
    if len(items) != item_indices.size:
        raise ServiceError(f"ballot {number}: {item_indices.size - len(items)} of its items do not exist")
    rng = np.random.default_rng([study.seed, number])
    local = ballot_schedule(item_indices.size, study.appearances, rng)
    pairs = item_indices[local]
    deadline = now + timedelta(hours=study.ballot_deadline_hours) if study.ballot_deadline_hours else None
    ballot = Ballot.objects.create(
        study=study, number=number, comparison_count=pairs.shape[0], deadline=deadline
    )
    BallotItem.objects.bulk_create(
        [BallotItem(ballot=ballot, item_id=items[int(i)]) for i in item_indices], batch_size=2000
    )
    low = np.minimum(pairs[:, 0], pairs[:, 1])
    high = np.maximum(pairs[:, 0], pairs[:, 1])
    Comparison.objects.bulk_create(
        [
            Comparison(
                ballot=ballot,
                position=position,
                left_item_id=items[int(left)],
                right_item_id=items[int(right)],
                pair_low=int(lo),
                pair_high=int(hi),
            )
            for position, (left, right, lo, hi) in enumerate(
                zip(pairs[:, 0], pairs[:, 1], low, high, strict=True)
            )
        ],
        batch_size=2000,
    )
    if connection.vendor == "postgresql":
        # Fresh statistics for the new rows: until autovacuum gets to them the planner takes the ballot
        # for empty and the lease query (every GET next) scans and sorts every open comparison, 40-110 ms
        # instead of 0.06 ms (RELIABILITY.md). ANALYZE samples the table: tens of milliseconds, once a ballot.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE collection_comparison")
    logger.info("opened %s with %d items and %d comparisons", ballot, item_indices.size, pairs.shape[0])
    return ballot


@transaction.atomic
def study_close_current_ballot(*, study: Study, now: datetime | None = None) -> Ballot:
    """Ask for the open ballot to be closed now, with the votes it has (the task runs after commit).

    The request is stored first, as a deadline of now: if the closing task cannot be sent, the sweep
    closes the ballot at its next run, as it closes every ballot past its deadline.
    """
    now = now or timezone.now()
    ballot = study.ballots.select_for_update().filter(status=Ballot.Status.OPEN).first()
    if ballot is None:
        raise StudyStateError(f"the study has no open ballot (it is {study.status})")
    if ballot.deadline is None or ballot.deadline > now:
        ballot.deadline = now
        ballot.save(update_fields=["deadline"])
    from scoring.tasks import ballot_close_task

    enqueue_on_commit(ballot_close_task, ballot.pk, recovered_by=BALLOT_CLOSE_RECOVERY)
    return ballot


def _within(text: str, max_length: int, *, suffix: str = "") -> str:
    """``text + suffix``, with ``text`` shortened so that the whole fits in ``max_length``."""
    return text[: max_length - len(suffix)] + suffix


def _free_slug(stem: str, suffix: str = "") -> str:
    """``stem + suffix``, or ``stem + suffix + "-2"``, ``-3`` … if taken, ``stem`` shortened to fit."""
    max_length = Study._meta.get_field("slug").max_length
    taken = set(Study.objects.filter(slug__startswith=stem[: max_length // 2]).values_list("slug", flat=True))
    candidate, number = _within(stem, max_length, suffix=suffix), 2
    while candidate in taken:
        candidate, number = _within(stem, max_length, suffix=f"{suffix}-{number}"), number + 1
    return candidate


@transaction.atomic
def study_duplicate(*, study: Study, name: str | None = None, slug: str | None = None, user=None) -> Study:
    """A draft copy with the same areas, tokens, items (same indices) and plan, and no votes.

    This is the replication the metrology of crowd benchmarks asks for: the same instrument, run again.
    """
    copy = Study.objects.create(
        name=name or _within(study.name, Study._meta.get_field("name").max_length, suffix=" (replication)"),
        slug=_free_slug(slug) if slug else _free_slug(study.slug, "-copy"),
        require_signed_links=study.require_signed_links,
        question=study.question,
        instructions=study.instructions,
        allow_ties=study.allow_ties,
        ballot_count=study.ballot_count,
        keep_fraction=study.keep_fraction,
        appearances=study.appearances,
        comparison_budget=study.comparison_budget,
        seconds_per_comparison=study.seconds_per_comparison,
        lease_seconds=study.lease_seconds,
        votes_per_annotator_per_ballot=study.votes_per_annotator_per_ballot,
        ballot_deadline_hours=study.ballot_deadline_hours,
        completion_redirect_url=study.completion_redirect_url,
        item_source=study.item_source,
        minimum_coverage=study.minimum_coverage,
        relevant_top_k=study.relevant_top_k,
        created_by=user,
        duplicated_from=study,
    )
    areas = {a.pk: SemanticArea.objects.create(study=copy, name=a.name) for a in study.areas.all()}
    old_tokens = list(study.tokens.all())
    new_tokens = Token.objects.bulk_create(
        [Token(study=copy, area=areas[t.area_id], text=t.text, rare=t.rare) for t in old_tokens]
    )
    if any(t.pk is None for t in new_tokens):  # backends that do not return ids from bulk_create
        by_text = {t.text: t for t in copy.tokens.all()}
        new_tokens = [by_text[t.text] for t in old_tokens]
    token_map = {old.pk: new for old, new in zip(old_tokens, new_tokens, strict=True)}
    Item.objects.bulk_create(
        [
            Item(
                study=copy,
                area=areas[item.area_id],
                token_a=min(token_map[item.token_a_id], token_map[item.token_b_id], key=lambda t: t.pk),
                token_b=max(token_map[item.token_a_id], token_map[item.token_b_id], key=lambda t: t.pk),
                index=item.index,
            )
            for item in study.items.all()
        ],
        batch_size=2000,
    )
    return copy


# --- studies -------------------------------------------------------------------------------------
#
# One rule set for creating, changing and deleting studies, used by the admin, the API and commands.
# Forms and serializers check the shape of each field (a number in range, a URL); what depends on the
# study's state, its items or several fields together is decided here, on the study's locked row, so
# that a start racing a change is decided one way or the other. Every change of a started study is
# recorded in StudyChange (who, when, through which channel, from what to what).

_DRAFT_ONLY = frozenset({Study.Status.DRAFT})
_UNTIL_FINISHED = frozenset({Study.Status.DRAFT, Study.Status.RUNNING})
_ALWAYS = frozenset(Study.Status.values)
_PLAN_SHAPED = "the plan shaped the ballots already opened"
_COLLECTED = "the collection is over"
_REPORTED = "the collection is over and the instrument card reports the value it ran with"


@dataclass(frozen=True)
class StudySetting:
    """A setting of a study: the states in which it may change, and why it may not in the others."""

    label: str
    editable_in: frozenset[str]
    frozen_because: str = ""
    private: bool = False  # a secret of the crowd platform: its values stay off the public card


STUDY_SETTINGS: dict[str, StudySetting] = {
    # A label: nothing is measured with it.
    "name": StudySetting("name", _ALWAYS),
    "slug": StudySetting("slug", _DRAFT_ONLY, "the annotators' links (/s/<slug>/) already carry it"),
    # Wording may be corrected while running (a typo found after launch): the change and its time are
    # on the instrument card. Once finished, it is the procedure the votes were collected under.
    "question": StudySetting(
        "question", _UNTIL_FINISHED, "the votes were collected under it and the instrument card reports it"
    ),
    "instructions": StudySetting(
        "instructions",
        _UNTIL_FINISHED,
        "the votes were collected under them and the instrument card reports them",
    ),
    # What a vote means and how the ballots were drawn: fixed by the first ballot.
    "allow_ties": StudySetting(
        "ties allowed", _DRAFT_ONLY, "the votes already cast were given with the same answers on offer"
    ),
    "ballot_count": StudySetting("ballots n_b", _DRAFT_ONLY, _PLAN_SHAPED),
    "keep_fraction": StudySetting("fraction kept α", _DRAFT_ONLY, _PLAN_SHAPED),
    "appearances": StudySetting("appearances M", _DRAFT_ONLY, _PLAN_SHAPED),
    "comparison_budget": StudySetting("comparison budget", _DRAFT_ONLY, _PLAN_SHAPED),
    "seconds_per_comparison": StudySetting(
        "seconds per comparison", _DRAFT_ONLY, "the plan's cost estimate (Eq. 10) was made with it"
    ),
    "seed": StudySetting("seed", _DRAFT_ONLY, "it drew the schedules of the ballots already opened"),
    # How the collection runs, not what a vote means; each applies from its change on: a lease to the
    # comparisons leased after it, a cap to the next comparison asked for, a deadline to the ballots
    # opened after it (the open ballot keeps its deadline: close it now to end it early).
    "lease_seconds": StudySetting("lease (seconds)", _UNTIL_FINISHED, _REPORTED),
    "votes_per_annotator_per_ballot": StudySetting(
        "cap per annotator and ballot", _UNTIL_FINISHED, _REPORTED
    ),
    "ballot_deadline_hours": StudySetting("ballot deadline (hours)", _UNTIL_FINISHED, _REPORTED),
    "completion_redirect_url": StudySetting("completion URL", _UNTIL_FINISHED, _COLLECTED, private=True),
    "completion_code": StudySetting("completion code", _UNTIL_FINISHED, _COLLECTED, private=True),
    "require_signed_links": StudySetting("signed participant links required", _UNTIL_FINISHED, _COLLECTED),
    # How models are evaluated against the ranking, not how the ranking was measured.
    "minimum_coverage": StudySetting("minimum coverage of a submission", _ALWAYS),
    "relevant_top_k": StudySetting("relevant top K", _ALWAYS),
}
PLAN_SETTINGS = (
    "ballot_count",
    "keep_fraction",
    "appearances",
    "comparison_budget",
    "seconds_per_comparison",
)


def study_settings_frozen(*, status: str) -> tuple[str, ...]:
    """The settings that cannot change in this state, in the order of ``STUDY_SETTINGS``."""
    return tuple(name for name, setting in STUDY_SETTINGS.items() if status not in setting.editable_in)


def study_setting_problems(*, study: Study, changed) -> list[tuple[str | None, str]]:
    """(setting or None, message) for every rule that ``study``, its ``changed`` settings set, breaks.

    The rules that need more than one field: M or a budget but not both, a plan possible for the items
    of the draft, a slug not taken, and the database's check constraints, said in words.
    """
    changed = set(changed)
    problems: list[tuple[str | None, str]] = []
    try:
        study.clean_fields(exclude=[f.name for f in Study._meta.concrete_fields if f.name not in changed])
    except DjangoValidationError as exc:
        problems += [(name, message) for name, messages in exc.message_dict.items() for message in messages]
    if changed & set(PLAN_SETTINGS):
        if study.appearances is None and study.comparison_budget is None:
            problems.append(
                (
                    "appearances",
                    "the plan needs the appearances M of each item per ballot (the paper uses 20) or a "
                    "comparison budget from which M is derived",
                )
            )
        elif study.appearances is not None and study.comparison_budget is not None:
            problems.append(
                (
                    None,
                    "give either the appearances M or a comparison budget, not both: with a budget, M is "
                    "derived from it. Clear one of the two fields",
                )
            )
    if "slug" in changed and Study.objects.filter(slug=study.slug).exclude(pk=study.pk).exists():
        problems.append(("slug", f"a study with the slug {study.slug!r} exists already; choose another"))
    checked = {f.name for f in Study._meta.concrete_fields} - changed | {name for name, _ in problems}
    try:
        study.validate_constraints(exclude=checked | {"appearances", "comparison_budget"})
    except DjangoValidationError as exc:
        problems += [(None, message) for message in exc.messages]
    if not problems and study.pk is not None and changed & set(PLAN_SETTINGS):
        item_count = study.items.count()
        if item_count:
            try:
                study_plan(study=study, item_count=item_count)
            except ServiceError as exc:
                problems.append(("plan", exc.message))
    return problems


def _refuse(problems: list[tuple[str | None, str]]) -> None:
    lines = [f"{name}: {message}" if name else message for name, message in problems]
    raise ServiceError("; ".join(lines), errors=lines)


def _check_setting_names(values) -> None:
    unknown = sorted(set(values) - set(STUDY_SETTINGS))
    if unknown:
        raise ServiceError(
            f"{', '.join(unknown)}: not a setting of a study; the settings are {', '.join(STUDY_SETTINGS)}"
        )


def _account(user):
    return user if user is not None and user.is_authenticated else None


@transaction.atomic
def study_create(*, values, user=None) -> Study:
    """A new draft with these settings (the others at their defaults), created by ``user``.

    A comparison budget given without M means M is derived from it.
    """
    _check_setting_names(values)
    values = dict(values)
    if values.get("comparison_budget") is not None and "appearances" not in values:
        values["appearances"] = None
    study = Study(**values, created_by=_account(user))
    if problems := study_setting_problems(study=study, changed=STUDY_SETTINGS):
        _refuse(problems)
    try:
        with transaction.atomic():
            study.save(force_insert=True)
    except IntegrityError:  # the same slug created meanwhile
        if Study.objects.filter(slug=study.slug).exists():
            _refuse([("slug", f"a study with the slug {study.slug!r} exists already; choose another")])
        raise
    return study


@transaction.atomic
def study_update(*, study: Study, changes, user=None, channel: str, now: datetime | None = None) -> Study:
    """Change some settings of a study, if its state allows each one; returns the study as saved.

    All or nothing. A setting frozen in the study's state (``STUDY_SETTINGS``) refuses the whole
    change with 409 and why; a broken rule with 400. Settings given with their current value are not
    changes. Each setting a started study changes is recorded in ``StudyChange`` with ``user``,
    ``channel`` (admin, api or command), the time and the values before and after.
    """
    if channel not in StudyChange.Channel.values:
        raise ValueError(f"channel must be one of {StudyChange.Channel.values}, got {channel!r}")
    _check_setting_names(changes)
    locked = Study.objects.select_for_update().get(pk=study.pk)
    changed = {
        name: changes[name]
        for name in STUDY_SETTINGS
        if name in changes and changes[name] != getattr(locked, name)
    }
    frozen = [name for name in changed if locked.status not in STUDY_SETTINGS[name].editable_in]
    if frozen:
        lines = [
            f"{name}: cannot change now that the study is {locked.status}: {STUDY_SETTINGS[name].frozen_because}"
            for name in frozen
        ]
        raise StudyStateError(
            f"the study is {locked.status}, so {', '.join(frozen)} cannot change any more; nothing was "
            "changed. Duplicate the study to run the same items again with other values",
            errors=lines,
        )
    if not changed:
        return locked
    before = {name: getattr(locked, name) for name in changed}
    for name, value in changed.items():
        setattr(locked, name, value)
    if problems := study_setting_problems(study=locked, changed=changed):
        _refuse(problems)
    locked.save(update_fields=list(changed))
    if locked.status != Study.Status.DRAFT:
        account = _account(user)
        moment = now or timezone.now()
        StudyChange.objects.bulk_create(
            [
                StudyChange(
                    study=locked,
                    user=account,
                    username=account.get_username() if account else "",
                    channel=channel,
                    changed_at=moment,
                    study_status=locked.status,
                    setting=name,
                    old_value=before[name],
                    new_value=value,
                )
                for name, value in changed.items()
            ]
        )
    return locked


@transaction.atomic
def study_delete(*, study: Study) -> None:
    """Delete a draft with its pools. A started study is kept (409): its votes and trail stay."""
    locked = Study.objects.select_for_update().filter(pk=study.pk).first()
    if locked is None:
        return
    if locked.status != Study.Status.DRAFT:
        raise StudyStateError(
            f"the study is {locked.status}: only a draft can be deleted, so that no votes are lost"
        )
    locked.delete()


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


# --- voting --------------------------------------------------------------------------------------


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
    (409). The vote that completes its ballot enqueues the closing task after commit.
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
        from scoring.tasks import ballot_close_task

        # The vote is stored whatever happens to this message: a broker that is down is logged, and
        # the sweep closes the fully voted ballot (common.tasks).
        enqueue_on_commit(ballot_close_task, ballot.pk, recovered_by=BALLOT_CLOSE_RECOVERY)
    return vote, True


# --- housekeeping --------------------------------------------------------------------------------


def leases_expire(*, now: datetime | None = None) -> int:
    """Return comparisons whose lease ran out to the pool; returns how many (Celery beat)."""
    now = now or timezone.now()
    with transaction.atomic():
        expired = Assignment.objects.filter(status=Assignment.Status.ACTIVE, expires_at__lte=now)
        Comparison.objects.filter(status=Comparison.Status.LEASED, lease_expires_at__lte=now).update(
            status=Comparison.Status.OPEN, lease_expires_at=None
        )
        return expired.update(status=Assignment.Status.EXPIRED)
