"""Services of the metrics app: submissions, evaluations, leaderboards and the instrument card.

Reads turn rows into arrays, call the pure modules (``metrics.evaluation``, ``metrics.metrology``),
and cache what is expensive per study in ``StudyFigure`` rows, keyed by the study's fingerprint (its
status and votes): a figure computed from an older state is recomputed.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

import krippendorff
import numpy as np
from django.db import IntegrityError, transaction
from django.db.models import Count, Max, Q
from django.utils import timezone

from collection.models import Ballot, Item, Study, Vote
from common.csvexport import unescape_cell
from common.errors import ServiceError, StudyStateError
from common.tasks import enqueue, enqueue_on_commit
from metrics.evaluation import COEFFICIENTS, annotator_agreement, evaluate, leaderboard
from metrics.metrology import (
    BallotVotes,
    bootstrap_scores,
    chance_level,
    pair_value_counts,
    precision_summary,
    reproducibility,
    resolution,
    split_half_reliability,
)
from metrics.models import Evaluation, StudyFigure, Submission

logger = logging.getLogger(__name__)

MAX_SUBMISSION_BYTES = 5 * 1024 * 1024
MAX_REPORTED_ERRORS = 20
SYNC_EVALUATION_ITEMS = 3000  # larger submissions are evaluated by a Celery task
REPLICATE_BUDGET = 2_000_000  # bootstrap replicates × items: 1000 replicates up to 2000 items
DEFAULT_WEIGHT_OFFSET = 2.0
# Beyond this n0 every rank weighs the same (ρ_w and τ_w are ρ and τ), and (n + n0)² overflows near 1e154.
MAX_WEIGHT_OFFSET = 1e6
MAX_WEIGHT_OFFSET_MESSAGE = (
    f"n0 must be at most {MAX_WEIGHT_OFFSET:,.0f}: beyond it every rank weighs the same, as in ρ and τ"
)
_OUTCOME = {"left": 1.0, "right": 0.0, "tie": 0.5}


def replicate_count(item_count: int) -> int:
    """Bootstrap replicates for a study of this size: 1000, fewer above 2000 items (at least 200)."""
    return int(min(1000, max(200, REPLICATE_BUDGET // max(item_count, 1))))


# --- a study as arrays ---------------------------------------------------------------------------


@dataclass(frozen=True)
class StudyVotes:
    """The closed ballots of a study with their votes, as the metrology engine reads them."""

    item_count: int
    ballots: list[BallotVotes]
    annotator_ids: np.ndarray  # database id of annotator code 0 … A-1
    pair_low: np.ndarray
    pair_high: np.ndarray
    winner_is_low: np.ndarray  # 1 the lower-index item won, 0 the higher, 0.5 a tie
    chosen: np.ndarray  # decisive votes: the chosen item index …
    rejected: np.ndarray  # … and the other one
    chosen_annotator: np.ndarray  # annotator code of each decisive vote


def study_votes(*, study: Study) -> StudyVotes:
    """Every vote of the study's closed ballots, grouped by ballot, with the ballots' items."""
    item_count = study.items.count()
    rows = list(
        Vote.objects.filter(ballot__study=study, ballot__status=Ballot.Status.CLOSED)
        .order_by("ballot__number", "pk")
        .values_list("ballot__number", "left_item__index", "right_item__index", "choice", "annotator_id")
    )
    number = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    left = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
    right = np.fromiter((r[2] for r in rows), dtype=np.int64, count=len(rows))
    outcome = np.fromiter((_OUTCOME[r[3]] for r in rows), dtype=np.float64, count=len(rows))
    annotator_ids, annotator = np.unique(
        np.fromiter((r[4] for r in rows), dtype=np.int64, count=len(rows)), return_inverse=True
    )
    members: dict[int, list[int]] = {}
    for ballot_number, index in Ballot.items.through.objects.filter(
        ballot__study=study, ballot__status=Ballot.Status.CLOSED
    ).values_list("ballot__number", "item__index"):
        members.setdefault(ballot_number, []).append(index)
    ballots = []
    for ballot_number in sorted(members):
        in_ballot = number == ballot_number
        ballots.append(
            BallotVotes(
                items=np.sort(np.array(members[ballot_number], dtype=np.int64)),
                left=left[in_ballot],
                right=right[in_ballot],
                outcome=outcome[in_ballot],
                annotator=annotator[in_ballot],
            )
        )
    decisive = outcome != 0.5
    return StudyVotes(
        item_count=item_count,
        ballots=ballots,
        annotator_ids=annotator_ids,
        pair_low=np.minimum(left, right),
        pair_high=np.maximum(left, right),
        winner_is_low=np.where(left < right, outcome, 1.0 - outcome),
        chosen=np.where(outcome == 1.0, left, right)[decisive],
        rejected=np.where(outcome == 1.0, right, left)[decisive],
        chosen_annotator=annotator[decisive],
    )


def final_scores(*, study: Study) -> np.ndarray:
    """ȳ of every item of a finished study, by item index."""
    if study.status != Study.Status.FINISHED:
        raise StudyStateError(f"the study is {study.status}: its final ranking exists once it has finished")
    score = np.full(study.items.count(), np.nan)
    for index, value in study.items.values_list("index", "final_score"):
        score[index] = np.nan if value is None else value
    return score


def study_state_key(*, study: Study) -> str:
    """The state a cached figure was computed from: status, closed ballots and votes."""
    votes = Vote.objects.filter(ballot__study=study).aggregate(count=Count("pk"), last=Max("pk"))
    closed = study.ballots.filter(status=Ballot.Status.CLOSED).count()
    return f"{study.status}:{closed}:{votes['count']}:{votes['last']}"


def _cached(
    study: Study, kind: str, parameters: dict, compute, *, with_array: bool = False, depends_on: str = ""
):
    """A StudyFigure for the study's current fingerprint (plus ``depends_on``): read it, or compute
    and store it."""
    key = kind + ":" + json.dumps(parameters, sort_keys=True)
    fingerprint = study_state_key(study=study) + depends_on
    figure = StudyFigure.objects.filter(study=study, key=key).first()
    if figure is not None and figure.fingerprint == fingerprint:
        return (figure.value, _load_array(figure.array)) if with_array else figure.value
    produced = compute()
    value, array = produced if with_array else (produced, None)
    StudyFigure.objects.update_or_create(
        study=study,
        key=key,
        defaults={
            "kind": kind,
            "parameters": parameters,
            "fingerprint": fingerprint,
            "value": value,
            "array": _dump_array(array) if array is not None else None,
        },
    )
    return (value, array) if with_array else value


def _dump_array(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array.astype(np.float32), allow_pickle=False)
    return buffer.getvalue()


def _load_array(blob) -> np.ndarray | None:
    if blob is None:
        return None
    return np.load(io.BytesIO(bytes(blob)), allow_pickle=False).astype(np.float64)


def human_replicates(*, study: Study) -> np.ndarray:
    """Bootstrap replicates (R × N) of the study's scores ȳ, cached; the same for every model of the
    study, so that model comparisons are paired. Seeded by the study, so they are reproducible."""

    def compute():
        votes = study_votes(study=study)
        rng = np.random.default_rng([study.seed, 20250])
        replicates = bootstrap_scores(votes.ballots, votes.item_count, rng, replicate_count(votes.item_count))
        return {"replicates": int(replicates.shape[0]), "items": votes.item_count}, replicates

    return _cached(study, "bootstrap", {}, compute, with_array=True)[1]


def chance_for(*, study: Study, item_count: int, weight_offset: float) -> dict:
    """The chance level of ρ_w and τ_w for ``item_count`` items and this n0, cached per study."""

    def compute():
        draws = replicate_count(item_count)
        rng = np.random.default_rng([study.seed, 4428, item_count])
        level = chance_level(item_count, rng, weight_offset=weight_offset, draws=draws)
        return {
            name: {
                "mean": level[name]["mean"],
                "sd": level[name]["sd"],
                "draws": level[name]["draws"].tolist(),
            }
            for name in ("rho_w", "tau_w")
        } | {"items": item_count, "weight_offset": weight_offset, "draw_count": draws}

    value = _cached(study, "chance", {"items": item_count, "n0": weight_offset}, compute)
    for name in ("rho_w", "tau_w"):
        value[name]["draws"] = np.asarray(value[name]["draws"])
    return value


# --- submissions ---------------------------------------------------------------------------------


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
            raise ServiceError(
                f"the file is {len(data):,} bytes; the limit is {MAX_SUBMISSION_BYTES:,} bytes (5 MiB)",
                status=413,
            )
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


def submission_parse(*, study: Study, data, source_format: str) -> np.ndarray:
    """Scores by item index (NaN where not given) from submitted rows, or a ServiceError listing the
    first offending rows: unknown items, duplicates, missing, non-numeric, NaN or infinite scores."""
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
    for _, index, a, b in items:
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
        elif row.get("token_a") not in (None, "") and row.get("token_b") not in (None, ""):
            index = index_of_pair.get((_normalise(row["token_a"]), _normalise(row["token_b"])))
            if index is None:
                errors.append(
                    f"{where}: ({row['token_a']!r}, {row['token_b']!r}) is not an item of study {study.slug!r}"
                )
                continue
        else:
            errors.append(f"{where}: give the item id, or token_a and token_b")
            continue
        raw = row.get("score")
        try:
            value = float(raw) if not isinstance(raw, bool) else math.nan
        except (TypeError, ValueError):
            errors.append(f"{where}: the score {raw!r} is not a number")
            continue
        if not math.isfinite(value):
            errors.append(f"{where}: the score {raw!r} is not a finite number")
            continue
        if index in first_seen:
            errors.append(f"{where}: this item was already scored at {first_seen[index]}")
            continue
        first_seen[index] = where
        scores[index] = value
    if errors:
        shown = errors[:MAX_REPORTED_ERRORS]
        more = len(errors) - len(shown)
        raise ServiceError(
            f"the submission has {len(errors)} problem(s); nothing was stored",
            errors=shown + ([f"… and {more} more"] if more else []),
        )
    return scores


def submission_create(
    *, study: Study, owner, model_name: str, data, source_format: str, description: str = ""
) -> Submission:
    """Store a model's scores for a finished study; evaluate at once when small, else in a task.

    Refused: a study that has not finished (409), a model name the owner already used for this
    study (409), coverage below the study's minimum (400), and any bad row (400, listed).
    """
    if source_format not in ("json", "csv"):
        raise ServiceError(f"the format must be json or csv, got {source_format!r}")
    model_name = " ".join(str(model_name or "").split())
    if not model_name or len(model_name) > 100:
        raise ServiceError("model_name must be 1 to 100 characters long")
    if study.status != Study.Status.FINISHED:
        raise StudyStateError(
            f"study {study.slug!r} is {study.status}: models are evaluated against its final ranking, once it has finished"
        )
    scores = submission_parse(study=study, data=data, source_format=source_format)
    covered = int(np.isfinite(scores).sum())
    coverage = covered / scores.size
    if covered < 2 or coverage < study.minimum_coverage:
        raise ServiceError(
            f"the submission scores {covered} of {scores.size} items ({coverage:.1%}); this study needs at least "
            f"{study.minimum_coverage:.0%} and two items"
        )
    try:
        with transaction.atomic():
            submission = Submission.objects.create(
                study=study,
                owner=owner,
                model_name=model_name,
                description=description or "",
                scores=[None if not math.isfinite(v) else float(v) for v in scores],
                covered=covered,
                coverage=coverage,
                source_format=source_format,
            )
    except IntegrityError:
        raise StudyStateError(
            f"you already submitted a model named {model_name!r} for this study; submissions are never replaced, "
            "so choose another name"
        ) from None
    if covered <= SYNC_EVALUATION_ITEMS:
        submission_evaluate(submission_id=submission.pk)
        submission.refresh_from_db()
    else:
        from metrics.tasks import submission_evaluate_task

        enqueue_on_commit(submission_evaluate_task, submission.pk, recovered_by="the submissions sweep")
    return submission


def _model_score(submission: Submission) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in submission.scores], dtype=np.float64)


def _progress(submission_id: int, percent: int) -> None:
    Submission.objects.filter(pk=submission_id).update(progress=percent)


def submissions_sweep(*, now: datetime | None = None, stale_seconds: int = 60) -> int:
    """Start again the evaluations still pending after ``stale_seconds`` (their task was never sent,
    e.g. the broker was down when they were stored); returns how many (Celery beat)."""
    from metrics.tasks import submission_evaluate_task

    now = now or timezone.now()
    pending = list(
        Submission.objects.filter(
            status=Submission.Status.PENDING, created_at__lte=now - timedelta(seconds=stale_seconds)
        ).values_list("pk", flat=True)
    )
    for submission_id in pending:
        enqueue(submission_evaluate_task, submission_id, recovered_by="the next submissions sweep")
    return len(pending)


def submission_evaluate(*, submission_id: int) -> Evaluation | None:
    """The evaluation at the study's defaults (n0 = 2, its K), storing status and progress."""
    submission = Submission.objects.select_related("study").filter(pk=submission_id).first()
    if submission is None:
        logger.warning("submission %s does not exist", submission_id)
        return None
    Submission.objects.filter(pk=submission_id).update(status=Submission.Status.RUNNING, progress=5, error="")
    try:
        evaluation = evaluation_for(
            submission=submission,
            weight_offset=DEFAULT_WEIGHT_OFFSET,
            top_k=submission.study.default_top_k(submission.study.items.count()),
            progress=lambda percent: _progress(submission_id, percent),
        )
    except Exception as exc:  # recorded for the model owner, then raised for the worker's log
        Submission.objects.filter(pk=submission_id).update(status=Submission.Status.FAILED, error=str(exc))
        raise
    Submission.objects.filter(pk=submission_id).update(status=Submission.Status.DONE, progress=100)
    return evaluation


def evaluation_for(*, submission: Submission, weight_offset: float, top_k: int, progress=None) -> Evaluation:
    """The submission's evaluation for this n0 and K: stored once, then read back."""
    if not math.isfinite(weight_offset) or weight_offset <= -1:
        raise ServiceError(f"n0 must be a number greater than -1, got {weight_offset}")
    if weight_offset > MAX_WEIGHT_OFFSET:
        raise ServiceError(f"{MAX_WEIGHT_OFFSET_MESSAGE}, got {weight_offset:g}")
    study = submission.study
    item_count = len(submission.scores)
    if not 1 <= top_k <= item_count:
        raise ServiceError(f"K must lie between 1 and the study's {item_count} items, got {top_k}")
    existing = Evaluation.objects.filter(
        submission=submission, weight_offset=weight_offset, top_k=top_k
    ).first()
    if existing is not None:
        return existing
    human = final_scores(study=study)
    if progress:
        progress(20)
    replicates = human_replicates(study=study)
    if progress:
        progress(50)
    model = _model_score(submission)
    covered = int((np.isfinite(model) & np.isfinite(human)).sum())
    chance = chance_for(study=study, item_count=covered, weight_offset=weight_offset)
    if progress:
        progress(70)
    result = evaluate(
        model, human, weight_offset=weight_offset, top_k=top_k, human_replicates=replicates, chance=chance
    )
    if progress:
        progress(95)
    evaluation, _ = Evaluation.objects.get_or_create(
        submission=submission, weight_offset=weight_offset, top_k=top_k, defaults={"result": result}
    )
    return evaluation


def public_result(result: dict) -> dict:
    """An evaluation result without its bootstrap replicate values (kept for the leaderboard)."""
    return {key: value for key, value in result.items() if key != "replicates"}


# --- leaderboard and annotators ------------------------------------------------------------------


def leaderboard_for(
    *, study: Study, metric: str = "tau_w", weight_offset: float = DEFAULT_WEIGHT_OFFSET
) -> dict:
    """Every submission of the study ranked by ``metric``, with paired-bootstrap intervals and ranks."""
    if metric not in COEFFICIENTS:
        raise ServiceError(f"metric must be one of {', '.join(COEFFICIENTS)}, got {metric!r}")
    item_count = study.items.count()
    top_k = study.default_top_k(item_count)
    entries, details = [], {}
    for submission in Submission.objects.filter(study=study).select_related("owner").order_by("created_at"):
        evaluation = evaluation_for(submission=submission, weight_offset=weight_offset, top_k=top_k)
        name = f"{submission.model_name} ({submission.owner.get_username()})"
        result = evaluation.result
        entries.append(
            {
                "name": name,
                "value": result[metric]["value"],
                "replicates": result.get("replicates", {}).get(metric, []),
            }
        )
        details[name] = {
            "submission": submission.pk,
            "model_name": submission.model_name,
            "owner": submission.owner.get_username(),
            "coverage": submission.coverage,
            "submitted_at": submission.created_at.isoformat(),
            "metrics": {name_: result[name_] for name_ in COEFFICIENTS},
        }
    rows = leaderboard(entries, metric) if entries else []
    for row in rows:
        row.update(details[row["name"]])
    return {
        "study": study.slug,
        "metric": metric,
        "weight_offset": weight_offset,
        "top_k": top_k,
        "replicates": replicate_count(item_count),
        "rows": rows,
    }


def annotator_view(*, study: Study) -> dict:
    """Each submitted model's agreement with each annotator's decisive votes (Welty Tables 2-3)."""
    votes = study_votes(study=study)
    models = {
        f"{s.model_name} ({s.owner.get_username()})": _model_score(s)
        for s in Submission.objects.filter(study=study).select_related("owner").order_by("created_at")
    }
    if not models:
        return {"models": {}, "paired_tests": [], "annotators": 0}
    view = annotator_agreement(
        models, votes.chosen, votes.rejected, votes.chosen_annotator, votes.annotator_ids.size
    )
    for entry in view["models"].values():
        entry["per_annotator"] = [None if not math.isfinite(v) else float(v) for v in entry["per_annotator"]]
    view["annotators"] = int(votes.annotator_ids.size)
    return view


# --- the instrument card -------------------------------------------------------------------------

CARD_VERSION = 3  # 3: "changes", the settings changed after the start


def instrument_card(*, study: Study) -> dict:
    """The metrology datasheet of a study (Welty §5), cached until the study changes."""
    replications = Study.objects.filter(
        Q(duplicated_from=study) | Q(pk=study.duplicated_from_id), status=Study.Status.FINISHED
    ).values_list("pk", "finished_at")
    depends_on = "|replications:" + ",".join(
        f"{pk}@{finished.isoformat()}" for pk, finished in sorted(replications)
    )
    # The trail is insert-only: its last row says whether a setting changed since the card was made.
    depends_on += f"|changes:{study.changes.aggregate(last=Max('pk'))['last']}"
    return _cached(
        study, "card", {"version": CARD_VERSION}, lambda: _compute_card(study), depends_on=depends_on
    )


def _study_changes(study: Study) -> list[dict]:
    """The settings changed after the start, oldest first. The card is public: who changed them is
    left to the admin and the staff API, and the values of private settings (completion code and
    URL, which would let anyone claim a crowd platform's payment) are left out."""
    from collection.studies import STUDY_SETTINGS

    entries = []
    for change in study.changes.all():
        setting = STUDY_SETTINGS.get(change.setting)
        private = setting is None or setting.private
        entries.append(
            {
                "changed_at": change.changed_at.isoformat(),
                "study_status": change.study_status,
                "setting": change.setting,
                "label": setting.label if setting else change.setting,
                "channel": change.channel,
                "private": private,
                "from": None if private else change.old_value,
                "to": None if private else change.new_value,
            }
        )
    return entries


def _compute_card(study: Study) -> dict:
    from collection.studies import study_plan

    votes = study_votes(study=study)
    item_count = votes.item_count
    plan = study_plan(study=study, item_count=item_count).as_dict() if item_count >= 2 else None
    ballots = list(
        study.ballots.order_by("number").values(
            "number",
            "status",
            "opened_at",
            "closed_at",
            "comparison_count",
            "votes_recorded",
            "rescale_slope",
        )
    )
    areas = list(
        study.areas.annotate(
            tokens_count=Count("tokens", distinct=True), items_count=Count("items", distinct=True)
        ).values("name", "tokens_count", "items_count")
    )
    response_ms = np.array(
        list(Vote.objects.filter(ballot__study=study).values_list("response_ms", flat=True)), dtype=float
    )
    per_annotator = np.array(
        list(
            Vote.objects.filter(ballot__study=study)
            .values("annotator")
            .annotate(n=Count("pk"))
            .values_list("n", flat=True)
        ),
        dtype=float,
    )
    card = {
        "version": CARD_VERSION,
        "study": {"name": study.name, "slug": study.slug, "status": study.status},
        "procedure": {
            "question": study.question,
            "instructions": study.instructions,
            "allow_ties": study.allow_ties,
            "item_source": study.item_source or "not recorded",
            "areas": areas,
            "tokens": study.tokens.count(),
            "rare_tokens": study.tokens.filter(rare=True).count(),
            "items": item_count,
            "plan": plan,
            "lease_seconds": study.lease_seconds,
            "votes_per_annotator_per_ballot": study.votes_per_annotator_per_ballot,
            "dates": {
                "created": study.created_at.isoformat(),
                "started": study.started_at.isoformat() if study.started_at else None,
                "finished": study.finished_at.isoformat() if study.finished_at else None,
            },
            "ballots": [
                {
                    **b,
                    "opened_at": b["opened_at"].isoformat(),
                    "closed_at": b["closed_at"].isoformat() if b["closed_at"] else None,
                }
                for b in ballots
            ],
            "annotators": int(votes.annotator_ids.size),
            "votes": int(sum(b.vote_count for b in votes.ballots)),
            "votes_per_annotator": _describe(per_annotator),
            "response_ms": _describe(response_ms),
        },
        "changes": _study_changes(study),
        "principle": (
            "Annotators compare two items (pairs of tokens) and choose the one whose tokens are more related; "
            "an item's score is its Borda win ratio, rescaled across ballots and averaged (Lombardo et al., Eq. 1, 5, 6). "
            "Ballots keep only the top fraction of items, so top ranks are measured with more comparisons."
        ),
    }
    if not votes.ballots:
        card["precision"] = card["repeatability"] = card["resolution"] = card["chance"] = None
        card["reproducibility"] = []
        return card

    score = _current_scores(study, item_count)
    rng = np.random.default_rng([study.seed, 2305])
    replicates = bootstrap_scores(votes.ballots, item_count, rng, replicate_count(item_count))
    precision = precision_summary(replicates)
    card["precision"] = {
        "method": "bootstrap of the votes within each ballot, the ballots' items held fixed",
        "replicates": int(replicates.shape[0]),
        "mean_sd": precision["mean_sd"],
        "sd_quantiles": _describe(precision["sd"]),
        "items": [
            {
                "index": int(i),
                "score": _float(score[i]),
                "sd": _float(precision["sd"][i]),
                "lower": _float(precision["lower"][i]),
                "upper": _float(precision["upper"][i]),
            }
            for i in range(item_count)
        ],
    }
    annotator_count = int(votes.annotator_ids.size)
    repeatability = {"split_half": None, "krippendorff_alpha": None}
    if annotator_count >= 2:
        halves = split_half_reliability(
            votes.ballots, item_count, annotator_count, np.random.default_rng([study.seed, 12]), splits=100
        )
        repeatability["split_half"] = {
            "splits": halves["splits"],
            "rho": halves["rho"],
            "rho_w": halves["rho_w"],
            "ballot_one_rho": halves["ballot_one_rho"],
            "ranking": "by ballot reached, then by the half's score ȳ",
        }
    units, counts = pair_value_counts(votes.pair_low, votes.pair_high, votes.winner_is_low)
    if units.size >= 2 and (counts.sum(axis=0) > 0).sum() >= 2:
        alpha = krippendorff.alpha(value_counts=counts, level_of_measurement="nominal")
        repeatability["krippendorff_alpha"] = {
            "alpha": _float(alpha),
            "pairs": int(units.size),
            "votes": int(counts.sum()),
        }
    card["repeatability"] = repeatability
    resolved = resolution(votes.pair_low, votes.pair_high, votes.winner_is_low, score)
    curve = resolved.pop("curve")
    resolved["curve"] = {key: [float(v) for v in values] for key, values in curve.items()}
    card["resolution"] = resolved
    chance = chance_level(
        item_count, np.random.default_rng([study.seed, 4428]), draws=replicate_count(item_count)
    )
    card["chance"] = {
        name: {"mean": chance[name]["mean"], "sd": chance[name]["sd"]} for name in ("rho_w", "tau_w")
    } | {
        "weight_offset": DEFAULT_WEIGHT_OFFSET,
        "draws": chance["draw_count"],
    }
    card["reproducibility"] = _reproducibility_entries(study, score, precision["sd"])
    return card


def _reproducibility_entries(study: Study, score: np.ndarray, sd: np.ndarray) -> list[dict]:
    """Agreement with every finished replication of the same items (a duplicate, or its original)."""
    related = list(Study.objects.filter(duplicated_from=study, status=Study.Status.FINISHED))
    if study.duplicated_from_id:
        related += list(Study.objects.filter(pk=study.duplicated_from_id, status=Study.Status.FINISHED))
    entries = []
    for other in related:
        other_items = other.items.count()
        if other_items != score.size:
            continue
        other_score = _current_scores(other, other_items)
        other_votes = study_votes(study=other)
        other_sd = precision_summary(
            bootstrap_scores(
                other_votes.ballots,
                other_items,
                np.random.default_rng([other.seed, 2305]),
                replicate_count(other_items),
            )
        )["sd"]
        try:
            entry = reproducibility(score, other_score, sd, other_sd)
        except ValueError:
            continue
        entries.append(
            {"study": other.slug, "name": other.name}
            | {k: _float(v) if isinstance(v, float) else v for k, v in entry.items()}
        )
    return entries


def _current_scores(study: Study, item_count: int) -> np.ndarray:
    """Final scores of a finished study; for a running one, each item's latest ȳ."""
    if study.status == Study.Status.FINISHED:
        return final_scores(study=study)
    from collection.models import ItemScore

    score = np.full(item_count, np.nan)
    for index, value in (
        ItemScore.objects.filter(ballot__study=study)
        .order_by("ballot__number")
        .values_list("item__index", "score")
    ):
        score[index] = np.nan if value is None else value
    return score


def _describe(values: np.ndarray) -> dict | None:
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None
    q = np.quantile(values, [0.0, 0.25, 0.5, 0.75, 1.0])
    return {
        "count": int(values.size),
        "mean": float(values.mean()),
        "min": float(q[0]),
        "q1": float(q[1]),
        "median": float(q[2]),
        "q3": float(q[3]),
        "max": float(q[4]),
    }


def _float(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def submissions_of(*, owner, study: Study | None = None):
    """A model owner's own submissions, newest first."""
    queryset = Submission.objects.filter(owner=owner).select_related("study")
    return queryset.filter(study=study) if study is not None else queryset


def items_for_model_owners(*, study: Study):
    """The items a model owner scores: ids and tokens of a finished study's items, no human scores."""
    if study.status != Study.Status.FINISHED:
        raise StudyStateError(
            f"study {study.slug!r} is {study.status}: its items are open for models once it has finished"
        )
    return Item.objects.filter(study=study).select_related("token_a", "token_b", "area").order_by("index")
