"""Pages of judges: /models/ … (submit a judge, its pairs as CSV, a judge's evaluation, the judges'
leaderboard).

Submitting and reading a judge need a login, and a judge is shown to its owner only (anyone else gets a
404); the judges' leaderboard is public, as the models' is. The views validate the query, call one
service or selector and render.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_GET

from collection.models import Study
from common.csvexport import csv_download
from metrics import services
from metrics.evaluation import COEFFICIENTS, undefined_summary
from metrics.forms import JudgeForm
from metrics.judges import judge_pairs
from metrics.models import Kind
from metrics.views import (
    LOGIN_URL,
    METRIC_LABELS,
    _board_rows,
    _leaderboard_settings,
    _not_finished,
    _study,
    owned_evaluation,
    upload_page,
)
from scoring.selectors import study_crowd

JUDGE_PAIR_COLUMNS = [
    "pair",
    "left_item",
    "left_token_a",
    "left_token_b",
    "right_item",
    "right_token_a",
    "right_token_b",
]
PAIRS_PER_QUERY = 5000  # the listing reads the items of this many pairs at a time

AGREEMENT_LABELS = {
    "majority": "Accuracy against the crowd's majority",
    "single": "Accuracy against single annotators",
    "kappa": "Cohen's κ against the crowd",
}
DISAGREEMENT_LABELS = {
    "by_area": "By semantic area",
    "by_band": "By rank band (the top against the rest)",
    "by_closeness": "By how close the crowd was",
}


@login_required(login_url=LOGIN_URL)
def judge_submit(request, slug: str):
    """The upload form: a judge's decisions as CSV or JSONL → a stored judge, evaluated at once when small."""

    def create(study, owner, fields):
        return services.judge_create(
            study=study,
            owner=owner,
            judge_name=fields["judge_name"],
            description=fields["description"],
            data=services.judge_file_read(fields["file"]),
            source_format="file",
        )

    return upload_page(
        request,
        slug,
        form_class=JudgeForm,
        create=create,
        template="metrics/judge_submit.html",
        what="judges",
        done="metrics:judge",
    )


@login_required(login_url=LOGIN_URL)
@require_GET
def judge_pairs_csv(request, slug: str):
    """The study's judge pairs as CSV (pair, the left item and its tokens, the right item and its tokens):
    add a decision column and upload it."""
    study = _study(slug)
    if study.status != Study.Status.FINISHED:
        return _not_finished(request, study, "its pairs")
    pairs = judge_pairs(study=study)
    rows = (
        [row[column] for column in JUDGE_PAIR_COLUMNS]
        for start in range(0, pairs.count, PAIRS_PER_QUERY)
        for row in pairs.rows(start, start + PAIRS_PER_QUERY)
    )
    return csv_download(f"{study.slug}-judge-pairs.csv", JUDGE_PAIR_COLUMNS, rows)


def _coefficient_rows(ranking: dict) -> list[dict]:
    return [{"name": name, "label": METRIC_LABELS[name], **ranking[name]} for name in COEFFICIENTS]


def _judge_figures(result: dict) -> dict:
    """What the page shows of a judge's result: its agreement rows, ranking, disagreement tables, areas."""
    ranking = result["ranking"]
    return {
        "result": result,
        "agreement": [
            {"name": name, "label": label, **result["agreement"][name]}
            for name, label in AGREEMENT_LABELS.items()
        ],
        "coefficients": _coefficient_rows(ranking),
        "undefined": undefined_summary(ranking),
        "retrieval": ranking["retrieval"],
        "disagreement": [
            {"name": name, "label": label, "rows": result["disagreement"][name]}
            for name, label in DISAGREEMENT_LABELS.items()
            if (result.get("disagreement") or {}).get(name)
        ],
        "areas": [
            {"area": area["area"], "cells": [area.get(name) for name in COEFFICIENTS]}
            for area in result.get("areas") or []
        ],
    }


@login_required(login_url=LOGIN_URL)
@require_GET
def judge(request, judge_id: int):
    """One of the owner's judges: progress while it runs, then its evaluation at the chosen n0 and K."""
    found, context = owned_evaluation(request, judge_id, kind=Kind.JUDGE)
    context["judge"] = found
    if "evaluation" in context:
        test_part = context["test_part"]
        context.update(
            evaluation=_judge_figures(context["evaluation"]),
            test_part=_judge_figures(test_part) if test_part else None,
        )
    return render(request, "metrics/judge.html", context)


@require_GET
def judges_leaderboard(request, slug: str):
    """The public leaderboard of a finished study's judges, by a coefficient of their ranking at one n0."""
    study = _study(slug)
    if study.status != Study.Status.FINISHED:
        return _not_finished(request, study, "its judges' leaderboard")
    settings_form = _leaderboard_settings(request)
    context = {"study": study, "settings_form": settings_form, "metric_labels": METRIC_LABELS}
    if not settings_form.is_valid():
        return render(request, "metrics/judges_leaderboard.html", context, status=400)
    metric, weight_offset = settings_form.cleaned_data["metric"], settings_form.cleaned_data["n0"]
    board, rows = _board_rows(study, metric, weight_offset, kind=Kind.JUDGE)
    context.update(
        board=board,
        rows=rows,
        crowd=study_crowd(study=study),
        metric=metric,
        metric_label=METRIC_LABELS[metric],
        weight_offset=f"{weight_offset:g}",
        metric_links=[
            {"name": name, "label": METRIC_LABELS[name], "current": name == metric} for name in COEFFICIENTS
        ],
        submissions=[
            {**submission, "submitted_at": parse_datetime(submission["submitted_at"])}
            for submission in board["submissions"]
        ],
    )
    return render(request, "metrics/judges_leaderboard.html", context)
