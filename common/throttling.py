"""Rate limits: per participant and per client address for voting, per address for joining and for
tokens, per user for submissions; and the answers to a login that django-axes has locked out.

The limits are REST framework's throttles (``SimpleRateThrottle``), scoped ``<view.throttle_scope>.<kind>``.
Rates live in ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]`` (from ``THROTTLE_*`` environment variables;
docs/operators.md, Configuration), keyed ``<scope>.participant``, ``<scope>.address`` or ``<scope>.user``;
a rate of None turns that limit off. A request over a limit gets 429 with ``Retry-After``. The counts live
in the cache (Redis in the full stack): if the cache does not answer, the request is let through and the
failure logged, since refusing every annotator while Redis restarts would be worse than a few seconds
without limits.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import math
import time
from types import SimpleNamespace

from django.conf import settings
from rest_framework.exceptions import APIException
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle

logger = logging.getLogger(__name__)


# After the cache fails, the limits are not checked for this long (in this process): a Redis that hangs
# would otherwise cost every request its timeouts.
CACHE_RETRY_SECONDS = 10.0
_cache_down_until = 0.0


def cache_usable() -> bool:
    return time.monotonic() >= _cache_down_until


def cache_failed(what: str) -> None:
    global _cache_down_until
    _cache_down_until = time.monotonic() + CACHE_RETRY_SECONDS
    logger.exception("%s: the cache does not answer; rate limits are off for %g s", what, CACHE_RETRY_SECONDS)


class _ScopedThrottle(SimpleRateThrottle):
    """A throttle whose scope is ``<view.throttle_scope>.<kind>``, as REST framework's
    ``ScopedRateThrottle`` finds its scope; the rate is read when used, so that a change of settings
    (tests, a reload) is seen. Fails open while the cache does not answer."""

    kind = ""

    def __init__(self):  # the rate depends on the view: found in allow_request
        pass

    def get_rate(self):
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def allow_request(self, request, view) -> bool:
        base = getattr(view, "throttle_scope", None)
        if not base:
            return True
        self.scope = f"{base}.{self.kind}"
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        if self.rate is None or not cache_usable():
            return True
        try:
            return super().allow_request(request, view)
        except Exception:  # the cache's client errors have no common base class
            cache_failed(f"rate limit {self.scope} not checked")
            return True

    def identity(self, request) -> str | None:
        raise NotImplementedError

    def get_cache_key(self, request, view) -> str | None:
        ident = self.identity(request)
        return None if ident is None else self.cache_format % {"scope": self.scope, "ident": ident}


class ParticipantThrottle(_ScopedThrottle):
    """One annotator: their login, else their browser session, else their signed annotator cookie, else
    their address. (The session first: a browser that has one keeps one count when it gets the cookie.)"""

    kind = "participant"

    def identity(self, request) -> str:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            return f"user-{user.pk}"
        # REST framework's request hands ``session`` and ``annotator_key`` on from Django's.
        session = getattr(request, "session", None)
        if session is not None and session.session_key:  # the cookie's value: no session row read
            return f"session-{session.session_key}"
        if key := getattr(request, "annotator_key", None):  # set by collection.identity's middleware
            return f"annotator-{key}"
        return f"address-{self.get_ident(request)}"


class AddressThrottle(_ScopedThrottle):
    """One client address, whoever is behind it (REST framework's ``get_ident``, behind ``NUM_PROXIES``)."""

    kind = "address"

    def identity(self, request) -> str:
        return self.get_ident(request)


class UserThrottle(_ScopedThrottle):
    """One logged-in user (anonymous requests are refused by the view's permissions first)."""

    kind = "user"

    def identity(self, request) -> str | None:
        user = getattr(request, "user", None)
        return f"user-{user.pk}" if user is not None and user.is_authenticated else None


# The annotators' endpoints and pages: both limits, each counting every request it allows.
ANNOTATOR_THROTTLES = [ParticipantThrottle, AddressThrottle]


def page_wait_seconds(request, scope: str, throttles=ANNOTATOR_THROTTLES) -> int | None:
    """For server-rendered pages: None if the request is within its limits, else the seconds to wait.

    Checked as REST framework's ``APIView.check_throttles`` checks them, on the same counts: the voting
    page and the API share the annotator limits.
    """
    view = SimpleNamespace(throttle_scope=scope)
    waits = []
    for throttle_class in throttles:
        throttle = throttle_class()
        if not throttle.allow_request(request, view):
            waits.append(throttle.wait())
    if not waits:
        return None
    known = [wait for wait in waits if wait is not None]
    return max(1, math.ceil(max(known))) if known else 60


# --- failed logins (django-axes counts them: config/settings.py, AXES_*) ---------------------------


def login_client_address(request) -> str | None:
    """The client's address as the rate limits read it (REST framework's ``get_ident``), for django-axes
    (``AXES_CLIENT_IP_CALLABLE``); None when it is not an IP address (no REMOTE_ADDR, a unix socket), which
    the failed logins' table, an IP address column on PostgreSQL, could not hold."""
    try:
        return str(ipaddress.ip_address(BaseThrottle().get_ident(request)))
    except ValueError:
        return None


# A username longer than any account's (Django's User.username holds 150 characters) is counted by its
# digest: the failed logins' table holds 255, and PostgreSQL refuses a longer value (a 500 the fuzzing found).
LOGIN_USERNAME_KEPT = 150


def login_username(request, credentials=None) -> str | None:
    """The username django-axes counts a login attempt under (``AXES_USERNAME_CALLABLE``): the one sent,
    or ``"sha256:<hex digest>"`` of one longer than ``LOGIN_USERNAME_KEPT``; None when none was sent."""
    if credentials:
        username = credentials.get("username")
    else:
        username = getattr(request, "data", request.POST).get("username")
    if not isinstance(username, str) or len(username) <= LOGIN_USERNAME_KEPT:
        return username
    return "sha256:" + hashlib.sha256(username.encode("utf-8", "backslashreplace")).hexdigest()


def login_lockout_seconds() -> int:
    return int(settings.AXES_COOLOFF_TIME.total_seconds())


def _login_locked_message() -> str:
    minutes = max(1, round(login_lockout_seconds() / 60))
    return (
        f"too many failed logins for this account from this address; try again in {minutes} minute(s), "
        "or ask an administrator to reset your password"
    )


class LoginLocked(APIException):
    """``POST /api/auth/token/`` for a username and address that django-axes has locked out: 429, with
    ``Retry-After`` (REST framework's handler sends an exception's ``wait``)."""

    status_code = 429
    default_code = "login_locked"

    def __init__(self):
        super().__init__(detail=_login_locked_message())
        self.wait = login_lockout_seconds()


def login_locked_response(request, original_response=None, credentials=None):
    """django-axes' answer to a locked-out login page (``AXES_LOCKOUT_CALLABLE``): 429 with Retry-After,
    JSON in the API's error format under /api/, a short page elsewhere."""
    from django.http import HttpResponse, JsonResponse
    from django.utils.html import escape

    message = _login_locked_message()
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": message}, status=429)
    else:
        response = HttpResponse(
            "<!doctype html><title>Too many attempts</title><h1>Too many attempts</h1>"
            f"<p>{escape(message)}.</p>",
            status=429,
        )
    response["Retry-After"] = str(login_lockout_seconds())
    return response


def login_locked_out(request) -> bool:
    """Whether django-axes refused the login attempt of ``request`` (its documented request flag)."""
    return bool(getattr(request, "axes_locked_out", False))


def login_succeeded(request, *, username: str) -> None:
    """Clears the failures of ``username`` from this address, as django-axes does after a login page's
    success (``AXES_RESET_ON_SUCCESS``), for a login that is not a session: the API token."""
    from axes.utils import reset

    reset(ip=login_client_address(request), username=login_username(request, {"username": username}))
