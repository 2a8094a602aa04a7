"""The error every service raises when a request cannot be honoured, with the HTTP status it maps to."""

from __future__ import annotations


class ServiceError(Exception):
    """A request that cannot be honoured; ``status`` is the HTTP status it maps to.

    ``errors`` lists every problem of an upload or a form (by line or by field), ``message`` sums them up.
    """

    status = 400

    def __init__(self, message: str, *, errors: list[str] | None = None, status: int | None = None):
        super().__init__(message)
        self.message = message
        self.errors = errors or []
        if status is not None:
            self.status = status


class StudyStateError(ServiceError):
    """The study (or ballot, or submission) is not in a state that allows the request."""

    status = 409
