"""The client's exceptions: each carries a message a person can act on."""

from __future__ import annotations


class YardstickError(Exception):
    """Anything the client cannot do; its message says what went wrong and, where it can, what to do."""


class ConnectionFailed(YardstickError):
    """The server did not answer (down, wrong URL, network)."""


class ApiError(YardstickError):
    """The server answered with an HTTP error status.

    ``status`` is the HTTP status, ``detail`` the API's message and ``errors`` its list of problems
    (rows of a file, fields of a form), as the API's common error body gives them.
    """

    def __init__(self, *, status: int, detail: str, errors: list[str], method: str, url: str):
        self.status = status
        self.detail = detail
        self.errors = errors
        self.method = method
        self.url = url
        message = f"HTTP {status} on {method} {url}: {detail}"
        if errors and detail != "; ".join(errors):
            message += "".join(f"\n  - {error}" for error in errors)
        elif errors and len(errors) > 1:
            message = f"HTTP {status} on {method} {url}:" + "".join(f"\n  - {error}" for error in errors)
        super().__init__(message)


class IncompatibleServer(YardstickError):
    """The server's API has another major version than this client speaks."""


class ServerVersionWarning(UserWarning):
    """The server's API is of the same major version but an older or newer minor one."""


class EvaluationFailed(YardstickError):
    """The server could not evaluate a submission; the message gives its reason."""


class WaitTimeout(YardstickError):
    """A wait (an evaluation, a card, a job, a study) outlasted its time limit; the work goes on on the
    server."""
