"""The REST API: staff manage studies and read results; annotators get comparisons and vote.

Views stay thin: validate with a serializer, call one service, serialize what it returns. Errors,
a ``ServiceError`` included, leave in the common format of ``common.api``; ``common.schema`` documents
the statuses every operation shares, and the views describe their own.
"""

from __future__ import annotations

from django.urls import reverse
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import ensure_csrf_cookie
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers, status, viewsets
from rest_framework.authentication import TokenAuthentication
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from collection import crowd, exclusion, jobs, leaving, lifecycle, pools, selectors, studies, voting
from collection.identity import (
    annotator_of_assignment,
    remembered_annotator_of_study,
    remembered_annotators,
)
from collection.languages import StudyTexts, annotator_language
from collection.models import Annotator, Exclusion, Study, StudyChange, StudyJob
from collection.permissions import (
    AnnotatorSessionAuthentication,
    HiddenPartResearchers,
    IsStaff,
    consented_annotator,
)
from collection.serializers import (
    BallotClosingSerializer,
    BallotProgressSerializer,
    CsvUploadSerializer,
    ExclusionRequestSerializer,
    ExclusionSerializer,
    FinishResultSerializer,
    ImportReportSerializer,
    ItemSerializer,
    ItemsGenerateSerializer,
    NextComparisonSerializer,
    PlanSerializer,
    ResultSerializer,
    StudyDuplicateSerializer,
    StudyJobSerializer,
    StudySerializer,
    TokenSerializer,
    TokensImportQuerySerializer,
    VoteRequestSerializer,
    VoteResultSerializer,
)
from common.api import error_response, get_or_404
from common.errors import ServiceError
from common.numbers import percent_done
from common.parsers import CSVParser
from common.throttling import ANNOTATOR_THROTTLES

# --- uploads -------------------------------------------------------------------------------------


def _too_large(size: int) -> str:
    return f"the file is {size:,} bytes; the limit is {pools.MAX_UPLOAD_BYTES:,} bytes (2 MiB)"


class CsvParser(CSVParser):
    """A raw ``text/csv`` upload, read no further than the size limit of uploads."""

    max_bytes = pools.MAX_UPLOAD_BYTES

    def too_large(self, size: int) -> str:
        return _too_large(size)


UPLOAD_PARSERS = [MultiPartParser, CsvParser]
UPLOAD_REQUEST = {"multipart/form-data": CsvUploadSerializer, "text/csv": OpenApiTypes.BINARY}
UPLOAD_RESPONSES = {
    201: ImportReportSerializer,
    400: error_response("The file has problems, listed by line in errors; nothing was imported."),
    409: error_response("The study has started; its pools are frozen."),
    413: error_response("The file is larger than 2 MiB."),
}


def uploaded_csv(request) -> bytes:
    """The CSV of an upload request: the multipart field ``file`` or a ``text/csv`` body."""
    if isinstance(request.data, bytes):
        return request.data
    if request.content_type.startswith("text/csv"):
        return b""  # an empty body, which DRF does not parse: the service says the file is empty
    upload = request.FILES.get("file")
    if upload is None:
        raise ServiceError(
            "no file received: send the CSV as the multipart form field 'file', "
            "or as the request body with the header 'Content-Type: text/csv'"
        )
    if upload.size > pools.MAX_UPLOAD_BYTES:
        raise ServiceError(_too_large(upload.size), status=413)
    return upload.read()


# --- staff ---------------------------------------------------------------------------------------

STAFF_ERRORS = {403: error_response("Logged in, but not as staff (no credentials, or invalid ones: 401).")}
FROZEN_SETTINGS = error_response(
    "A setting the study's state freezes (its plan, once started); nothing changed."
)


@extend_schema_view(
    list=extend_schema(summary="List studies", responses={200: StudySerializer(many=True), **STAFF_ERRORS}),
    create=extend_schema(summary="Create a draft study"),
    retrieve=extend_schema(summary="A study"),
    update=extend_schema(
        summary="Change a study (its plan only while it is a draft)",
        responses={200: StudySerializer, 409: FROZEN_SETTINGS},
    ),
    partial_update=extend_schema(
        summary="Change some fields of a study (its plan only while it is a draft)",
        responses={200: StudySerializer, 409: FROZEN_SETTINGS},
    ),
    destroy=extend_schema(
        summary="Delete a draft study",
        responses={204: None, 409: error_response("The study has started; its votes are kept.")},
    ),
)
@extend_schema(tags=["staff"])
class StudyViewSet(viewsets.ModelViewSet):
    """For staff: studies, their pools, plan, lifecycle and results."""

    queryset = Study.objects.select_related("created_by", "duplicated_from").prefetch_related("changes")
    serializer_class = StudySerializer
    permission_classes = [IsStaff, HiddenPartResearchers]
    lookup_field = "slug"
    lookup_value_regex = "[-a-zA-Z0-9_]+"

    def get_object(self) -> Study:
        slug = self.kwargs["slug"]
        study = get_or_404(
            self.get_queryset(), f"there is no study {slug!r}; GET /api/studies/ lists them", slug=slug
        )
        self.check_object_permissions(self.request, study)
        return study

    # The serializers check the shape of the fields; the services decide what each state allows.
    def perform_create(self, serializer):
        serializer.instance = studies.study_create(values=serializer.validated_data, user=self.request.user)

    def perform_update(self, serializer):
        serializer.instance = studies.study_update(
            study=serializer.instance,
            changes=serializer.validated_data,
            user=self.request.user,
            channel=StudyChange.Channel.API,
        )

    def perform_destroy(self, instance: Study):
        studies.study_delete(study=instance)

    # --- pools ---

    @extend_schema(summary="The study's tokens", responses={200: TokenSerializer(many=True), **STAFF_ERRORS})
    @action(detail=True, methods=["get"], parser_classes=UPLOAD_PARSERS, serializer_class=TokenSerializer)
    def tokens(self, request, slug=None):
        study = self.get_object()
        tokens = study.tokens.select_related("area").order_by("area__name", "text")
        page = self.paginate_queryset(tokens)
        return self.get_paginated_response(TokenSerializer(page, many=True).data)

    @extend_schema(
        summary="Add tokens from CSV (token, area[, rare]), or replace the pool with them; all or nothing",
        parameters=[TokensImportQuerySerializer],
        request=UPLOAD_REQUEST,
        responses=UPLOAD_RESPONSES,
    )
    @tokens.mapping.post
    def tokens_import(self, request, slug=None):
        study = self.get_object()
        # A query parameter, not a form field: a raw text/csv body has no room for one.
        query = TokensImportQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        report = pools.tokens_import(
            study=study, data=uploaded_csv(request), replace=query.validated_data["mode"] == "replace"
        )
        return Response(ImportReportSerializer(report).data, status=status.HTTP_201_CREATED)

    @extend_schema(summary="The study's items", responses={200: ItemSerializer(many=True), **STAFF_ERRORS})
    @action(detail=True, methods=["get"], serializer_class=ItemSerializer)
    def items(self, request, slug=None):
        study = self.get_object()
        items = selectors.study_items(study=study).order_by("index")
        page = self.paginate_queryset(items)
        return self.get_paginated_response(ItemSerializer(page, many=True).data)

    @extend_schema(
        summary="Replace the items by all pairs of tokens within each area (a background job when large)",
        request=ItemsGenerateSerializer,
        responses={
            201: OpenApiResponse(ImportReportSerializer, description="Generated at once (few items)."),
            202: OpenApiResponse(
                StudyJobSerializer,
                description="More items than a request makes: a job generates them; GET its url for progress.",
            ),
            400: error_response("Too few tokens, or a bad cap."),
            409: error_response("Not a draft, or another job of the study is running."),
            413: error_response("More items than a study holds (collection/limits.py)."),
        },
    )
    @action(
        detail=True, methods=["post"], url_path="items/generate", serializer_class=ItemsGenerateSerializer
    )
    def items_generate(self, request, slug=None):
        study = self.get_object()
        serializer = ItemsGenerateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        outcome = jobs.items_generate_start(
            study=study, max_per_area=serializer.validated_data.get("max_per_area"), user=request.user
        )
        if isinstance(outcome, StudyJob):
            return Response(study_job_body(outcome), status=status.HTTP_202_ACCEPTED)
        return Response(ImportReportSerializer(outcome).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="A job of the study (generating items): its state and progress",
        responses={200: StudyJobSerializer, 404: error_response("No such job of this study.")},
    )
    @action(
        detail=True,
        methods=["get"],
        url_path=r"jobs/(?P<job_id>[0-9]+)",
        pagination_class=None,
        serializer_class=StudyJobSerializer,
    )
    def job(self, request, slug=None, job_id=None):
        study = self.get_object()
        job = get_or_404(study.jobs, f"study {study.slug!r} has no job {job_id}", pk=int(job_id))
        return Response(study_job_body(job))

    @extend_schema(
        summary="Replace the items by explicit pairs from CSV (token_a, token_b); all or nothing",
        request=UPLOAD_REQUEST,
        responses=UPLOAD_RESPONSES,
    )
    @action(
        detail=True,
        methods=["post"],
        url_path="items/upload",
        parser_classes=UPLOAD_PARSERS,
        serializer_class=CsvUploadSerializer,
    )
    def items_upload(self, request, slug=None):
        study = self.get_object()
        report = pools.items_import_pairs(study=study, data=uploaded_csv(request))
        return Response(ImportReportSerializer(report).data, status=status.HTTP_201_CREATED)

    # --- plan and lifecycle ---

    @extend_schema(
        summary="The ballot plan for the current items (Eq. 2-4, 10) with the §2.7 warnings",
        responses={200: PlanSerializer, 400: error_response("The plan is impossible for these items.")},
    )
    @action(detail=True, methods=["get"], serializer_class=PlanSerializer)
    def plan(self, request, slug=None):
        study = self.get_object()
        return Response(PlanSerializer(studies.study_plan(study=study).as_dict()).data)

    @extend_schema(
        summary="Start the study: freeze the plan and open ballot 1",
        request=None,
        responses={
            200: StudySerializer,
            400: error_response("The plan is impossible."),
            409: error_response("Not a draft."),
        },
    )
    @action(detail=True, methods=["post"])
    def start(self, request, slug=None):
        study = self.get_object()
        lifecycle.study_start(study=study)
        return Response(StudySerializer(self.get_object()).data)

    @extend_schema(
        summary="Close the open ballot now, with the votes it has",
        request=None,
        responses={202: BallotClosingSerializer, 409: error_response("No ballot is open.")},
    )
    @action(detail=True, methods=["post"], url_path="close-ballot")
    def close_ballot(self, request, slug=None):
        study = self.get_object()
        ballot = lifecycle.study_close_current_ballot(study=study)
        body = {
            "ballot": ballot.number,
            "detail": f"ballot {ballot.number} is closing; its scores are computed and the next ballot "
            "opens in the background (GET progress/ to follow it)",
        }
        return Response(BallotClosingSerializer(body).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        summary="Duplicate the study: same items and plan, no votes (a replication)",
        request=StudyDuplicateSerializer,
        responses={201: StudySerializer},
    )
    @action(detail=True, methods=["post"], serializer_class=StudyDuplicateSerializer)
    def duplicate(self, request, slug=None):
        study = self.get_object()
        serializer = StudyDuplicateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        copy = studies.study_duplicate(study=study, user=request.user, **serializer.validated_data)
        return Response(StudySerializer(copy).data, status=status.HTTP_201_CREATED)

    # --- results ---

    @extend_schema(
        summary="Every ballot with its size, votes and state", responses=BallotProgressSerializer(many=True)
    )
    @action(detail=True, methods=["get"], pagination_class=None, serializer_class=BallotProgressSerializer)
    def progress(self, request, slug=None):
        study = self.get_object()
        return Response(BallotProgressSerializer(selectors.study_progress(study=study), many=True).data)

    @extend_schema(
        summary="The final ranking: items by final score ȳ, with x(k) per ballot",
        responses={200: ResultSerializer(many=True), 409: error_response("The study is not finished yet.")},
    )
    @action(detail=True, methods=["get"], pagination_class=None, serializer_class=ResultSerializer)
    def results(self, request, slug=None):
        study = self.get_object()
        return Response(ResultSerializer(selectors.study_results(study=study), many=True).data)

    # --- exclusions ---

    @extend_schema(
        summary="The exclusion log: who excluded which annotator, when, why (and readmissions)",
        responses={200: ExclusionSerializer(many=True), **STAFF_ERRORS},
    )
    @action(detail=True, methods=["get"], serializer_class=ExclusionSerializer)
    def exclusions(self, request, slug=None):
        study = self.get_object()
        rows = (
            Exclusion.objects.filter(study=study)
            .select_related("annotator__user")
            .order_by("excluded_at", "pk")
        )
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(ExclusionSerializer(page, many=True).data)

    @extend_schema(
        methods=["POST"],
        summary="Exclude an annotator: their votes stop, their open-ballot votes go back to the pool",
        description="Logged with who, when and the reason. Idempotent: an annotator already excluded keeps "
        "their exclusion (200). Votes in closed ballots stay; the results report the scores with and "
        "without them.",
        request=ExclusionRequestSerializer,
        responses={
            201: ExclusionSerializer,
            200: OpenApiResponse(ExclusionSerializer, description="Already excluded: nothing changed."),
            400: error_response("No reason given, or one too long."),
            404: error_response("No such annotator in this study."),
        },
    )
    @extend_schema(
        methods=["DELETE"],
        summary="Readmit an excluded annotator (their set-aside open-ballot votes are not restored)",
        request=ExclusionRequestSerializer,
        responses={
            200: ExclusionSerializer,
            404: error_response("No such annotator in this study."),
            409: error_response("The annotator is not excluded."),
        },
    )
    @action(
        detail=True,
        methods=["post", "delete"],
        url_path=r"annotators/(?P<annotator_id>[0-9]+)/exclusion",
        serializer_class=ExclusionRequestSerializer,
    )
    def exclusion(self, request, slug=None, annotator_id=None):
        study = self.get_object()
        serializer = ExclusionRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        reason = serializer.validated_data.get("reason", "")
        annotator = get_or_404(
            Annotator.objects.filter(study=study),
            f"study {study.slug!r} has no annotator {annotator_id}; its results page lists them",
            pk=annotator_id,
        )
        annotator.study = study
        if request.method == "DELETE":
            lifted = exclusion.annotator_readmit(annotator=annotator, by=request.user, reason=reason)
            return Response(ExclusionSerializer(lifted).data)
        result = exclusion.annotator_exclude(annotator=annotator, reason=reason, by=request.user)
        return Response(
            ExclusionSerializer(result.exclusion).data,
            status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK,
        )


def study_job_body(job: StudyJob) -> dict:
    done = jobs.study_job_done_count(job)
    return StudyJobSerializer(
        {
            "id": job.pk,
            "kind": job.kind,
            "status": job.status,
            "done": done,
            "total": job.total,
            "percent": percent_done(done, job.total) if job.total else 100,
            "result": job.result,
            "error": job.error,
            "url": reverse("api:study-job", args=[job.study.slug, job.pk]),
        }
    ).data


# --- annotators ----------------------------------------------------------------------------------

# The token first, so that an invalid one is 401 with the scheme (the settings' order); a request that
# the session or the annotator cookie identifies, with no token, still passes the CSRF check.
ANNOTATOR_AUTHENTICATION = [TokenAuthentication, AnnotatorSessionAuthentication]
# JSON only: the annotators' endpoints are called by vote.js and API clients on every judgement, and
# the browsable API's renderer would only add a negotiation to each of them.
ANNOTATOR_RENDERERS = [JSONRenderer]


class AnnotatorEndpoint(APIView):
    """An annotators' endpoint: answers JSON whatever the Accept header says, without negotiating it
    on each request (RFC 9110 §12.1 lets a server send its one representation)."""

    authentication_classes = ANNOTATOR_AUTHENTICATION
    throttle_classes = ANNOTATOR_THROTTLES
    renderer_classes = ANNOTATOR_RENDERERS
    _renderer = JSONRenderer()

    def perform_content_negotiation(self, request, force=False):
        return self._renderer, self._renderer.media_type


@method_decorator(ensure_csrf_cookie, name="dispatch")  # API clients get the token for their votes here
class ComparisonNextView(AnnotatorEndpoint):
    """For annotators: lease the next comparison of the open ballot, with both items and the progress."""

    permission_classes = [AllowAny]  # the annotator is checked per study: consented_annotator()
    throttle_scope = "next"

    @extend_schema(
        summary="Your next comparison (the one you hold while its lease runs)",
        operation_id="studies_next",
        tags=["annotators"],
        responses={
            200: NextComparisonSerializer,
            204: OpenApiResponse(description="No comparison for you now; X-Yardstick-Reason says why."),
            403: error_response("Open the study link first, and give your consent."),
            404: error_response("No such study."),
        },
        parameters=[
            OpenApiParameter(
                "X-Yardstick-Reason",
                OpenApiTypes.STR,
                location=OpenApiParameter.HEADER,
                response=[204],
                enum=[
                    voting.NextReason.NOT_STARTED,
                    voting.NextReason.FINISHED,
                    voting.NextReason.QUOTA,
                    voting.NextReason.BALLOT_CLOSING,
                    voting.NextReason.NONE_FOR_YOU,
                    voting.NextReason.ALL_LEASED,
                    voting.NextReason.EXCLUDED,
                    voting.NextReason.ANNOTATOR_FINISHED,
                ],
                description="Why there is no comparison.",
            ),
            OpenApiParameter(
                "Retry-After",
                OpenApiTypes.INT,
                location=OpenApiParameter.HEADER,
                response=[204],
                description="Seconds after which a comparison may be available (when one is expected).",
            ),
        ],
    )
    def get(self, request, slug: str):
        # A browser whose cookie names its annotator here: the annotator and the study in one query.
        annotator = remembered_annotator_of_study(request, slug)
        if annotator is not None:
            study = annotator.study
        else:
            study = get_or_404(
                Study.objects, f"there is no study {slug!r}; check the link you were given", slug=slug
            )
        annotator = consented_annotator(request, study, annotator)
        result = voting.comparison_next_for(annotator=annotator)
        if result.assignment is None:
            headers = {"X-Yardstick-Reason": result.reason}
            if result.retry_after_seconds is not None:
                headers["Retry-After"] = str(result.retry_after_seconds)
            return Response(status=status.HTTP_204_NO_CONTENT, headers=headers)
        return Response(next_comparison_body(study, result, annotator_language(request, study).texts))


class FinishView(AnnotatorEndpoint):
    """For annotators: Finish, the session ended with the completed code once the study's minimum of
    judgements is made (``leaving.annotator_finish``), as the voting page's Finish does."""

    permission_classes = [AllowAny]  # the annotator is checked per study: consented_annotator()
    throttle_scope = "next"

    @extend_schema(
        summary="Finish: end your session and get your completion code",
        description="Allowed once you have made the study's min_judgements judgements (answers to checks "
        "are not judgements; 0 allows it at any time). Your running lease is given back, and GET next "
        "answers 204 with X-Yardstick-Reason annotator_finished from then on. A second Finish answers the same.",
        operation_id="studies_finish",
        tags=["annotators"],
        request=None,
        responses={
            200: FinishResultSerializer,
            403: error_response("Open the study link first and give your consent; or you were excluded."),
            404: error_response("No such study."),
            409: error_response(
                "Fewer judgements than the study asks before Finish: the detail says how many remain."
            ),
        },
    )
    def post(self, request, slug: str):
        study = get_or_404(
            Study.objects, f"there is no study {slug!r}; check the link you were given", slug=slug
        )
        annotator = consented_annotator(request, study)
        votes = leaving.annotator_finish(annotator=annotator)
        exit_ = crowd.study_exit(study=study, annotator=annotator, outcome=crowd.Outcome.COMPLETED)
        return Response(
            {
                "outcome": exit_.outcome,
                "code": exit_.code,
                "personal_code": exit_.personal_code,
                "completion_url": crowd.completion_url(study, exit_.code),
                "votes": votes,
            }
        )


_EXPIRES_AT = serializers.DateTimeField()  # as NextComparisonSerializer writes it


def next_comparison_body(study: Study, result: voting.NextResult, texts: StudyTexts) -> dict:
    """The body of NextComparisonSerializer, laid out from what the lease returned: a vote's answer and
    GET next send it on every judgement, so it is built from plain values, without a serializer.
    ``texts``: the study's texts in the annotator's language (``collection.languages``)."""
    return {
        "assignment": result.assignment.pk,
        "expires_at": _EXPIRES_AT.to_representation(result.assignment.expires_at),
        # A check's instruction, if an instructed-response check; else the study's question.
        "question": texts.question_shown(result.instruction),
        "allow_ties": study.allow_ties,
        "left": result.sides["left"],
        "right": result.sides["right"],
        "progress": result.progress.as_dict(),
    }


class VoteView(AnnotatorEndpoint):
    """For annotators: record the vote on an assignment, once; a retried request returns the same vote."""

    permission_classes = [AllowAny]  # the annotator is the one of the assignment's study, or 404
    throttle_scope = "vote"

    @staticmethod
    def judgement_body(request, annotator, vote, created, result) -> tuple[dict, int]:
        """The answer to a judgement: its body and status."""
        if result.assignment:
            texts = annotator_language(request, annotator.study).texts
            next_body = next_comparison_body(annotator.study, result, texts)
        else:
            next_body = None
        body = {
            "vote": vote.pk,
            "assignment": vote.assignment_id,
            "choice": vote.choice,
            "created": created,
            "next": next_body,
            "next_reason": result.reason,
            "next_retry_after": result.retry_after_seconds,
        }
        return body, status.HTTP_201_CREATED if created else status.HTTP_200_OK

    @extend_schema(
        summary="Vote on your assignment; the answer carries your next comparison",
        description="Records the vote once: a retry of the same assignment returns the vote already "
        "recorded (200), whatever its choice. Either way the answer carries the annotator's next comparison "
        "in `next`, leased exactly as `GET /api/studies/{slug}/next/` leases it (the same body: the one "
        "still held while its lease runs, else a new one), so that a judgement costs one request; GET next "
        "is for the first comparison and after a pause. When there is none, `next` is null, `next_reason` "
        "says why and `next_retry_after` when to ask again with GET next.",
        operation_id="votes_create",
        tags=["annotators"],
        request=VoteRequestSerializer,
        responses={
            201: OpenApiResponse(
                VoteResultSerializer, description="Recorded; the next comparison is in next."
            ),
            200: OpenApiResponse(
                VoteResultSerializer,
                description="Already recorded by an earlier request; the next comparison is in next.",
            ),
            400: error_response("A choice the study does not offer, or a malformed request."),
            403: error_response("A session request without the CSRF token."),
            404: error_response("Not one of your assignments."),
            409: error_response("The lease expired or the ballot closed: nothing recorded; GET next."),
        },
    )
    def post(self, request):
        serializer = VoteRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        # The vote commits, then the next lease runs in a transaction of its own. A browser whose
        # cookie names the assignment's holder votes in one statement; anyone else is found first.
        judgement = voting.vote_record_and_next_by_owner(
            owners=remembered_annotators(request),
            assignment_id=data["assignment"],
            choice=data["choice"],
            client_response_ms=data.get("client_response_ms"),
        )
        if judgement is None:
            annotator = self._annotator_of_assignment(request, data["assignment"])
            vote, created, result = voting.vote_record_and_next(
                annotator=annotator,
                assignment_id=data["assignment"],
                choice=data["choice"],
                client_response_ms=data.get("client_response_ms"),
            )
        else:
            annotator, vote, created, result = judgement
        return Response(*self.judgement_body(request, annotator, vote, created, result))

    @staticmethod
    def _annotator_of_assignment(request, assignment_id: int):
        # The same answer for an unknown assignment and another's: nothing about others leaks.
        annotator = annotator_of_assignment(request, assignment_id)
        if annotator is None:
            raise NotFound(f"assignment {assignment_id} is not one of yours")
        return annotator
