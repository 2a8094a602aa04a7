"""One error format for the whole REST API: ``{"detail": "...", "errors": ["...", ...]}``.

DRF's own errors, a ``ServiceError`` raised by a service, invalid fields and a database that does not
answer all leave the API in this shape (``ErrorSerializer`` documents it), so a client needs one parser
for every 4xx and 5xx. Installed as ``REST_FRAMEWORK["EXCEPTION_HANDLER"]``.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import Http404, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import bad_request as django_bad_request
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, NotAuthenticated, NotFound, ValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from common.errors import ServiceError, encodable
from common.unavailable import DATABASE_RETRY_AFTER_SECONDS, UNAVAILABLE_MESSAGE, is_database_unavailable


class ErrorSerializer(serializers.Serializer):
    """The body of every error the API answers."""

    detail = serializers.CharField(help_text="What is wrong and how to fix it.")
    errors = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Every problem, one per line: the rows of an upload, or 'field: message' for a form.",
    )


def error_response(description: str) -> OpenApiResponse:
    """An error response of the schema, with the common body."""
    return OpenApiResponse(ErrorSerializer, description=description)


def get_or_404(queryset, message: str, **lookup):
    """The first row of ``queryset`` matching ``lookup``; a 404 saying ``message`` when there is none."""
    found = queryset.filter(**lookup).first()
    if found is None:
        raise NotFound(message)
    return found


def flatten(detail, prefix: str = "") -> list[str]:
    """'field: message' lines from a DRF validation error's detail (nested fields as 'field: 3: name: ')."""
    if isinstance(detail, dict):
        return [
            line
            for key, value in detail.items()
            for line in flatten(value, prefix if key == "non_field_errors" else f"{prefix}{key}: ")
        ]
    if isinstance(detail, list):
        return [line for value in detail for line in flatten(value, prefix)]
    return [f"{prefix}{detail}"]


def error_body(message: str, errors: list[str] | None = None) -> dict:
    """The common error body; text a client sent, echoed in it, is made encodable (``encodable``)."""
    body = {"detail": encodable(str(message))}
    if errors:
        body["errors"] = [encodable(str(error)) for error in errors]
    return body


# REST framework's "Authentication credentials were not provided.", with what to send instead.
NO_CREDENTIALS = (
    "no credentials: send the header 'Authorization: Token <key>' (POST your username and password to "
    "/api/auth/token/ to get the key)"
)


def exception_handler(exc, context):
    """DRF's handler, with every error body in the common format and a dead database as 503."""
    if isinstance(exc, SuspiciousOperation):  # a body Django refuses to read: too large, too many fields
        status_code, message = _refused_body(exc)
        return Response(error_body(message), status=status_code)
    if isinstance(exc, ServiceError):
        return Response(error_body(exc.message, exc.errors), status=exc.status)
    if is_database_unavailable(exc):
        return Response(
            error_body(UNAVAILABLE_MESSAGE),
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)},
        )
    if isinstance(exc, ValidationError):
        lines = flatten(exc.detail)
        response = drf_exception_handler(exc, context)
        response.data = error_body("; ".join(lines) or "the request is not valid", lines)
        return response
    response = drf_exception_handler(exc, context)
    if response is None:
        return None  # an unexpected error: Django's 500 handling (and its log) takes over
    if isinstance(exc, NotAuthenticated) and exc.detail == NotAuthenticated.default_detail:
        response.data = error_body(NO_CREDENTIALS)
    elif isinstance(exc, (Http404, DjangoPermissionDenied)) or not isinstance(response.data, dict):
        response.data = error_body(str(getattr(exc, "detail", exc)) or response.status_text)
    elif "detail" in response.data:
        response.data = error_body(str(response.data["detail"]))
    if isinstance(exc, APIException) and getattr(exc, "wait", None) is not None:
        response.headers.setdefault("Retry-After", str(int(exc.wait) + 1))
    return response


def _refused_body(exc: SuspiciousOperation) -> tuple[int, str]:
    if isinstance(exc, RequestDataTooBig):
        return (
            status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
            f"the request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes; send less data "
            "per request",
        )
    return status.HTTP_400_BAD_REQUEST, f"the request was refused: {exc}"


def bad_request(request, exception, template_name="400.html"):
    """``handler400``: what Django refuses before a view runs (a body too large or unreadable for a
    middleware that reads it, too many form fields) is JSON in the common format under /api/, a page
    elsewhere."""
    if not request.path.startswith("/api/"):
        return django_bad_request(request, exception, template_name=template_name)
    if isinstance(exception, SuspiciousOperation):
        status_code, message = _refused_body(exception)
    else:
        status_code, message = status.HTTP_400_BAD_REQUEST, f"the request body cannot be read: {exception}"
    return JsonResponse(error_body(message), status=status_code)


@csrf_exempt  # a POST to a mistyped path is told it does not exist, not that its CSRF token is missing
def not_found(request, path: str = ""):
    """Any /api/ path that no endpoint serves: 404 in the common format, not an HTML page."""
    message = f"there is no endpoint {request.path}; the API is described at /api/docs/"
    if not request.path.endswith("/"):
        message += " (every API path ends with a slash)"
    return JsonResponse(error_body(message), status=status.HTTP_404_NOT_FOUND)
