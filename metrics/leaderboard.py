"""The public leaderboard of a finished study and its per-annotator view."""

from __future__ import annotations

from collection.models import Study
from common.errors import ServiceError
from common.numbers import finite_or_none
from metrics.evaluation import COEFFICIENTS, annotator_agreement, leaderboard
from metrics.figures import DEFAULT_WEIGHT_OFFSET, replicate_count
from metrics.models import Submission
from metrics.selectors import model_scores, study_votes
from metrics.services import evaluation_for

# The weight offsets the public leaderboard offers: each one evaluates every model of the study once
# and keeps the result, so an anonymous request cannot make the server store an evaluation per float.
LEADERBOARD_WEIGHT_OFFSETS = (0.0, 1.0, 2.0, 5.0, 10.0)


def leaderboard_offsets_text() -> str:
    return ", ".join(f"{value:g}" for value in LEADERBOARD_WEIGHT_OFFSETS)


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
        f"{s.model_name} ({s.owner.get_username()})": model_scores(s)
        for s in Submission.objects.filter(study=study).select_related("owner").order_by("created_at")
    }
    if not models:
        return {"models": {}, "paired_tests": [], "annotators": 0}
    view = annotator_agreement(
        models, votes.chosen, votes.rejected, votes.chosen_annotator, votes.annotator_ids.size
    )
    for entry in view["models"].values():
        entry["per_annotator"] = [finite_or_none(value) for value in entry["per_annotator"]]
    view["annotators"] = int(votes.annotator_ids.size)
    return view
