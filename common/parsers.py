"""Request parsers that answer 4xx, never 5xx, whatever the body."""

from __future__ import annotations

import io

from django.conf import settings
from rest_framework import parsers, status
from rest_framework.exceptions import APIException, ParseError


class RequestTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "the request body is too large"
    default_code = "request_too_large"


def read_bounded(stream, limit: int, what: str = "the request body") -> bytes:
    """The body, read no further than ``limit`` bytes; 413 beyond."""
    body = stream.read(limit + 1) if stream is not None else b""
    if len(body) > limit:
        raise RequestTooLarge(f"{what} is larger than {limit:,} bytes; send less data per request")
    return body


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, bounded: a body over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` is 413, and JSON nested
    too deep for the decoder (``[[[…]]]`` 100,000 levels) is 400, not a ``RecursionError``."""

    def parse(self, stream, media_type=None, parser_context=None):
        body = read_bounded(stream, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        try:
            return super().parse(io.BytesIO(body), media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error: the body nests arrays or objects too deeply") from None
