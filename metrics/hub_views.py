"""The Hugging Face dataset of a finished study (``metrics.hub``) as a zip download: a staff page's link
(/studies/<slug>/export/hub-dataset.zip) and the API (GET /api/studies/<slug>/hub-dataset/).

Both are the researchers' exports: staff only, and for a study that keeps a hidden test part its
researchers only, as the other exports (publishing a study is its researchers' decision), though
the dataset itself never holds the hidden part. The zip is written to a temporary file and streamed
from it, so memory stays flat whatever the study's size.
"""

from __future__ import annotations

from django.http import FileResponse, HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_safe
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import PermissionDenied
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from collection.models import Study
from collection.parts import HIDDEN_PART_REFUSAL, hidden_part_visible_to
from collection.permissions import IsStaff
from common.api import error_response, get_or_404
from common.errors import ServiceError
from metrics.api import RETRY_AFTER_202
from metrics.hub_card import DEFAULT_LICENSE, LICENSES, hub_options
from metrics.instrument import card_wait_seconds, instrument_card_or_request
from metrics.serializers import CardComputingSerializer
from scoring.views import researchers_only

ZIP_TYPE = "application/zip"
# metrics.hub is imported by the views that export: pyarrow and huggingface_hub would add about 30 MB to
# every web process (bench_load's RSS guard), for a download that a researcher makes now and then.
CARD_COMPUTING = (
    "the instrument card of study {slug!r} ({items} items), which the dataset's card carries, is being "
    "computed; ask again in about {wait} s"
)
QUERY = (
    OpenApiParameter(
        "license",
        OpenApiTypes.STR,
        enum=list(LICENSES),
        default=DEFAULT_LICENSE,
        description="The license written in the dataset card's header (a Hub license identifier).",
    ),
    OpenApiParameter(
        "language",
        OpenApiTypes.STR,
        default="en",
        description="The language(s) of the tokens: ISO 639 codes separated by commas, e.g. 'de,fr'.",
    ),
)


def _zip_response(study: Study, archive) -> FileResponse:
    return FileResponse(
        archive, as_attachment=True, filename=f"{study.slug}-hub-dataset.zip", content_type=ZIP_TYPE
    )


@researchers_only
@require_safe
def hub_dataset_download(request, slug: str):
    """The dataset folder as a zip (``?license=``, ``?language=`` as the API's); 409 before the end."""
    study = get_object_or_404(Study, slug=slug)
    try:
        options = hub_options(license=request.GET.get("license"), language=request.GET.get("language"))
        from metrics.hub import hub_dataset_zip

        archive = hub_dataset_zip(study=study, options=options)
    except ServiceError as exc:
        return HttpResponse(exc.message + "\n", status=exc.status, content_type="text/plain; charset=utf-8")
    return _zip_response(study, archive)


class JsonAnswers(BaseContentNegotiation):
    """Every answer but the zip is JSON, whatever ``Accept`` or ``?format=`` asks: the zip is a
    ``FileResponse``, which REST framework sends as it is, so a client asking for application/zip gets
    it, and its errors in the API's one format (REST framework's documented way to ignore the client)."""

    def select_parser(self, request, parsers):
        return parsers[0]

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class HubDatasetView(APIView):
    """GET /api/studies/{slug}/hub-dataset/: a finished study as a Hugging Face dataset, in a zip.

    The zip holds one folder, named for the study's slug, that ``datasets.load_dataset(folder)`` loads:
    ``README.md`` (the dataset card: the Hub's YAML header, the study's design, the instrument card) and
    ``data/items.parquet`` (the default config), ``data/votes.parquet`` and ``data/ballots.parquet``.
    Query: ``license`` (one of ``metrics.hub_card.LICENSES``, default cc-by-4.0) and ``language`` (ISO 639
    codes separated by commas, default en). Answers: 200 ``application/zip`` (attachment
    ``<slug>-hub-dataset.zip``); 202 JSON with ``Retry-After`` while the study's instrument card is
    computed in the background (a large study); 400 a bad option; 401/403 not staff, or not a
    researcher of a study with a hidden test part; 404 no such study; 409 the study is not finished.
    The hidden test part is never in the dataset.
    """

    permission_classes = [IsStaff]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = JsonAnswers

    @extend_schema(
        summary="A finished study as a Hugging Face dataset (zip of Parquet tables and a dataset card)",
        operation_id="studies_hub_dataset_retrieve",
        tags=["staff"],
        parameters=[
            *QUERY,
            RETRY_AFTER_202,
        ],
        responses={
            (200, ZIP_TYPE): OpenApiResponse(
                OpenApiTypes.BINARY,
                description="A zip of one folder <slug>/: README.md and data/{items,votes,ballots}.parquet.",
            ),
            (202, "application/json"): OpenApiResponse(
                CardComputingSerializer,
                description="The instrument card is being computed: ask again after Retry-After seconds.",
            ),
            # Every error is JSON, whatever the client accepted (JsonAnswers).
            (400, "application/json"): error_response("A license or language that is not offered."),
            (403, "application/json"): error_response(
                "Not staff, or not a researcher of a study that keeps a hidden test part."
            ),
            (404, "application/json"): error_response("No such study."),
            (409, "application/json"): error_response("The study is not finished."),
        },
    )
    def get(self, request, slug: str):
        study = get_or_404(
            Study.objects.all(), f"there is no study {slug!r}; GET /api/studies/ lists them", slug=slug
        )
        if not hidden_part_visible_to(request.user, study):
            raise PermissionDenied(HIDDEN_PART_REFUSAL.format(slug=study.slug))
        options = hub_options(
            license=request.query_params.get("license"), language=request.query_params.get("language")
        )
        from metrics.hub import hub_dataset_check, hub_dataset_zip

        hub_dataset_check(study=study)
        card = instrument_card_or_request(study=study)
        if card is None:
            items = study.items.count()
            wait = card_wait_seconds(items)
            body = {
                "detail": CARD_COMPUTING.format(slug=study.slug, items=items, wait=wait),
                "retry_after": wait,
            }
            return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Retry-After": str(wait)})
        return _zip_response(study, hub_dataset_zip(study=study, options=options, card=card))
