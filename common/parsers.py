"""Request parsers that answer 4xx, never 5xx, whatever the body, and read no further than a limit."""

from __future__ import annotations

from django.conf import settings
from django.http import UnreadablePostError
from rest_framework import parsers, status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.utils import json


class RequestTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "the request body is too large"
    default_code = "request_too_large"


class BoundedBody:
    """A parser's reading of the body: no further than ``max_bytes``, 413 with ``too_large`` beyond.

    ``max_bytes`` None is ``DATA_UPLOAD_MAX_MEMORY_SIZE``. ``too_large(size)`` gets the larger of the
    bytes read and the declared Content-Length.
    """

    max_bytes: int | None = None

    def limit(self) -> int:
        return self.max_bytes or settings.DATA_UPLOAD_MAX_MEMORY_SIZE

    def too_large(self, size: int) -> str:
        return f"the request body is larger than {self.limit():,} bytes; send less data per request"

    def read_body(self, stream, parser_context=None) -> bytes:
        limit = self.limit()
        body = stream.read(limit + 1) if stream is not None else b""
        if len(body) > limit:
            request = (parser_context or {}).get("request")
            declared = int(request.META.get("CONTENT_LENGTH") or 0) if request is not None else 0
            raise RequestTooLarge(self.too_large(max(declared, len(body))))
        return body


class JSONParser(BoundedBody, parsers.JSONParser):
    """DRF's JSON parser, bounded: a body over the limit is 413, and JSON nested too deep for the
    decoder (``[[[…]]]`` 100,000 levels) is 400, not a ``RecursionError``. ``parse_float`` (json's) reads
    the numbers with a fraction or an exponent; None reads them as floats."""

    parse_float = None

    def parse(self, stream, media_type=None, parser_context=None):
        body = self.read_body(stream, parser_context)
        # What REST framework's parser does, on the bytes already read: decoded with the request's
        # charset (text encodings only), then parsed whole, without a stream reader around a copy.
        encoding = parsers.get_encoding(parser_context or {})
        try:
            return json.loads(
                body.decode(encoding),
                parse_constant=json.strict_constant if self.strict else None,
                parse_float=self.parse_float,
            )
        except RecursionError:
            raise ParseError("JSON parse error: the body nests arrays or objects too deeply") from None
        except ValueError as exc:  # and UnicodeDecodeError: REST framework's message for both
            raise ParseError(f"JSON parse error - {exc}") from None


class CSVParser(BoundedBody, parsers.BaseParser):
    """A raw ``text/csv`` request body, returned as bytes; the service that imports it reads the rows."""

    media_type = "text/csv"

    def parse(self, stream, media_type=None, parser_context=None):
        return self.read_body(stream, parser_context)


# gunicorn reads (and discards) up to 64 KiB of a body the application left unread before it serves the
# connection's next request; with more left it closes the connection, although its answer said keep-alive.
SERVER_DRAINED_BYTES = 64 * 1024
DRAIN_CHUNK_BYTES = 64 * 1024


class UnreadBodyMiddleware:
    """Reads to its end the body of a request answered without reading it all, so that a kept-alive
    connection serves the client's next request.

    A refusal leaves a body unread: 413 after the first 2 MiB of a tokens file, 401 or 403 before any of
    it. A declared ``Content-Length`` above what gunicorn drains itself and at most twice
    ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (the largest body any view reads) is read in 64 KiB chunks and
    dropped; a larger one is not worth a thread's time, and gunicorn closes that connection.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return response
        if SERVER_DRAINED_BYTES < declared <= 2 * settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
            try:  # the request's stream stops at Content-Length; a body already read gives b"" or its copy
                while request.read(DRAIN_CHUNK_BYTES):
                    pass
            except (UnreadablePostError, OSError):
                pass  # the client went away: there is no connection left to keep
        return response
