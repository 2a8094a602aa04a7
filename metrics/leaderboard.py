"""The public leaderboard of a finished study and its per-annotator view: reads only.

Every model whose evaluation is done is ranked from its ``Standing`` at the n0 asked for, which
``metrics.services`` stores after the evaluation. A standing that is not stored yet (its task is still
queued, or the broker was down and the sweep has not run) is computed for this response from the
study's figures and not stored: a request that reads the leaderboard never writes a row.
"""

from __future__ import annotations

from django.db.models import Count

from collection.models import Study
from common.errors import ServiceError
from common.numbers import finite_or_none
from metrics.evaluation import COEFFICIENTS, annotator_agreement, leaderboard, variant_adjusted_interval
from metrics.figures import (
    DEFAULT_WEIGHT_OFFSET,
    owner_part,
    part_mask,
    part_top_k,
    ranked_part,
    ranking_of,
    replicate_count,
    submission_area_coefficients,
)
from metrics.judges import result_for
from metrics.models import Evaluation, Kind, Part, Standing, Submission
from metrics.selectors import model_scores, study_votes
from scoring.selectors import study_crowd

# The weight offsets the public leaderboard offers: each model has a standing stored at each of them,
# so the leaderboard reads, and an anonymous request cannot make the server compute at any float.
LEADERBOARD_WEIGHT_OFFSETS = (0.0, 1.0, 2.0, 5.0, 10.0)


def leaderboard_offsets_text() -> str:
    return ", ".join(f"{value:g}" for value in LEADERBOARD_WEIGHT_OFFSETS)


def standing_values(result: dict) -> dict:
    """The fields of a ``Standing`` from an evaluation result: the four coefficients and their values
    on the study's bootstrap replicates."""
    return {
        "coefficients": {name: result[name] for name in COEFFICIENTS},
        "replicates": result.get("replicates", {}),
    }


def has_plain_chance(coefficients: dict) -> bool:
    """Whether ρ and τ of an evaluation result (or a standing's coefficients) carry their chance level
    and p-value: those stored before the chance level covered them (``figures.CHANCE_VERSION`` 2) do
    not, and are recomputed (``metrics.services``)."""
    return all("p_value" in (coefficients.get(name) or {}) for name in ("rho", "tau"))


def leaderboard_for(
    *,
    study: Study,
    metric: str = "tau_w",
    weight_offset: float = DEFAULT_WEIGHT_OFFSET,
    kind: str = Kind.MODEL,
) -> dict:
    """Every evaluated submission of ``kind`` of the study (models, or judges by their ranking) ranked by
    ``metric``, with paired-bootstrap intervals and ranks (``metrics.evaluation.leaderboard``). A judge's
    row adds its agreement with the crowd and its verdict (``judge``), from its evaluation on the part
    ranked at the study's defaults.

    In a study that keeps a hidden test part, every figure of a row is over the test part alone (the
    public development part can be fitted), apart from ``areas``, which is over each area's development
    items (an area's few test items would be told apart by a per-area coefficient)."""
    if metric not in COEFFICIENTS:
        raise ServiceError(f"metric must be one of {', '.join(COEFFICIENTS)}, got {metric!r}")
    if weight_offset not in LEADERBOARD_WEIGHT_OFFSETS:
        raise ServiceError(f"the leaderboard offers n0 = {leaderboard_offsets_text()}, got {weight_offset:g}")
    item_count = study.items.count()
    part = ranked_part(study)
    top_k = part_top_k(study, part)
    submissions = list(
        Submission.objects.filter(study=study, kind=kind, status=Submission.Status.DONE)
        .select_related("study", "owner", "seal")
        .order_by("created_at")
    )
    stored = {
        standing.submission_id: {"coefficients": standing.coefficients, "replicates": standing.replicates}
        for standing in Standing.objects.filter(
            submission__in=submissions, weight_offset=weight_offset, part=part
        ).only("submission", "coefficients", "replicates")
    }
    entries, details, owners = [], {}, {}
    for submission in submissions:  # one per model
        standing = stored.get(submission.pk) or standing_values(
            ranking_of(
                submission,
                result_for(
                    submission=submission, weight_offset=weight_offset, top_k=top_k, part=part, store=False
                ),
            )
        )
        name = f"{submission.model_name} ({submission.owner.get_username()})"
        owners[name] = submission.owner_id
        coefficients = standing["coefficients"]
        entries.append(
            {
                "name": name,
                "value": coefficients[metric]["value"],
                "replicates": standing["replicates"].get(metric, []),
            }
        )
        details[name] = {
            "submission": submission.pk,
            # Committed by its SHA-256 before it was shown (metrics.models.Seal): when, and the study then.
            "sealed_at": submission.seal.sealed_at.isoformat() if submission.seal else None,
            "sealed_while": submission.seal.study_status if submission.seal else None,
            "model_name": submission.model_name,
            "owner": submission.owner.get_username(),
            "coverage": submission.coverage,
            "submitted_at": submission.created_at.isoformat(),
            "metrics": coefficients,
        }
        if kind == Kind.MODEL:
            # Where a model is weak: its coefficients on each semantic area's items (§2.1-2.2).
            details[name]["areas"] = submission_area_coefficients(
                submission=submission, weight_offset=weight_offset, store=False
            )
        else:
            details[name]["judge"] = judge_summary(submission=submission, part=part, top_k=top_k)
    rows = leaderboard(entries, metric) if entries else []
    # Every submission counts: an owner's variants are all their models for the study, whatever became
    # of them (but for one that failed on our side), and each of their rows gets an interval widened
    # for that many (Bonferroni).
    variants = dict(
        Submission.objects.filter(study=study, kind=kind)
        .exclude(status=Submission.Status.FAILED)
        .values_list("owner")
        .annotate(count=Count("pk"))
        .values_list("owner", "count")
    )
    replicates_of = {entry["name"]: entry["replicates"] for entry in entries}
    for row in rows:
        row.update(details[row["name"]])
        owner_variants = variants.get(owners[row["name"]], 1)
        row["variants"] = owner_variants
        row["interval_adjusted"] = variant_adjusted_interval(
            row["value"], replicates_of[row["name"]], owner_variants
        )
    listed = (
        Submission.objects.filter(study=study, kind=kind).select_related("owner").order_by("created_at", "pk")
    )
    return {
        "study": study.slug,
        "metric": metric,
        "weight_offset": weight_offset,
        "top_k": top_k,
        # The items the rows are computed on: all of them, or the hidden test part (how many, never which).
        "part": str(part),
        "part_items": int(part_mask(study, part).sum()),
        "areas_part": str(owner_part(study)),
        "replicates": replicate_count(item_count),
        "rows": rows,
        # The votes behind the human ranking: people's and simulated annotators' apart.
        "crowd": study_crowd(study=study).as_dict(),
        "submissions": [
            {
                "model_name": submission.model_name,
                "owner": submission.owner.get_username(),
                "status": submission.status,
                "submitted_at": submission.created_at.isoformat(),
            }
            for submission in listed
        ],
    }


def judge_summary(*, submission: Submission, part: str, top_k: int) -> dict:
    """A judge's agreement with the crowd (majority accuracy, κ with the crowd's own as its ceiling) and
    its verdict, aggregates over ``part`` at the study's defaults: its stored evaluation, or computed for
    this response without storing it."""
    evaluation = Evaluation.objects.filter(
        submission=submission, part=part, weight_offset=DEFAULT_WEIGHT_OFFSET, top_k=top_k
    ).first()
    result = (
        evaluation.result
        if evaluation is not None
        else result_for(
            submission=submission, weight_offset=DEFAULT_WEIGHT_OFFSET, top_k=top_k, part=part, store=False
        )
    )
    agreement = result["agreement"]
    return {
        "pairs": result["pairs"],
        "decided": result["decided"],
        "majority": agreement["majority"],
        "kappa": agreement["kappa"],
        "side": agreement["side"],
        "verdict": result["verdict"],
    }


def annotator_view(*, study: Study) -> dict:
    """Each submitted model's agreement with each annotator's decisive votes (Welty Tables 2-3).

    In a study that keeps a hidden test part, over the votes between two development items only: a vote
    that involves a test item tells which of its two items the crowd put higher, and an annotator with
    few such votes would have them read off their agreement with a model whose scores one knows."""
    votes = study_votes(study=study)
    chosen, rejected, annotator = votes.chosen, votes.rejected, votes.chosen_annotator
    if owner_part(study) == Part.DEVELOPMENT:
        development = part_mask(study, Part.DEVELOPMENT)
        public = development[chosen] & development[rejected]
        chosen, rejected, annotator = chosen[public], rejected[public], annotator[public]
    models = {
        f"{s.model_name} ({s.owner.get_username()})": model_scores(s)
        for s in Submission.objects.filter(study=study, kind=Kind.MODEL)
        .exclude(status=Submission.Status.FAILED)  # failed on our side: a retry may carry its name
        .select_related("owner")
        .order_by("created_at")
    }
    if not models:
        return {"models": {}, "paired_tests": [], "annotators": 0, "part": str(owner_part(study))}
    view = annotator_agreement(models, chosen, rejected, annotator, votes.annotator_ids.size)
    for entry in view["models"].values():
        entry["per_annotator"] = [finite_or_none(value) for value in entry["per_annotator"]]
    view["annotators"] = int(votes.annotator_ids.size)
    view["part"] = str(owner_part(study))
    return view
