"""Staff pages of a study's results and its exports (dataset as CSV and JSON, raw votes as CSV).

Staff only: anyone else is sent to the admin login. Exports stream, so memory stays flat however
many votes a study has.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.contrib.admin.views.decorators import staff_member_required
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import NoReverseMatch, reverse

from collection.models import Ballot, Study
from common.csvexport import csv_download
from scoring.exports import VOTE_COLUMNS, study_export_header, study_vote_rows
from scoring.plots import rescaling_svg, scores_by_rank_svg
from scoring.selectors import annotator_stats, ballot_rescaling, scores_by_rank, study_dataset, study_overview

RANKING_TOP = 50


@staff_member_required
def results(request, slug: str):
    """The results page: header, ballot progress, Figures 2 and 4, top of the ranking, annotators."""
    study = get_object_or_404(Study, slug=slug)
    context = {"study": study, "overview": study_overview(study=study), "admin_url": _admin_url(study)}
    if not study.is_draft:
        dataset = study_dataset(study=study)
        closed = study.ballots.filter(status=Ballot.Status.CLOSED, number__gte=2).order_by("number")
        rescalings = [ballot_rescaling(ballot=ballot) for ballot in closed]
        context.update(
            dataset=dataset,
            ranking=dataset.top(RANKING_TOP),
            ranking_size=RANKING_TOP,
            rescaling_plots=[
                {
                    "ballot_number": data.ballot_number,
                    "rescale_slope": data.rescale_slope,
                    "points": data.item_index.size,
                    "svg": rescaling_svg(
                        ballot_number=data.ballot_number,
                        win_ratio=data.win_ratio,
                        previous_score=data.previous_score,
                        rescale_slope=data.rescale_slope,
                    ),
                }
                for data in rescalings
            ],
            annotators=annotator_stats(study=study),
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
    return render(request, "scoring/results.html", context)


@staff_member_required
def export_dataset_csv(request, slug: str):
    """The dataset, one row per item in index order: tokens, area, ȳ, rank, totals, x per ballot."""
    study = get_object_or_404(Study, slug=slug)
    dataset = study_dataset(study=study)
    return csv_download(f"{study.slug}-dataset.csv", dataset.columns, dataset.csv_rows())


@staff_member_required
def export_dataset_json(request, slug: str):
    """{"study": {name, slug, plan, status, dates, ballots …}, "items": [one object per item]}."""
    study = get_object_or_404(Study, slug=slug)
    header = study_export_header(study=study)
    dataset = study_dataset(study=study)

    def chunks() -> Iterator[str]:
        yield '{"study": ' + json.dumps(header, ensure_ascii=False, allow_nan=False) + ', "items": ['
        for number, row in enumerate(dataset.rows()):
            yield ("," if number else "") + "\n" + json.dumps(row, ensure_ascii=False, allow_nan=False)
        yield "\n]}\n"

    response = StreamingHttpResponse(chunks(), content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-dataset.json"'
    return response


@staff_member_required
def export_votes_csv(request, slug: str):
    """The raw votes, one row per vote in the order recorded."""
    study = get_object_or_404(Study, slug=slug)
    return csv_download(f"{study.slug}-votes.csv", VOTE_COLUMNS, study_vote_rows(study=study))


def _admin_url(study: Study) -> str | None:
    try:
        return reverse("admin:collection_study_change", args=[study.pk])
    except NoReverseMatch:  # the study admin is not registered
        return None
