"""The metrics REST API: model owners list a finished study's pairs, submit their model's scores and
read the evaluations; anyone reads the leaderboard and the per-annotator view.

Views stay thin: validate the request, call one service, serialize what it returns. Every error body
is ``{"detail": message}``, with ``"errors"`` listing the first offending rows or fields (``common.api``).
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated, ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.renderers import BaseRenderer
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from collection.models import Study
from common.api import error_response, get_or_404
from common.csvexport import csv_text
from common.errors import ServiceError, StudyStateError
from common.parsers import JSONParser
from common.throttling import AddressThrottle, LoginLocked, UserThrottle, login_locked_out, login_succeeded
from metrics import services
from metrics.instrument import (
    DRAFT_MESSAGE,
    card_json_data,
    card_progress,
    card_wait_seconds,
    instrument_card_or_request,
)
from metrics.judges import judge_pairs
from metrics.leaderboard import annotator_view, leaderboard_for
from metrics.models import Kind, Seal, Submission
from metrics.selectors import items_for_model_owners, submissions_of
from metrics.serializers import (
    AnnotatorViewSerializer,
    AuthTokenResponseSerializer,
    CardComputingSerializer,
    CardSerializer,
    EvaluationQuerySerializer,
    EvaluationSerializer,
    JudgeCreatedSerializer,
    JudgeCreateSerializer,
    JudgeDetailSerializer,
    JudgeEvaluationSerializer,
    JudgeLeaderboardSerializer,
    JudgePairSerializer,
    JudgeSerializer,
    JudgeUploadSerializer,
    LeaderboardQuerySerializer,
    LeaderboardSerializer,
    PairSerializer,
    SealCreateSerializer,
    SealSerializer,
    SubmissionCreatedSerializer,
    SubmissionCreateSerializer,
    SubmissionDetailSerializer,
    SubmissionSerializer,
    SubmissionUploadSerializer,
)

WRONG_CREDENTIALS = "wrong username or password; ask an administrator if you have forgotten yours"
LOGIN_HINT = (
    "log in first: send the header 'Authorization: Token <key>' (POST your username and password to "
    "/api/auth/token/ to get the key), or log in at /models/login/"
)


# The header of a 202 "being computed" answer (the card, and the dataset that carries it).
RETRY_AFTER_202 = OpenApiParameter(
    "Retry-After",
    OpenApiTypes.INT,
    location=OpenApiParameter.HEADER,
    response=[202],
    required=True,
    description="Seconds to wait before asking again.",
)


class MetricsErrors:
    """A request without credentials is 401 and says how to log in (the body is ``common.api``'s)."""

    authentication_classes = [TokenAuthentication, SessionAuthentication]  # 401 with WWW-Authenticate

    def permission_denied(self, request, message=None, code=None):
        if request.authenticators and not request.successful_authenticator:
            raise NotAuthenticated(LOGIN_HINT)
        super().permission_denied(request, message=message, code=code)


def _study_or_404(slug: str) -> Study:
    return get_or_404(
        Study.objects, f"there is no study {slug!r}; /models/ lists the finished studies", slug=slug
    )


def _own_submission(request, submission_id: int, kind: str = Kind.MODEL) -> Submission:
    # The same answer for an unknown id and another owner's: nothing about others' submissions leaks.
    listed = "/api/submissions/" if kind == Kind.MODEL else "/api/judges/"
    return get_or_404(
        submissions_of(owner=request.user, kind=kind),
        f"{'submission' if kind == Kind.MODEL else 'judge'} {submission_id} is not one of yours; GET {listed} lists yours",
        pk=submission_id,
    )


def _require_finished(study: Study) -> None:
    if study.status != Study.Status.FINISHED:
        raise StudyStateError(
            f"study {study.slug!r} is {study.status}: its leaderboard opens once it has finished"
        )


# --- token -----------------------------------------------------------------------------------------


class TokenObtainView(ObtainAuthToken):
    """DRF's obtain_auth_token, documented: a username and password give the user's API token."""

    throttle_classes = [AddressThrottle]
    throttle_scope = "token"
    parser_classes = [JSONParser, FormParser, MultiPartParser]  # DRF's, with the bounded JSON parser
    # The credentials are in the body: a stale token or session sent along must not refuse the request.
    authentication_classes = []

    def get_authenticate_header(self, request):
        return 'Token realm="api"'  # wrong credentials are 401 (DRF would make them 403 without a scheme)

    @extend_schema(
        summary="Your API token, from your username and password",
        operation_id="auth_token_create",
        tags=["model owners"],
        request=AuthTokenSerializer,
        responses={
            200: AuthTokenResponseSerializer,
            400: error_response("The username or the password is missing."),
            401: error_response("Wrong username or password."),
            429: error_response("Too many failed logins for this username from this address."),
        },
        auth=[],
    )
    def post(self, request, *args, **kwargs):
        try:
            response = super().post(request, *args, **kwargs)
        except ValidationError as exc:
            if login_locked_out(request):  # django-axes refused it before reading the password
                raise LoginLocked() from None
            if "authorization" in exc.get_codes().get("non_field_errors", []):
                raise AuthenticationFailed(WRONG_CREDENTIALS) from None
            raise
        # A token is a login: it clears the failures from this address, as a login page's success does.
        login_succeeded(request, username=request.data["username"])
        return response


# --- uploads ---------------------------------------------------------------------------------------


class SubmissionJSONParser(JSONParser):
    """JSON of at most 5 MiB; NaN and Infinity reach the service, which names their rows, and so do
    numbers a 64-bit float cannot hold, with the text sent (``services.json_number``)."""

    strict = False
    max_bytes = services.MAX_SUBMISSION_BYTES
    parse_float = staticmethod(services.json_number)

    def too_large(self, size: int) -> str:
        return (
            f"the request body is larger than {self.limit():,} bytes (5 MiB); send fewer rows per model, "
            "or scores by item id, which take less space than token pairs"
        )


def _submitted(request) -> dict:
    """model_name, description, data and source_format of a JSON or multipart submission."""
    if request.content_type.startswith("multipart/form-data"):
        upload = request.FILES.get("file")
        if upload is None:
            raise ServiceError(
                "no file received: send the CSV as the multipart form field 'file' "
                "(with model_name), or send JSON with model_name and scores"
            )
        data = services.scores_file_read(upload)
        serializer = SubmissionUploadSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        fields = serializer.validated_data
        return {
            "model_name": fields["model_name"],
            "description": fields["description"],
            "data": data,
            "source_format": "csv",
        }
    serializer = SubmissionCreateSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    fields = serializer.validated_data
    return {
        "model_name": fields["model_name"],
        "description": fields["description"],
        "data": fields["scores"],
        "source_format": "json",
    }


# --- model owners ----------------------------------------------------------------------------------

OWNER_ERRORS = {401: error_response("No credentials: log in or send your API token.")}


class PairsView(MetricsErrors, GenericAPIView):
    """The items of a finished study, to score with a model: ids and tokens, no human scores."""

    permission_classes = [IsAuthenticated]
    serializer_class = PairSerializer

    @extend_schema(
        summary="The items of a finished study to score (ids and tokens; no human scores)",
        operation_id="studies_pairs_list",
        tags=["model owners"],
        responses={
            200: PairSerializer(many=True),
            **OWNER_ERRORS,
            404: error_response("No such study."),
            409: error_response("The study has not finished."),
        },
    )
    def get(self, request, slug: str):
        items = items_for_model_owners(study=_study_or_404(slug))
        page = self.paginate_queryset(items)
        return self.get_paginated_response(PairSerializer(page, many=True).data)


class SubmissionCreateView(MetricsErrors, APIView):
    """Submit a model's scores of a finished study's items; small submissions are evaluated at once."""

    permission_classes = [IsAuthenticated]
    parser_classes = [SubmissionJSONParser, MultiPartParser]
    throttle_classes = [UserThrottle]
    throttle_scope = "submissions"

    @extend_schema(
        summary="Submit a model's scores (JSON rows, or a CSV file); evaluated at once or in the background",
        operation_id="studies_submissions_create",
        tags=["model owners"],
        request={
            "application/json": SubmissionCreateSerializer,
            "multipart/form-data": SubmissionUploadSerializer,
        },
        responses={
            201: OpenApiResponse(SubmissionCreatedSerializer, description="Stored and evaluated."),
            202: OpenApiResponse(
                SubmissionCreatedSerializer, description="Stored; the evaluation runs in the background."
            ),
            400: error_response(
                "Bad rows (listed in errors), too low a coverage, or missing fields; nothing was stored."
            ),
            **OWNER_ERRORS,
            404: error_response("No such study."),
            409: error_response("The study has not finished, or you already used this model name for it."),
            413: error_response("The file or request is larger than 5 MiB."),
            500: error_response(
                "The evaluation failed on our side: a plain message with a reference. The submission does not "
                "count against your models and its name is free: submit it again."
            ),
        },
    )
    def post(self, request, slug: str):
        study = _study_or_404(slug)
        submission = services.submission_create(study=study, owner=request.user, **_submitted(request))
        return _created(submission, SubmissionCreatedSerializer, "model_name", "covered")


def _created(submission: Submission, serializer, name_field: str, count_field: str) -> Response:
    """201 for a submission (model or judge) evaluated at once, 202 for one evaluated in a task."""
    detail = "metrics-api:submission-detail" if submission.kind == Kind.MODEL else "metrics-api:judge-detail"
    body = serializer(
        {
            "id": submission.pk,
            name_field: submission.model_name,
            count_field: submission.covered,
            "coverage": submission.coverage,
            "status": submission.status,
            "progress": submission.progress,
            "url": reverse(detail, args=[submission.pk]),
        }
    ).data
    done = submission.status == Submission.Status.DONE
    return Response(body, status=status.HTTP_201_CREATED if done else status.HTTP_202_ACCEPTED)


class SealView(MetricsErrors, APIView):
    """A model owner's seals for a study: a scores file committed by its SHA-256 before it is shown."""

    permission_classes = [IsAuthenticated]
    throttle_classes = [UserThrottle]
    throttle_scope = "submissions"

    @extend_schema(
        summary="Your seals for this study",
        operation_id="studies_seals_list",
        tags=["model owners"],
        responses={200: SealSerializer(many=True), **OWNER_ERRORS, 404: error_response("No such study.")},
    )
    def get(self, request, slug: str):
        study = _study_or_404(slug)
        seals = Seal.objects.filter(study=study, owner=request.user).select_related("submission")
        return Response(SealSerializer([_seal_row(seal) for seal in seals], many=True).data)

    @extend_schema(
        summary="Seal a model's scores file by its SHA-256, before the study's results are out",
        description="The submission of the same model name must then be that very file (multipart "
        "`file`); its SHA-256 is checked, and the leaderboard shows when it was sealed and the study's "
        "status then. A seal takes one of the owner's variants (`max_variants_per_owner`).",
        operation_id="studies_seals_create",
        tags=["model owners"],
        request=SealCreateSerializer,
        responses={
            201: SealSerializer,
            400: error_response("A model name or SHA-256 that is not one."),
            **OWNER_ERRORS,
            404: error_response("No such study."),
            409: error_response(
                "This model name is sealed or submitted already, or your variants are used up."
            ),
        },
    )
    def post(self, request, slug: str):
        study = _study_or_404(slug)
        serializer = SealCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        seal = services.seal_create(study=study, owner=request.user, **serializer.validated_data)
        return Response(SealSerializer(_seal_row(seal)).data, status=status.HTTP_201_CREATED)


def _seal_row(seal: Seal) -> dict:
    revealed = getattr(seal, "submission", None) if seal.pk else None
    return {
        "id": seal.pk,
        "model_name": seal.model_name,
        "kind": seal.kind,
        "sha256": seal.sha256,
        "sealed_at": seal.sealed_at,
        "study_status": seal.study_status,
        "submission_id": revealed.pk if revealed is not None else None,
    }


class SubmissionListView(MetricsErrors, GenericAPIView):
    """The model owner's own submissions, newest first."""

    permission_classes = [IsAuthenticated]
    serializer_class = SubmissionSerializer

    @extend_schema(
        summary="Your submissions, newest first",
        operation_id="submissions_list",
        tags=["model owners"],
        responses={200: SubmissionSerializer(many=True), **OWNER_ERRORS},
    )
    def get(self, request):
        page = self.paginate_queryset(submissions_of(owner=request.user))
        return self.get_paginated_response(SubmissionSerializer(page, many=True).data)


def _evaluation_when_done(submission: Submission) -> None:
    """Refuse other n0 and K before the evaluation at the defaults is done (409)."""
    if submission.status != Submission.Status.DONE:
        raise StudyStateError(
            f"the {'submission' if submission.kind == Kind.MODEL else 'judge'} is {submission.status}"
            + (f" ({submission.error})" if submission.error else "")
            + ": other n0 and K can be asked for once its evaluation is done"
        )


def _default_evaluation(submission: Submission) -> dict | None:
    """The evaluation at the study's defaults (n0 = 2, its K), once it is done: over the development
    part of a study that keeps a hidden test part."""
    if submission.status != Submission.Status.DONE:
        return None
    return services.public_result(services.owner_evaluation(submission=submission).result)


class SubmissionDetailView(MetricsErrors, APIView):
    """One of the owner's submissions, with its evaluation at the study's defaults once it is done."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        summary="One of your submissions: status, progress, coverage and, once done, its evaluation",
        operation_id="submissions_retrieve",
        tags=["model owners"],
        responses={
            200: SubmissionDetailSerializer,
            **OWNER_ERRORS,
            404: error_response("Not one of your submissions."),
        },
    )
    def get(self, request, submission_id: int):
        submission = _own_submission(request, submission_id)
        context = {
            "evaluation": _default_evaluation(submission),
            "test_part": services.test_part_summary(submission=submission),
        }
        return Response(SubmissionDetailSerializer(submission, context=context).data)


class SubmissionEvaluationView(MetricsErrors, APIView):
    """The evaluation of one of the owner's submissions at another n0 and K (stored once computed)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        summary="The evaluation of one of your submissions for another n0 and K",
        operation_id="submissions_evaluation_retrieve",
        tags=["model owners"],
        parameters=[EvaluationQuerySerializer],
        responses={
            200: EvaluationSerializer,
            400: error_response("n0 (from -0.9 to 1,000,000) or K out of range."),
            **OWNER_ERRORS,
            404: error_response("Not one of your submissions."),
            409: error_response("The evaluation at the defaults has not finished, or it failed."),
        },
    )
    def get(self, request, submission_id: int):
        return _evaluation_answer(request, _own_submission(request, submission_id), EvaluationSerializer)


def _evaluation_answer(request, submission: Submission, serializer) -> Response:
    """The owner's evaluation of a model or a judge at the query's n0 and K, once the defaults' is done."""
    query = EvaluationQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    _evaluation_when_done(submission)
    evaluation = services.owner_evaluation(
        submission=submission,
        weight_offset=query.validated_data["n0"],
        top_k=query.validated_data.get("k"),
    )
    return Response(serializer(services.public_result(evaluation.result)).data)


# --- public ----------------------------------------------------------------------------------------

LEADERBOARD_COLUMNS = [
    "rank",
    "rank_low",
    "rank_high",
    "model_name",
    "owner",
    "metric",
    "n0",
    "value",
    "interval_low",
    "interval_high",
    "chance_mean",
    "chance_sd",
    "p_value",
    "coverage",
    "indistinguishable_from",
    "submitted_at",
    "variants",
    "adjusted_interval_low",
    "adjusted_interval_high",
    "undefined",
]


JUDGE_COLUMNS = [
    "majority_accuracy",
    "crowd_majority_accuracy",
    "kappa",
    "crowd_kappa",
    "indistinguishable_from_crowd",
    "direction",
    "verdict",
]


class LeaderboardCsvRenderer(BaseRenderer):
    """The leaderboard as CSV, one row per model; an error as a one-column CSV of its messages."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"
    columns = LEADERBOARD_COLUMNS

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if not isinstance(data, dict) or "rows" not in data:
            body = data if isinstance(data, dict) else {"detail": data}
            lines = [[body.get("detail", "")], *([line] for line in body.get("errors", []))]
            return csv_text(["detail"], lines).encode(self.charset)
        return csv_text(self.columns, self._rows(data)).encode(self.charset)

    def _rows(self, data):
        for row in data["rows"]:
            coefficient = row["metrics"][data["metric"]]
            interval = row["interval"] or [None, None]
            rank_range = row["rank_range"] or [None, None]  # an undefined value is not ranked
            yield (
                [
                    row["rank"],
                    rank_range[0],
                    rank_range[1],
                    row.get("model_name", row.get("judge_name")),
                    row["owner"],
                    data["metric"],
                    data["weight_offset"],
                    _csv_number(row["value"]),
                    _csv_number(interval[0]),
                    _csv_number(interval[1]),
                    _csv_number(coefficient.get("chance_mean")),
                    _csv_number(coefficient.get("chance_sd")),
                    _csv_number(coefficient.get("p_value")),
                    _csv_number(row["coverage"]),
                    "; ".join(row["indistinguishable_from"]),
                    row["submitted_at"],
                    row["variants"],
                    _csv_number((row["interval_adjusted"] or [None, None])[0]),
                    _csv_number((row["interval_adjusted"] or [None, None])[1]),
                    coefficient.get("undefined", ""),
                    *self._extra(row),
                ]
            )

    @staticmethod
    def _extra(row) -> list:
        return []


class JudgeLeaderboardCsvRenderer(LeaderboardCsvRenderer):
    """The judges' leaderboard as CSV: the models' columns (judge_name for model_name), then the judge's
    agreement with the crowd and its verdict."""

    columns = [
        "judge_name" if column == "model_name" else column for column in LEADERBOARD_COLUMNS
    ] + JUDGE_COLUMNS

    @staticmethod
    def _extra(row) -> list:
        judge = row["judge"]
        majority, kappa, verdict = judge["majority"], judge["kappa"], judge["verdict"]
        return [
            _csv_number(majority["value"]),
            _csv_number(majority["crowd"]["value"]),
            _csv_number(kappa["value"]),
            _csv_number(kappa["crowd"]["value"]),
            "yes" if verdict["indistinguishable"] else "no",
            verdict["direction"],
            verdict["sentence"],
        ]


def _csv_number(value) -> float | None:
    """A number cell (written as a number, never escaped as text); empty when there is none."""
    return None if value is None else float(value)


class LeaderboardView(MetricsErrors, APIView):
    """Every model of a finished study by one metric, with paired-bootstrap intervals and rank ranges."""

    permission_classes = [AllowAny]
    renderer_classes = [*api_settings.DEFAULT_RENDERER_CLASSES, LeaderboardCsvRenderer]
    kind = Kind.MODEL
    board_serializer = LeaderboardSerializer
    download_name = "leaderboard"

    @extend_schema(
        summary="The leaderboard: models by one metric with intervals, rank ranges and ties (?format=csv)",
        operation_id="studies_leaderboard_retrieve",
        tags=["public"],
        auth=[],
        parameters=[
            LeaderboardQuerySerializer,
            OpenApiParameter(
                "format", OpenApiTypes.STR, enum=["json", "csv"], description="csv: download as a CSV file."
            ),
        ],
        responses={
            (200, "application/json"): LeaderboardSerializer,
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="One row per model."),
            400: error_response("Unknown metric, or an n0 the leaderboard does not offer."),
            404: error_response("No such study."),
            409: error_response("The study has not finished."),
        },
    )
    def get(self, request, slug: str):
        return self.board(request, slug)

    def board(self, request, slug: str) -> Response:
        """The leaderboard of ``kind`` as JSON, or as a CSV download."""
        study = _study_or_404(slug)
        _require_finished(study)
        query = LeaderboardQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        metric, weight_offset = query.validated_data["metric"], query.validated_data["n0"]
        board = leaderboard_for(study=study, metric=metric, weight_offset=weight_offset, kind=self.kind)
        response = Response(self.board_serializer(board).data)
        if request.accepted_renderer.format == "csv":
            filename = f"{study.slug}-{self.download_name}-{metric}-n0-{weight_offset:g}.csv"
            response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


class AnnotatorsView(MetricsErrors, APIView):
    """Each model's agreement with each annotator (Welty Tables 2-3) and paired tests across them."""

    permission_classes = [AllowAny]

    @extend_schema(
        summary="Each model's agreement with each annotator's votes, and paired t-tests across annotators",
        operation_id="studies_annotators_retrieve",
        tags=["public"],
        auth=[],
        responses={
            200: AnnotatorViewSerializer,
            404: error_response("No such study."),
            409: error_response("The study has not finished."),
        },
    )
    def get(self, request, slug: str):
        study = _study_or_404(slug)
        _require_finished(study)
        return Response(AnnotatorViewSerializer(annotator_view(study=study)).data)


CARD_COMPUTING = (
    "the instrument card of study {slug!r} is being computed ({items:,} items); ask again in {wait} seconds"
)


class CardView(MetricsErrors, APIView):
    """The instrument card of a study as data: the dict of the card's .json download, with its version.

    Public, as the card page is, for a study that has started (a running study's card fills in as its
    ballots close); a draft has no card (409). A large card that is not computed yet is computed in
    the background: 202 with Retry-After meanwhile.
    """

    permission_classes = [AllowAny]

    @extend_schema(
        summary="The study's instrument card: procedure, precision, repeatability, resolution, chance level",
        operation_id="studies_card_retrieve",
        tags=["public"],
        auth=[],
        parameters=[
            RETRY_AFTER_202,
        ],
        responses={
            200: CardSerializer,
            202: OpenApiResponse(
                CardComputingSerializer,
                description="The card is being computed in the background: ask again after Retry-After seconds.",
            ),
            404: error_response("No such study."),
            409: error_response("The study is a draft: nothing has been measured yet."),
        },
    )
    def get(self, request, slug: str):
        study = _study_or_404(slug)
        if study.is_draft:
            raise StudyStateError(DRAFT_MESSAGE.format(slug=study.slug))
        card = instrument_card_or_request(study=study)
        if card is None:
            items = study.items.count()
            wait = card_wait_seconds(items)
            body = {
                "detail": CARD_COMPUTING.format(slug=study.slug, items=items, wait=wait),
                "retry_after": wait,
                "progress": card_progress(study=study),
            }
            return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Retry-After": str(wait)})
        return Response(card_json_data(card))


# --- judges ----------------------------------------------------------------------------------------


def _own_judge(request, judge_id: int) -> Submission:
    return _own_submission(request, judge_id, kind=Kind.JUDGE)


class JudgeJSONParser(SubmissionJSONParser):
    """JSON of at most 16 MiB: the decisions of 200,000 pairs."""

    max_bytes = services.MAX_JUDGE_BYTES

    def too_large(self, size: int) -> str:
        return (
            f"the request body is larger than {self.limit():,} bytes (16 MiB); upload the decisions as a CSV file "
            "(pair,decision), which takes a third of the space"
        )


def _judge_submitted(request) -> dict:
    """judge_name, description, data and source_format of a JSON or multipart judge."""
    if request.content_type.startswith("multipart/form-data"):
        upload = request.FILES.get("file")
        if upload is None:
            raise ServiceError(
                "no file received: send the CSV or JSONL as the multipart form field 'file' (with judge_name), "
                "or send JSON with judge_name and decisions"
            )
        data = services.judge_file_read(upload)
        serializer = JudgeUploadSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return {**_named(serializer.validated_data), "data": data, "source_format": "file"}
    serializer = JudgeCreateSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    return {
        **_named(serializer.validated_data),
        "data": serializer.validated_data["decisions"],
        "source_format": "json",
    }


def _named(fields: dict) -> dict:
    return {"judge_name": fields["judge_name"], "description": fields["description"]}


class _Listing:
    """A judge pair listing as the paginator slices it: one query per page (``JudgePairs.rows``)."""

    def __init__(self, pairs):
        self.pairs = pairs

    def __len__(self) -> int:
        return self.pairs.count

    def __getitem__(self, window: slice) -> list[dict]:
        return self.pairs.rows(window.start or 0, window.stop)


class JudgePairsView(MetricsErrors, GenericAPIView):
    """The pairs a judge decides: every pair the crowd voted on in a finished study, numbered, with the
    items as shown (left, right) and their tokens; no votes."""

    permission_classes = [IsAuthenticated]
    serializer_class = JudgePairSerializer

    @extend_schema(
        summary="The pairs of a finished study for a judge to decide (numbered; items and tokens, no votes)",
        operation_id="studies_judge_pairs_list",
        tags=["model owners"],
        responses={
            200: JudgePairSerializer(many=True),
            **OWNER_ERRORS,
            404: error_response("No such study."),
            409: error_response("The study has not finished."),
        },
    )
    def get(self, request, slug: str):
        page = self.paginate_queryset(_Listing(judge_pairs(study=_study_or_404(slug))))
        return self.get_paginated_response(JudgePairSerializer(page, many=True).data)


class JudgeCreateView(MetricsErrors, APIView):
    """Submit a judge's decisions on a finished study's pairs; small judges are evaluated at once."""

    permission_classes = [IsAuthenticated]
    parser_classes = [JudgeJSONParser, MultiPartParser]
    throttle_classes = [UserThrottle]
    throttle_scope = "submissions"

    @extend_schema(
        summary="Submit a judge's decisions (JSON rows, or a CSV or JSONL file); evaluated at once or in the background",
        operation_id="studies_judges_create",
        tags=["model owners"],
        request={"application/json": JudgeCreateSerializer, "multipart/form-data": JudgeUploadSerializer},
        responses={
            201: OpenApiResponse(JudgeCreatedSerializer, description="Stored and evaluated."),
            202: OpenApiResponse(
                JudgeCreatedSerializer, description="Stored; the evaluation runs in the background."
            ),
            400: error_response(
                "Bad rows (listed in errors: unknown pairs, duplicates, decisions that are not one, ties in a study "
                "without ties), too low a coverage, or missing fields; nothing was stored."
            ),
            **OWNER_ERRORS,
            404: error_response("No such study."),
            409: error_response(
                "The study has not finished, you already used this name for a model or a judge, or your judges are "
                "used up."
            ),
            413: error_response("The file or request is larger than 16 MiB."),
            500: error_response(
                "The evaluation failed on our side: a plain message with a reference; submit again."
            ),
        },
    )
    def post(self, request, slug: str):
        study = _study_or_404(slug)
        judge = services.judge_create(study=study, owner=request.user, **_judge_submitted(request))
        return _created(judge, JudgeCreatedSerializer, "judge_name", "decided")


class JudgeListView(MetricsErrors, GenericAPIView):
    """The owner's own judges, newest first."""

    permission_classes = [IsAuthenticated]
    serializer_class = JudgeSerializer

    @extend_schema(
        summary="Your judges, newest first",
        operation_id="judges_list",
        tags=["model owners"],
        responses={200: JudgeSerializer(many=True), **OWNER_ERRORS},
    )
    def get(self, request):
        page = self.paginate_queryset(submissions_of(owner=request.user, kind=Kind.JUDGE))
        return self.get_paginated_response(JudgeSerializer(page, many=True).data)


class JudgeDetailView(MetricsErrors, APIView):
    """One of the owner's judges, with its evaluation at the study's defaults once it is done."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        summary="One of your judges: status, progress, coverage and, once done, its evaluation",
        operation_id="judges_retrieve",
        tags=["model owners"],
        responses={
            200: JudgeDetailSerializer,
            **OWNER_ERRORS,
            404: error_response("Not one of your judges."),
        },
    )
    def get(self, request, judge_id: int):
        judge = _own_judge(request, judge_id)
        context = {
            "evaluation": _default_evaluation(judge),
            "test_part": services.test_part_summary(submission=judge),
        }
        return Response(JudgeDetailSerializer(judge, context=context).data)


class JudgeEvaluationView(MetricsErrors, APIView):
    """The evaluation of one of the owner's judges at another n0 and K (stored once computed)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        summary="The evaluation of one of your judges for another n0 and K",
        operation_id="judges_evaluation_retrieve",
        tags=["model owners"],
        parameters=[EvaluationQuerySerializer],
        responses={
            200: JudgeEvaluationSerializer,
            400: error_response("n0 (from -0.9 to 1,000,000) or K out of range."),
            **OWNER_ERRORS,
            404: error_response("Not one of your judges."),
            409: error_response("The evaluation at the defaults has not finished, or it failed."),
        },
    )
    def get(self, request, judge_id: int):
        return _evaluation_answer(request, _own_judge(request, judge_id), JudgeEvaluationSerializer)


class JudgeLeaderboardView(LeaderboardView):
    """Every judge of a finished study by one coefficient of its ranking, with its agreement and verdict."""

    renderer_classes = [*api_settings.DEFAULT_RENDERER_CLASSES, JudgeLeaderboardCsvRenderer]
    kind = Kind.JUDGE
    board_serializer = JudgeLeaderboardSerializer
    download_name = "judges-leaderboard"

    @extend_schema(
        summary="The judges' leaderboard: judges by a coefficient of their ranking, with κ, majority accuracy and "
        "the verdict (?format=csv)",
        operation_id="studies_judges_leaderboard_retrieve",
        tags=["public"],
        auth=[],
        parameters=[
            LeaderboardQuerySerializer,
            OpenApiParameter(
                "format", OpenApiTypes.STR, enum=["json", "csv"], description="csv: download as a CSV file."
            ),
        ],
        responses={
            (200, "application/json"): JudgeLeaderboardSerializer,
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="One row per judge."),
            400: error_response("Unknown metric, or an n0 the leaderboard does not offer."),
            404: error_response("No such study."),
            409: error_response("The study has not finished."),
        },
    )
    def get(self, request, slug: str):
        return self.board(request, slug)
