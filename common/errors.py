"""The error every service raises when a request cannot be honoured, with the HTTP status it maps to."""

from __future__ import annotations


def encodable(text: str) -> str:
    """``text`` with what UTF-8 cannot encode written as its escape (a lone surrogate, which a JSON body may
    carry as ``"\\ud800"``, becomes the six characters ``\\ud800``); any other text unchanged.

    An error that echoes a client's text goes through it, so that the answer can be sent whatever was sent.
    """
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class ServiceError(Exception):
    """A request that cannot be honoured; ``status`` is the HTTP status it maps to.

    ``errors`` lists every problem of an upload or a form (by line or by field), ``message`` sums them up.
    """

    status = 400

    def __init__(self, message: str, *, errors: list[str] | None = None, status: int | None = None):
        message = encodable(message)
        super().__init__(message)
        self.message = message
        self.errors = [encodable(error) for error in errors or []]
        if status is not None:
            self.status = status


class StudyStateError(ServiceError):
    """The study (or ballot, or submission) is not in a state that allows the request."""

    status = 409


# An upload with thousands of bad rows is refused with the first of them and a count of the rest.
MAX_REPORTED_ERRORS = 20


def reported_errors(errors: list[str]) -> list[str]:
    """The first ``MAX_REPORTED_ERRORS`` problems, and "… and N more" for the rest."""
    shown = errors[:MAX_REPORTED_ERRORS]
    more = len(errors) - len(shown)
    return shown + ([f"… and {more} more"] if more else [])
