"""When the database does not answer: 503 with ``Retry-After``, never a 500.

A database restart or a network blip is not a bug of ours; clients should wait and retry. The API
answers JSON (``common.api``); pages answer a plain 503 page rendered without the database. The
middleware catches what views raise; ``server_error`` (``handler500``) catches what middleware raises
(the session or the user being loaded, a session being saved).
"""

from __future__ import annotations

import logging
import sys

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.template import loader
from django.templatetags.static import static
from django.utils import translation
from django.utils.cache import patch_vary_headers
from django.views.defaults import server_error as django_server_error

from common.languages import language_asked

logger = logging.getLogger(__name__)

DATABASE_RETRY_AFTER_SECONDS = 5
UNAVAILABLE_MESSAGE = (
    "the service is briefly unavailable (its database does not answer); nothing was lost: "
    f"retry in {DATABASE_RETRY_AFTER_SECONDS} seconds"
)


def is_database_unavailable(exc: BaseException | None) -> bool:
    """A lost or refused database connection (not a constraint or data error, which are bugs)."""
    return isinstance(exc, (OperationalError, InterfaceError))


def wants_json(request) -> bool:
    return request.path.startswith("/api/") or "application/json" in request.headers.get("Accept", "")


def _recheck_script() -> str:
    """The address of the script that retries the page with a Stop button, or "" when the static
    files' manifest lacks it (collectstatic not run): this page must answer whatever else is broken."""
    try:
        return static("collection/recheck.js")
    except ValueError:
        return ""


def unavailable_response(request) -> HttpResponse:
    if wants_json(request):
        response = JsonResponse({"detail": UNAVAILABLE_MESSAGE}, status=503)
    else:
        # In the language the request asks for (no study to fall back on: the database is away).
        language = language_asked(request) or settings.LANGUAGE_CODE
        context = {"retry_after": DATABASE_RETRY_AFTER_SECONDS, "recheck_script": _recheck_script()}
        with translation.override(language):
            body = loader.get_template("503.html").render(context)
        response = HttpResponse(body, status=503)
        response["Content-Language"] = translation.get_supported_language_variant(language)
        patch_vary_headers(response, ("Accept-Language", "Cookie"))
    response["Retry-After"] = str(DATABASE_RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response


class DatabaseUnavailableMiddleware:
    """Turns a database that does not answer, raised by a view, into 503 (first in MIDDLEWARE)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if is_database_unavailable(exception):
            logger.warning("database unavailable on %s %s: %s", request.method, request.path, exception)
            return unavailable_response(request)
        return None


def server_error(request, template_name="500.html"):
    """``handler500``: 503 when the error is the database being away, Django's 500 otherwise."""
    exc = sys.exc_info()[1]
    if is_database_unavailable(exc):
        logger.warning("database unavailable on %s %s: %s", request.method, request.path, exc)
        return unavailable_response(request)
    if wants_json(request):
        return JsonResponse({"detail": "an unexpected error; it has been logged"}, status=500)
    return django_server_error(request, template_name=template_name)
