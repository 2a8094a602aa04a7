"""Pages for model owners and the public: /models/ …

The leaderboard and the per-annotator view are public; submitting and reading a submission need a
login, and a submission is shown to its owner only (anyone else gets a 404). Every number on these
pages comes from ``metrics.services``, ``metrics.leaderboard`` and ``metrics.selectors``; the views
validate the query, call one of them and render.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView, LogoutView
from django.db.models import Count, Q
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_GET

from collection.models import Study
from common.csvexport import csv_download
from common.errors import ServiceError
from metrics import services
from metrics.evaluation import (
    COEFFICIENTS,
    chance_sentence,
    chance_summary,
    chance_verdict,
    indistinguishable_groups,
    undefined_summary,
)
from metrics.figures import DEFAULT_WEIGHT_OFFSET, owner_part, part_top_k
from metrics.forms import EvaluationSettingsForm, LeaderboardSettingsForm, SubmissionForm
from metrics.leaderboard import annotator_view, leaderboard_for
from metrics.models import Kind, Submission
from metrics.selectors import items_for_model_owners, submissions_of
from scoring.plots import PALETTE, Interval, Series, intervals_svg, scatter_svg
from scoring.selectors import crowd_by_study, study_crowd

LOGIN_URL = "metrics:login"

METRIC_LABELS = {
    "rho_w": "ρ_w (weighted Spearman)",
    "tau_w": "τ_w (weighted Kendall)",
    "rho": "ρ (Spearman)",
    "tau": "τ (Kendall)",
}

login = LoginView.as_view(template_name="metrics/login.html", next_page="metrics:index")
logout = LogoutView.as_view(next_page="metrics:index")


def _study(slug: str) -> Study:
    return get_object_or_404(Study, slug=slug)


def _not_finished(request, study: Study, what: str):
    return render(request, "metrics/not_finished.html", {"study": study, "what": what}, status=409)


@require_GET
def index(request):
    """The finished studies with links to their leaderboards, and the owner's own submissions."""
    studies = (
        Study.objects.filter(status=Study.Status.FINISHED)
        .annotate(
            item_count=Count("items", distinct=True),
            submission_count=Count("submissions", filter=Q(submissions__kind=Kind.MODEL), distinct=True),
        )
        .order_by("-finished_at", "name")
    )
    submissions = (
        submissions_of(owner=request.user) if request.user.is_authenticated else Submission.objects.none()
    )
    studies = list(studies)
    crowds = crowd_by_study(study_ids=[study.pk for study in studies])
    for study in studies:
        study.crowd = crowds[study.pk]
    return render(request, "metrics/index.html", {"studies": studies, "submissions": submissions})


def _leaderboard_settings(request) -> LeaderboardSettingsForm:
    """The metric and n0 of the query (tau_w and 2 when not given), validated."""
    return LeaderboardSettingsForm(
        {"metric": request.GET.get("metric", "tau_w"), "n0": request.GET.get("n0", "2")}
    )


def _board_rows(
    study: Study, metric: str, weight_offset: float, kind: str = Kind.MODEL
) -> tuple[dict, list[dict]]:
    """The leaderboard of ``study``'s models (or judges) by ``metric`` at ``weight_offset``, and its rows
    with the chosen metric's figures, their group that cannot be told apart and their chance verdict."""
    board = leaderboard_for(study=study, metric=metric, weight_offset=weight_offset, kind=kind)
    groups = indistinguishable_groups(board["rows"])
    rows = [
        {
            **row,
            "chosen": row["metrics"][metric],
            "group": group,
            "chance_verdict": chance_verdict(row["metrics"][metric]),
            "sealed_at": parse_datetime(row["sealed_at"]) if row.get("sealed_at") else None,
        }
        for row, group in zip(board["rows"], groups, strict=True)
    ]
    return board, rows


@require_GET
def leaderboard(request, slug: str):
    """The public leaderboard of a finished study for one metric and n0, and the per-annotator view."""
    study = _study(slug)
    if study.status != Study.Status.FINISHED:
        return _not_finished(request, study, "its leaderboard")
    settings_form = _leaderboard_settings(request)
    if not settings_form.is_valid():
        context = {"study": study, "settings_form": settings_form, "metric_labels": METRIC_LABELS}
        return render(request, "metrics/leaderboard.html", context, status=400)
    metric, weight_offset = settings_form.cleaned_data["metric"], settings_form.cleaned_data["n0"]
    board, rows = _board_rows(study, metric, weight_offset)
    submissions = [
        {**submission, "submitted_at": parse_datetime(submission["submitted_at"])}
        for submission in board["submissions"]
    ]
    agreement = annotator_view(study=study)
    context = {
        "study": study,
        "board": board,
        "crowd": study_crowd(study=study),
        # Said in words: each model whose figure is at or below chance, and whether any is above it.
        "chance_sentences": [
            f"{row['name']}: {chance_sentence(metric, row['chosen'])}"
            for row in rows
            if row["chance_verdict"] in ("at", "below")
        ],
        "none_above_chance": bool(rows) and all(row["chance_verdict"] in ("at", "below") for row in rows),
        "replicate_count": board["replicates"],
        "rows": rows,
        "metric": metric,
        "metric_label": METRIC_LABELS[metric],
        # The column's header: the symbol, and its name that a phone keeps for screen readers only.
        "metric_symbol": METRIC_LABELS[metric].split(" (")[0],
        "metric_name": METRIC_LABELS[metric].split(" (")[1].rstrip(")"),
        "submissions": submissions,
        "interval_svg": _interval_plot(rows, metric, weight_offset) if rows else None,
        "weight_offset": f"{weight_offset:g}",
        "metric_links": [
            {"name": name, "label": METRIC_LABELS[name], "current": name == metric} for name in COEFFICIENTS
        ],
        "metric_labels": METRIC_LABELS,
        "settings_form": settings_form,
        "area_rows": [
            {
                "model": row["model_name"],
                "area": area["area"],
                "items": area["items"],
                "covered": area["covered"],
                "cells": [area[name] for name in COEFFICIENTS],
                "undefined": undefined_summary(area),
            }
            for row in rows
            for area in row["areas"]
        ],
        "agreement": agreement,
        "agreement_rows": [{"name": name, **entry} for name, entry in agreement["models"].items()],
    }
    return render(request, "metrics/leaderboard.html", context)


@require_GET
def leaderboard_svg(request, slug: str):
    """The leaderboard's interval plot as an SVG file to download, for the query's metric and n0."""
    study = _study(slug)
    if study.status != Study.Status.FINISHED:
        return _not_finished(request, study, "its leaderboard")
    settings_form = _leaderboard_settings(request)
    if not settings_form.is_valid():
        problems = "; ".join(f"{field}: {' '.join(errors)}" for field, errors in settings_form.errors.items())
        return HttpResponseBadRequest(problems, content_type="text/plain; charset=utf-8")
    metric, weight_offset = settings_form.cleaned_data["metric"], settings_form.cleaned_data["n0"]
    _board, rows = _board_rows(study, metric, weight_offset)
    if not rows:
        raise Http404(f"no model has been submitted for {study.name} yet: there is nothing to plot")
    response = HttpResponse(_interval_plot(rows, metric, weight_offset), content_type="image/svg+xml")
    filename = f"{study.slug}-leaderboard-{metric}-n0-{weight_offset:g}.svg"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _interval_plot(rows: list[dict], metric: str, weight_offset: float) -> str:
    """The leaderboard's interval plot: each model's value and 95% interval, the groups that cannot be
    told apart on one band, and each model's chance level as a tick."""
    return intervals_svg(
        title=f"{METRIC_LABELS[metric]}, n0 = {weight_offset:g}: values and 95% intervals",
        x_label=METRIC_LABELS[metric],
        rows=[
            Interval(
                label=row["name"],
                value=row["value"],
                low=row["interval"][0] if row["interval"] else None,
                high=row["interval"][1] if row["interval"] else None,
                group=row["group"],
                reference=row["chosen"].get("chance_mean"),
            )
            for row in rows
        ],
        reference_label="chance level (mean of random rankings)",
    )


@login_required(login_url=LOGIN_URL)
def submit(request, slug: str):
    """The upload form: a model's scores as CSV → a stored submission, evaluated at once when small."""

    def create(study, owner, fields):
        return services.submission_create(
            study=study,
            owner=owner,
            model_name=fields["model_name"],
            description=fields["description"],
            data=services.scores_file_read(fields["file"]),
            source_format="csv",
        )

    return upload_page(
        request,
        slug,
        form_class=SubmissionForm,
        create=create,
        template="metrics/submit.html",
        what="model submissions",
        done="metrics:submission",
    )


def upload_page(request, slug: str, *, form_class, create, template: str, what: str, done: str):
    """An upload form of a finished study (a model's scores, a judge's decisions): ``create(study, owner,
    cleaned_data)`` stores it, then the page of ``done`` shows it; a refusal is shown on the form."""
    study = _study(slug)
    if study.status != Study.Status.FINISHED:
        return _not_finished(request, study, what)
    form = form_class(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            created = create(study, request.user, form.cleaned_data)
        except ServiceError as exc:
            context = {
                "study": study,
                "form": form,
                "problem": exc.message,
                "problems": exc.errors,
                "our_side": exc.status >= 500,
            }
            return render(request, template, context, status=exc.status)
        return redirect(done, created.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, template, {"study": study, "form": form}, status=status)


@login_required(login_url=LOGIN_URL)
@require_GET
def pairs_csv(request, slug: str):
    """The study's items as CSV (item, token_a, token_b, area): add a score column and upload it."""
    study = _study(slug)
    if study.status != Study.Status.FINISHED:
        return _not_finished(request, study, "its items")
    items = items_for_model_owners(study=study)
    rows = (
        [item.pk, item.token_a.text, item.token_b.text, item.area.name]
        for item in items.iterator(chunk_size=2000)
    )
    return csv_download(f"{study.slug}-items.csv", ["item", "token_a", "token_b", "area"], rows)


def owned_evaluation(request, submission_id: int, *, kind: str) -> tuple[Submission, dict]:
    """The owner's submission of ``kind`` (404 for anyone else's) and its page's context: the status
    while it runs; once done, its evaluation at the query's n0 and K (the defaults, with the problem,
    when they are refused) and its test part's summary, as public results."""
    found = submissions_of(owner=request.user, kind=kind).filter(pk=submission_id).first()
    if found is None:
        raise Http404(
            f"{'submission' if kind == Kind.MODEL else 'judge'} {submission_id} is not one of yours"
        )
    study = found.study
    part = owner_part(study)
    default_k = part_top_k(study, part)
    context = {"submission": found, "study": study, "metric_labels": METRIC_LABELS, "part": part}
    if found.status != Submission.Status.DONE:
        context["running"] = found.status in (Submission.Status.PENDING, Submission.Status.RUNNING)
        return found, context
    settings_form = EvaluationSettingsForm(
        {"n0": request.GET.get("n0", DEFAULT_WEIGHT_OFFSET), "k": request.GET.get("k", default_k)}
    )
    weight_offset, top_k, problem = DEFAULT_WEIGHT_OFFSET, default_k, None
    if settings_form.is_valid():
        weight_offset, top_k = settings_form.cleaned_data["n0"], settings_form.cleaned_data["k"]
    try:
        evaluation = services.owner_evaluation(submission=found, weight_offset=weight_offset, top_k=top_k)
    except ServiceError as exc:
        problem = exc.message
        evaluation = services.owner_evaluation(submission=found)
    context.update(
        settings_form=settings_form,
        problem=problem,
        evaluation=services.public_result(evaluation.result),
        test_part=services.test_part_summary(submission=found),
    )
    return found, context


@login_required(login_url=LOGIN_URL)
@require_GET
def submission(request, submission_id: int):
    """One of the owner's submissions: progress while it runs, then its evaluation at the chosen n0 and K."""
    found, context = owned_evaluation(request, submission_id, kind=Kind.MODEL)
    if "evaluation" not in context:
        return render(request, "metrics/submission.html", context)
    result = context["evaluation"]
    test_part = context["test_part"]
    retrieval = result["retrieval"]
    context.update(
        evaluation=result,
        test_part=[{"name": name, "label": METRIC_LABELS[name], **test_part[name]} for name in COEFFICIENTS]
        if test_part
        else None,
        test_part_items=test_part["items"] if test_part else None,
        test_part_undefined=undefined_summary(test_part) if test_part else [],
        undefined=undefined_summary(result),
        chance_sentences=chance_summary(result),
        test_part_chance=chance_summary(test_part) if test_part else [],
        coefficients=[
            {
                "name": name,
                "label": METRIC_LABELS[name],
                "has_chance": "chance_mean" in result[name],
                **result[name],
            }
            for name in COEFFICIENTS
        ],
        curve=list(zip(retrieval["recall_levels"], retrieval["interpolated_precision"], strict=True)),
        curve_svg=scatter_svg(
            title="11-point interpolated precision-recall",
            x_label="recall",
            y_label="interpolated precision",
            series=[
                Series(
                    label=f"{found.model_name}",
                    x=retrieval["recall_levels"],
                    y=retrieval["interpolated_precision"],
                    color=PALETTE[0],
                    radius=4.0,
                )
            ],
            x_limits=(0.0, 1.0),
            y_limits=(0.0, 1.0),
            width=600,
            height=380,
        ),
    )
    return render(request, "metrics/submission.html", context)
