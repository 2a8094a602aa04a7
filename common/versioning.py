"""The API's version on every /api/ response, so that a client can tell an older or newer server.

The version is the schema's (``settings.API_VERSION``, which ``SPECTACULAR_SETTINGS`` publishes as
``info.version`` at /api/schema/); the header saves a client fetching the whole schema to read it.
"""

from __future__ import annotations

from django.conf import settings

API_VERSION_HEADER = "X-Yardstick-API-Version"


class ApiVersionMiddleware:
    """Adds ``X-Yardstick-API-Version`` to every response under /api/ (errors and 404s included)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if request.path.startswith("/api/"):
            response[API_VERSION_HEADER] = settings.API_VERSION
        return response
