"""The OpenAPI schema tells every status an operation can answer, each error with the common body.

``AutoSchema`` (``REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"]``) adds to what a view declares the errors that
follow from how the view is built, so no view repeats them and none forgets one:

- 400 when the request has a body or query parameters (invalid fields, malformed JSON, a bad ``limit``);
- 401 or 403 for missing or invalid credentials: 401 (with ``WWW-Authenticate``) when the view's first
  authenticator names a scheme, as DRF answers, else 403; 403 too when a permission may refuse an
  authenticated user, and for unsafe methods that accept a session (the CSRF check);
- 404 when the path has parameters (no such study, submission, or not one of yours);
- 413 and 415 when the request has a body (too large; a content type the endpoint does not read);
- 429 (with ``Retry-After``) when the view is rate-limited (``throttle_scope``);
- 503 (with ``Retry-After``) everywhere: the database does not answer.

A view's own description of a status wins; only missing ones are added.
"""

from __future__ import annotations

import re

from drf_spectacular import openapi
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import AllowAny, IsAuthenticated

from common.api import ErrorSerializer

RETRY_AFTER = {
    "Retry-After": {
        "schema": {"type": "integer", "minimum": 0},
        "description": "Seconds to wait before trying again.",
    }
}
WWW_AUTHENTICATE = {
    "WWW-Authenticate": {
        "schema": {"type": "string"},
        "description": "The authentication scheme to use: Token.",
    }
}

DESCRIPTIONS = {
    400: "The request is not valid: detail says what is wrong, errors lists every problem.",
    401: "No credentials, or credentials that are not valid: send 'Authorization: Token <key>'.",
    403: "Not allowed: credentials that are not enough (not staff, not yours), or a session request without "
    "its CSRF token.",
    404: "Not found: no such resource, or not one of yours.",
    413: "The request body is too large.",
    415: "The request body's content type is not one this endpoint reads.",
    429: "Too many requests: wait Retry-After seconds.",
    503: "The database does not answer; nothing was lost: retry after Retry-After seconds.",
}
HEADERS = {401: WWW_AUTHENTICATE, 429: RETRY_AFTER, 503: RETRY_AFTER}
NO_NUL_CHARACTER = "^[^\\u0000]*$"
NOT_BLANK_NO_NUL = "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$"
SLUG_PATTERN = "^[-a-zA-Z0-9_]+$"  # Django's slug: the path converter and validate_slug


class AutoSchema(openapi.AutoSchema):
    """drf-spectacular's AutoSchema, with the error statuses every operation can answer, and request
    strings that say what DRF's CharField refuses: a NUL character (PostgreSQL could not store it
    either), and only whitespace where blank is not allowed."""

    def _get_parameters(self):
        parameters = super()._get_parameters()
        for parameter in parameters:
            # An optional query parameter sent empty (?limit=) counts as not sent: DRF reads a query
            # string as a form, and the paginator does the same.
            if parameter["in"] == "query" and not parameter.get("required"):
                parameter["allowEmptyValue"] = True
            if parameter["in"] == "path":
                parameter["schema"].update(self._path_converter_schema(parameter["name"]))
        return parameters

    def _path_converter_schema(self, name: str) -> dict:
        """What Django's path converter of ``name`` accepts, which drf-spectacular leaves out."""
        converter = re.search(rf"<(\w+):{re.escape(name)}>", self.path_regex)
        if converter is None:
            return {}
        return {"slug": {"pattern": SLUG_PATTERN}, "int": {"minimum": 0}}.get(converter.group(1), {})

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if isinstance(field, serializers.SlugField) and "pattern" not in schema and not field.allow_unicode:
            schema["pattern"] = SLUG_PATTERN
        if (
            direction == "request"
            and isinstance(field, serializers.CharField)
            and schema.get("type") == "string"
            and not {"pattern", "format", "enum"} & set(schema)
        ):
            # DRF trims a CharField before it checks that it is not blank: "  " is blank.
            blank_refused = field.trim_whitespace and not field.allow_blank
            schema["pattern"] = NOT_BLANK_NO_NUL if blank_refused else NO_NUL_CHARACTER
        return schema

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        for status in self.error_statuses():
            key = str(status)
            if key not in responses:
                responses[key] = self._get_response_for_code(
                    openapi.OpenApiResponse(ErrorSerializer, description=DESCRIPTIONS[status]),
                    key,
                    direction=direction,
                )
            if status in HEADERS:
                responses[key]["headers"] = {**HEADERS[status], **responses[key].get("headers", {})}
        for key, response in responses.items():
            # An error in another format than JSON (the leaderboard's CSV) is text: its lines, not an object.
            for media_type, content in response.get("content", {}).items():
                if int(key) >= 400 and not media_type.endswith("json"):
                    content["schema"] = {
                        "type": "string",
                        "description": "detail, then errors, one per line.",
                    }
        return dict(sorted(responses.items()))

    def error_statuses(self) -> set[int]:
        """The error statuses of this operation, from its view's authenticators, permissions, parsers,
        throttles and path."""
        statuses = {503}
        has_body = self._get_request_body() is not None
        has_query = any(parameter["in"] == "query" for parameter in self._get_parameters())
        if has_body or has_query:
            statuses.add(400)
        if has_body:
            statuses |= {413, 415}
        if "{" in self.path:
            statuses.add(404)
        statuses |= self._auth_statuses()
        if getattr(self.view, "throttle_scope", None) and self.view.get_throttles():
            statuses.add(429)
        return statuses

    def _auth_statuses(self) -> set[int]:
        authenticators = self.view.get_authenticators()
        if not authenticators:
            return set()
        # DRF answers a missing or invalid credential with 401 only when its first authenticator names a
        # scheme for WWW-Authenticate; otherwise with 403.
        unauthenticated = 401 if authenticators[0].authenticate_header(self.view.request) else 403
        sessions = [auth for auth in authenticators if isinstance(auth, SessionAuthentication)]
        permissions = [type(permission) for permission in self.view.get_permissions()]
        statuses = set()
        if len(sessions) < len(authenticators):  # a token can be invalid
            statuses.add(unauthenticated)
        if any(permission is not AllowAny for permission in permissions):
            statuses.add(unauthenticated)
        if any(permission not in (AllowAny, IsAuthenticated) for permission in permissions):
            statuses.add(403)
        if sessions and self.method not in ("GET", "HEAD", "OPTIONS"):
            statuses.add(403)  # the CSRF check of a session request
        return statuses


class BoundedFloatField(serializers.FloatField):
    """A number whose schema states what a FloatField's ``min_value`` and ``max_value`` cannot:
    exclusive bounds (``greater_than``, ``less_than``: α in (0, 1)) or a list of allowed values
    (``one_of``: the leaderboard's n0). Only the schema: the serializer's ``validate_<field>``, or the
    service, refuses the rest with a message that says why."""

    def __init__(
        self,
        *,
        greater_than: float | None = None,
        less_than: float | None = None,
        one_of: tuple[float, ...] | None = None,
        **kwargs,
    ):
        self.greater_than, self.less_than, self.one_of = greater_than, less_than, one_of
        super().__init__(**kwargs)


class BoundedFloatFieldExtension(OpenApiSerializerFieldExtension):
    target_class = BoundedFloatField

    def map_serializer_field(self, auto_schema, direction):
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        if self.target.greater_than is not None:
            schema.update(minimum=self.target.greater_than, exclusiveMinimum=True)
        if self.target.less_than is not None:
            schema.update(maximum=self.target.less_than, exclusiveMaximum=True)
        if self.target.one_of is not None:
            schema["enum"] = list(self.target.one_of)
        return schema
