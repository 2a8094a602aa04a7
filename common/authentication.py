"""Token authentication that costs nothing to a request without a token."""

from __future__ import annotations

from rest_framework.authentication import TokenAuthentication


class HeaderTokenAuthentication(TokenAuthentication):
    """REST framework's token authentication, which reads ``request.headers`` only when the request
    carries an Authorization header. Building ``request.headers`` parses every header of the request,
    and an annotator's browser, which never sends one, would pay for it on every vote.

    The API's one token authentication (``REST_FRAMEWORK`` in the settings, the annotators' and the
    metrics' endpoints), so the schema has one ``tokenAuth``.
    """

    def authenticate(self, request):
        if "HTTP_AUTHORIZATION" not in request._request.META:
            return None
        return super().authenticate(request)
