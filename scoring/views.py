"""Staff pages of a study's results and its exports (dataset as CSV and JSON, raw votes as CSV).

Staff only: anyone else is sent to the admin login. A study that keeps a hidden test part shows them to
its researchers only (``collection.parts.hidden_part_visible_to``); other staff get 403 and why. Exports
stream, so memory stays flat however many votes a study has.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from functools import wraps

import numpy as np
from django.contrib.admin.views.decorators import staff_member_required
from django.core.paginator import Paginator
from django.http import HttpResponseForbidden, QueryDict, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import NoReverseMatch, reverse

from collection.models import Ballot, Study
from collection.parts import HIDDEN_PART_REFUSAL, hidden_part_visible_to
from common.csvexport import csv_download
from scoring.exclusion import (
    WITHOUT_EXCLUDED_COLUMNS,
    scores_without_excluded,
    study_exclusion_totals,
    without_excluded_rows,
)
from scoring.exports import (
    ANNOTATOR_CSV_COLUMNS,
    CHECK_ANSWER_COLUMNS,
    VOTE_COLUMNS,
    dataset_export_columns,
    dataset_export_csv_rows,
    dataset_export_rows,
    study_annotator_rows,
    study_check_answer_rows,
    study_export_header,
    study_vote_rows,
)
from scoring.live import LIVE_CACHE_SECONDS, study_live
from scoring.plots import Series, rescaling_svg, scatter_svg, scores_by_rank_svg
from scoring.selectors import (
    ANNOTATOR_SORTS,
    QUALITY_FLAGS,
    AnnotatorFigures,
    BallotRescaling,
    ScoresByRank,
    StudyDataset,
    annotator_figures,
    ballot_rescaling,
    scores_by_rank,
    study_dataset,
    study_overview,
)
from scoring.side_by_side import side_by_side_page

RANKING_TOP = 50
ANNOTATORS_PER_PAGE = 50
# The annotator table's columns: (sort name, heading, numeric). The first click sorts a name A to Z
# and a figure from the largest down; the next click reverses.
ANNOTATOR_COLUMNS = (
    ("annotator", "Annotator", False),
    ("votes", "Votes", True),
    ("median_response", "Median response", True),
    ("fast", "Fast answers", True),
    ("left", "Left choices", True),
    ("left_p", "Position-bias p", True),
    ("ties", "Ties", True),
    ("majority", "Agreement with the majority", True),
    ("ranking", "Agreement with the final ranking", True),
    ("self", "Self-agreement", True),
    ("checks", "Checks right", True),
    ("flags", "Flags", False),
)
assert tuple(name for name, _, _ in ANNOTATOR_COLUMNS) == ANNOTATOR_SORTS


def researchers_only(view):
    """Staff only (else the admin login); for a study that keeps a hidden test part, its researchers only:
    every page and export here shows the scores, votes or ranks of every item (403 with why otherwise)."""

    @staff_member_required
    @wraps(view)
    def checked(request, slug: str):
        study = get_object_or_404(Study, slug=slug)
        if not hidden_part_visible_to(request.user, study):
            return HttpResponseForbidden(
                HIDDEN_PART_REFUSAL.format(slug=study.slug) + ".\n", content_type="text/plain; charset=utf-8"
            )
        return view(request, slug)

    return checked


@researchers_only
def results(request, slug: str):
    """The results page: header, ballot progress, Figures 2 and 4, top of the ranking, the score models
    side by side, annotators."""
    study = get_object_or_404(Study, slug=slug)
    context = {"study": study, "overview": study_overview(study=study), "admin_url": _admin_url(study)}
    if not study.is_draft:
        dataset = study_dataset(study=study)
        closed = list(study.ballots.filter(status=Ballot.Status.CLOSED, number__gte=2).order_by("number"))
        rescalings = [ballot_rescaling(ballot=ballot) for ballot in closed]
        context.update(
            dataset=dataset,
            ranking=dataset.top(RANKING_TOP),
            ranking_by_area=dataset.top_by_area(RANKING_TOP) if dataset.per_area else None,
            ranking_size=RANKING_TOP,
            rescaling_plots=[
                {
                    "ballot_number": data.ballot_number,
                    "rescale_slope": data.rescale_slope,
                    "area_rescale_slopes": sorted(ballot.area_rescale_slopes.items()),
                    "point_count": data.item_index.size,
                    "svg": rescaling_svg(
                        ballot_number=data.ballot_number,
                        win_ratio=data.win_ratio,
                        previous_score=data.previous_score,
                        rescale_slope=data.rescale_slope,
                    ),
                    "points": _rescaling_points(data, dataset),
                }
                for ballot, data in zip(closed, rescalings, strict=True)
            ],
            **_annotator_table(request.GET, annotator_figures(study=study)),
            side_by_side=side_by_side_page(study=study, dataset=dataset, limit=RANKING_TOP),
            without_excluded=scores_without_excluded(study=study),
            exclusion_totals=study_exclusion_totals(study=study),
        )
        if dataset.has_scores:
            by_rank = scores_by_rank(study=study, dataset=dataset)
            context["scores_by_rank_svg"] = scores_by_rank_svg(
                rank=by_rank.rank,
                win_ratio=by_rank.win_ratio,
                ballot_numbers=by_rank.ballot_numbers,
                score=by_rank.score,
                final=by_rank.final,
            )
            context["scores_by_rank_points"] = _scores_by_rank_points(by_rank, dataset)
    return render(request, "scoring/results.html", context)


# --- the plots' points as tables: their text alternative ------------------------------------------------


def _figure(value: float) -> str:
    """A plotted value as the tables print it: 4 decimals, a dash where nothing is plotted."""
    return f"{value:.4f}" if math.isfinite(value) else "—"


def _item_labels(dataset: StudyDataset) -> dict[int, str]:
    return {
        int(index): f"{a} – {b}"
        for index, a, b in zip(dataset.index, dataset.token_a, dataset.token_b, strict=True)
    }


def _rescaling_points(data: BallotRescaling, dataset: StudyDataset) -> dict:
    """Figure 2's points of ballot k, one row per item drawn, by x(k) from the highest (then by index)."""
    k = data.ballot_number
    labels = _item_labels(dataset)
    order = np.lexsort((data.item_index, -data.win_ratio))
    return {
        "caption": f"Ballot {k}: x({k}) and ȳ({k - 1}) of each item plotted",
        "header": [("Item", False), (f"x({k})", True), (f"ȳ({k - 1})", True)],
        "rows": [
            [
                (labels[int(data.item_index[i])], False),
                (_figure(data.win_ratio[i]), True),
                (_figure(data.previous_score[i]), True),
            ]
            for i in order
        ],
    }


def _scores_by_rank_points(data: ScoresByRank, dataset: StudyDataset) -> dict:
    """Figure 4's points, one row per item by rank: x(k) of each ballot and ȳ (a dash where not drawn)."""
    labels = _item_labels(dataset)
    order = np.lexsort((dataset.index, data.rank))
    which = "final" if data.final else "current"
    return {
        "caption": f"x(k) of each ballot and ȳ of each item, by its {which} rank",
        "header": [("Rank", True), ("Item", False)]
        + [(f"x({k})", True) for k in data.ballot_numbers]
        + [("ȳ", True)],
        "rows": [
            [(str(int(data.rank[i])), True), (labels[int(dataset.index[i])], False)]
            + [(_figure(x), True) for x in data.win_ratio[i]]
            + [(_figure(data.score[i]), True)]
            for i in order
        ],
    }


@researchers_only
def live(request, slug: str):
    """The live view of a study: its figures at load time; ``static/scoring/live.js`` fetches the page
    again every few seconds while the study runs and swaps the figures in."""
    study = get_object_or_404(Study, slug=slug)
    figures = study_live(study=study)
    context = {
        "study": study,
        "live": figures,
        "admin_url": _admin_url(study),
        "refresh_seconds": LIVE_CACHE_SECONDS,
        "series_svg": _series_svg(figures) if figures["series"] else None,
    }
    return render(request, "scoring/live.html", context)


def _series_svg(figures: dict) -> str:
    """Votes over time: the samples' votes against minutes before now."""
    now = figures["now"]
    minutes = [(sample["at"] - now).total_seconds() / 60 for sample in figures["series"]]
    votes = [sample["votes"] for sample in figures["series"]]
    return scatter_svg(
        title="Votes recorded over time",
        x_label="minutes before now",
        y_label="votes recorded",
        series=[Series(label="a sample a minute", x=minutes, y=votes, color="#0072B2")],
        x_limits=(min(minutes), 0.0),
        y_limits=(0.0, max(votes) or 1.0),
    )


@researchers_only
def export_dataset_csv(request, slug: str):
    """The dataset, one row per item in index order: tokens, area, ȳ, rank, totals, x per ballot, and
    every score model's score and rank."""
    study = get_object_or_404(Study, slug=slug)
    dataset = study_dataset(study=study)
    return csv_download(
        f"{study.slug}-dataset.csv",
        dataset_export_columns(dataset=dataset),
        dataset_export_csv_rows(dataset=dataset),
    )


@researchers_only
def export_dataset_json(request, slug: str):
    """{"study": {name, slug, plan, status, dates, ballots …}, "items": [one object per item]}."""
    study = get_object_or_404(Study, slug=slug)
    header = study_export_header(study=study)
    dataset = study_dataset(study=study)
    rows = dataset_export_rows(dataset=dataset)

    def chunks() -> Iterator[str]:
        yield '{"study": ' + json.dumps(header, ensure_ascii=False, allow_nan=False) + ', "items": ['
        for number, row in enumerate(rows):
            yield ("," if number else "") + "\n" + json.dumps(row, ensure_ascii=False, allow_nan=False)
        yield "\n]}\n"

    response = StreamingHttpResponse(chunks(), content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-dataset.json"'
    return response


@researchers_only
def export_votes_csv(request, slug: str):
    """The raw votes, one row per vote in the order recorded."""
    study = get_object_or_404(Study, slug=slug)
    return csv_download(f"{study.slug}-votes.csv", VOTE_COLUMNS, study_vote_rows(study=study))


@researchers_only
def export_check_answers_csv(request, slug: str):
    """The answers to the study's checks (gold and instructed-response), one row per answer."""
    study = get_object_or_404(Study, slug=slug)
    return csv_download(
        f"{study.slug}-checks.csv", CHECK_ANSWER_COLUMNS, study_check_answer_rows(study=study)
    )


@researchers_only
def export_annotators_csv(request, slug: str):
    """One row per annotator who voted: the figures and quality flags of the results page."""
    study = get_object_or_404(Study, slug=slug)
    return csv_download(
        f"{study.slug}-annotators.csv", ANNOTATOR_CSV_COLUMNS, study_annotator_rows(study=study)
    )


@researchers_only
def export_without_excluded_csv(request, slug: str):
    """Every item's final ȳ and rank with and without the excluded annotators' votes, design held fixed."""
    study = get_object_or_404(Study, slug=slug)
    return csv_download(
        f"{study.slug}-without-excluded.csv", WITHOUT_EXCLUDED_COLUMNS, without_excluded_rows(study=study)
    )


def _annotator_table(query: QueryDict, figures: AnnotatorFigures) -> dict:
    """The annotator table's page: sorted by ``?sort=`` (a column, ``-`` first for descending), filtered by
    ``?flag=`` (``any`` or a flag's code), paged by ``?page=``; every control a plain link."""
    sort = query.get("sort", "-votes")
    name, descending = sort.removeprefix("-"), sort.startswith("-")
    if name not in ANNOTATOR_SORTS:
        name, descending = "votes", True
    flag = query.get("flag")
    if flag != "any" and flag not in QUALITY_FLAGS:
        flag = None
    page = Paginator(
        figures.order(sort=name, descending=descending, flag=flag), ANNOTATORS_PER_PAGE
    ).get_page(query.get("page"))

    def link(**changes) -> str:
        changed = query.copy()
        for key, value in changes.items():
            changed.pop(key, None)
            if value is not None:
                changed[key] = value
        return "?" + changed.urlencode() + "#annotators-heading"

    columns = []
    for column, heading, numeric in ANNOTATOR_COLUMNS:
        current = column == name
        # The first click: a name A to Z, a figure largest first; on the current column, the reverse.
        next_descending = not descending if current else numeric or column == "flags"
        columns.append(
            {
                "heading": heading,
                "numeric": numeric,
                "url": link(sort=("-" if next_descending else "") + column, page=None),
                "aria_sort": ("descending" if descending else "ascending") if current else None,
            }
        )
    counts = figures.flag_counts()
    flagged = int(figures.flagged.sum())
    filters = [
        {"label": "all", "count": len(figures), "url": link(flag=None, page=None), "current": flag is None},
        {"label": "flagged", "count": flagged, "url": link(flag="any", page=None), "current": flag == "any"},
    ] + [
        {"label": label, "count": counts[code], "url": link(flag=code, page=None), "current": flag == code}
        for code, label in QUALITY_FLAGS.items()
    ]
    return {
        "annotators": figures.rows(page.object_list),
        "annotator_count": len(figures),
        "annotators_flagged": flagged,
        "annotators_simulated": int(figures.simulated.sum()),
        "annotator_thresholds": figures.thresholds,
        "annotator_columns": columns,
        "annotator_filters": filters,
        "annotator_page": page,
        "annotator_pages": {
            "first": link(page=None) if page.number > 1 else None,
            "previous": link(page=str(page.previous_page_number())) if page.has_previous() else None,
            "next": link(page=str(page.next_page_number())) if page.has_next() else None,
            "last": link(page=str(page.paginator.num_pages))
            if page.number < page.paginator.num_pages
            else None,
        },
    }


def _admin_url(study: Study) -> str | None:
    try:
        return reverse("admin:collection_study_change", args=[study.pk])
    except NoReverseMatch:  # the study admin is not registered
        return None
