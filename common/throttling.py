"""Rate limits: per participant and per client address for voting, per address for joining and for
tokens, per user for submissions, and a lockout after repeated failed logins.

Rates live in ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]`` (from ``THROTTLE_*`` environment variables;
README, Configuration), keyed ``<scope>.participant``, ``<scope>.address`` or ``<scope>.user``; a rate
of None turns that limit off. A request over a limit gets 429 with ``Retry-After``. The counts live in
the cache (Redis in the full stack): if the cache does not answer, the request is let through and the
failure logged, since refusing every annotator while Redis restarts would be worse than a few minutes
without limits.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import math
import os
import secrets
import time
from types import SimpleNamespace

from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.cache import cache, caches
from django.dispatch import receiver
from rest_framework import settings as drf_settings
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle

logger = logging.getLogger(__name__)


# After the cache fails, the limits are not checked for this long (in this process): a Redis that hangs
# would otherwise cost every request its timeouts (RELIABILITY.md: 7 s per vote while Redis was frozen).
CACHE_RETRY_SECONDS = 10.0
_cache_down_until = 0.0


def cache_usable() -> bool:
    return time.monotonic() >= _cache_down_until


def cache_failed(what: str) -> None:
    global _cache_down_until
    _cache_down_until = time.monotonic() + CACHE_RETRY_SECONDS
    logger.exception("%s: the cache does not answer; rate limits are off for %g s", what, CACHE_RETRY_SECONDS)


def client_address(request) -> str:
    """The client's address: REMOTE_ADDR, or the proxy's X-Forwarded-For behind a trusted proxy."""
    return BaseThrottle().get_ident(request) or "unknown"


class _ScopedThrottle(SimpleRateThrottle):
    """A throttle whose scope is ``<view.throttle_scope>.<kind>``; rates read when used, so that a
    change of settings (tests, a reload) is seen."""

    kind = ""

    def __init__(self):  # the rate depends on the view: found in allow_request
        pass

    def get_rate(self):
        return drf_settings.api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

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
        session = getattr(request, "session", None)
        if session is not None and session.session_key:  # the cookie's value: no session row read
            return f"session-{session.session_key}"
        if key := getattr(request, "annotator_key", None):  # set by collection.identity's middleware
            return f"annotator-{key}"
        return f"address-{client_address(request)}"


class AddressThrottle(_ScopedThrottle):
    """One client address, whoever is behind it."""

    kind = "address"

    def identity(self, request) -> str:
        return client_address(request)


class UserThrottle(_ScopedThrottle):
    """One logged-in user (anonymous requests are refused by the view's permissions first)."""

    kind = "user"

    def identity(self, request) -> str | None:
        user = getattr(request, "user", None)
        return f"user-{user.pk}" if user is not None and user.is_authenticated else None


# The annotator limits on Redis, in one script: for each history (a sorted set of request times), drop
# the times at or before the window's start, then refuse if it holds the limit (answering its size and
# oldest time, for the wait), else add this request's time. REST framework's sliding window, as its
# SimpleRateThrottle keeps it in a pickled list.
_ANNOTATOR_LIMITS_LUA = """
local now = ARGV[1]
local answers = {}
for index, key in ipairs(KEYS) do
    local at = 1 + (index - 1) * 4
    redis.call('ZREMRANGEBYSCORE', key, '-inf', ARGV[at + 1])
    local count = redis.call('ZCARD', key)
    if count >= tonumber(ARGV[at + 2]) then
        answers[index] = {0, count, redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2]}
    else
        redis.call('ZADD', key, now, ARGV[at + 4])
        redis.call('EXPIRE', key, ARGV[at + 3])
        answers[index] = {1, count + 1, false}
    end
end
return answers
"""


def _redis_of_cache():
    """The cache's ``redis.Redis`` client (``common.cache.RedisCache``), or None for another backend."""
    from common.cache import RedisCache

    backend = caches["default"]  # ``cache`` is a proxy to it
    return backend._cache.get_client(write=True) if isinstance(backend, RedisCache) else None


class AnnotatorThrottle(BaseThrottle):
    """``ParticipantThrottle`` and ``AddressThrottle`` of one request, checked together. The limits are
    theirs, and so are the answers: each limit that allows the request records it, as when REST
    framework checks them one by one, and the wait is the longest of those that refuse.

    On Redis (the full stack) both histories are sorted sets of request times, read and written by one
    script in one round trip (``_ANNOTATOR_LIMITS_LUA``), with nothing pickled; where REST framework's
    throttles read and write each history apart: four round trips per vote. On another cache (the
    embedded default's memory) the histories are REST framework's own lists, in one ``get_many`` and
    one ``set_many``.
    """

    parts = (ParticipantThrottle, AddressThrottle)

    def __init__(self):
        self._waits: list[float] = []

    def allow_request(self, request, view) -> bool:
        base = getattr(view, "throttle_scope", None)
        if not base or not cache_usable():
            return True
        checks = []
        for part_class in self.parts:
            part = part_class()
            part.scope = f"{base}.{part.kind}"
            part.rate = part.get_rate()
            part.num_requests, part.duration = part.parse_rate(part.rate)
            part.key = part.get_cache_key(request, view) if part.rate is not None else None
            if part.key is not None:
                checks.append(part)
        if not checks:
            return True
        try:
            client = _redis_of_cache()
            if client is not None:
                return self._check_on_redis(client, checks)
            histories = cache.get_many([part.key for part in checks])
            allowed_by_duration: dict[int, dict[str, list]] = {}
            for part in checks:
                part.now = part.timer()
                part.history = histories.get(part.key, [])
                while part.history and part.history[-1] <= part.now - part.duration:
                    part.history.pop()
                if len(part.history) >= part.num_requests:
                    self._waits.append(part.wait())
                else:
                    part.history.insert(0, part.now)
                    allowed_by_duration.setdefault(part.duration, {})[part.key] = part.history
            for duration, values in allowed_by_duration.items():
                cache.set_many(values, duration)
        except Exception:  # the cache's client errors have no common base class
            cache_failed(f"rate limits {base} not checked")
            return True
        return not self._waits

    _scripts: dict[int, object] = {}

    def _check_on_redis(self, client, checks) -> bool:
        script = self._scripts.get(id(client))
        if script is None:  # registered once per client: then EVALSHA, with EVAL if Redis forgot it
            script = self._scripts.setdefault(id(client), client.register_script(_ANNOTATOR_LIMITS_LUA))
        now = checks[0].timer()
        member = f"{now!r}:{_member()}"  # two requests at the same time are two entries
        arguments = [repr(now)]
        for part in checks:
            part.now = now
            arguments += [repr(now - part.duration), part.num_requests, part.duration, member]
        answers = script(keys=[cache.make_key(f"{part.key}:times") for part in checks], args=arguments)
        for part, (allowed, count, oldest) in zip(checks, answers, strict=True):
            if not allowed:
                # REST framework's wait() reads the history's length and its oldest time only.
                part.history = [float(oldest)] * int(count)
                self._waits.append(part.wait())
        return not self._waits

    def wait(self) -> float | None:
        waits = [wait for wait in self._waits if wait is not None]
        return max(waits) if waits else None


ANNOTATOR_THROTTLES = [AnnotatorThrottle]

# What makes a history's entries distinct: the host (a token drawn at import), the process and its count
# of requests. Not a draw per request: that reads the system's random source, a system call that lets
# the process's other threads take the interpreter on every vote. (With gunicorn's preload the workers
# of a host share the token and differ by their process ids.)
_HOST = secrets.token_hex(6)
_requests = itertools.count()


def _member() -> str:
    return f"{_HOST}:{os.getpid()}:{next(_requests)}"


def page_wait_seconds(request, scope: str, throttles=(AnnotatorThrottle,)) -> int | None:
    """For server-rendered pages: None if the request is within its limits, else the seconds to wait.

    The voting page and the API share the annotator limits (``AnnotatorThrottle``, the same histories).
    """
    view = SimpleNamespace(throttle_scope=scope)
    for throttle_class in throttles:
        throttle = throttle_class()
        if not throttle.allow_request(request, view):
            wait = throttle.wait()
            return max(1, math.ceil(wait)) if wait is not None else 60
    return None


# --- failed logins ---------------------------------------------------------------------------------


class LoginLockout:
    """Counts failed logins per username and per address within a window; past the limit, every
    login attempt for that username or from that address is refused (429) until the window ends.

    Failures are counted from Django's ``user_login_failed`` signal, so the admin's login, the model
    owners' login page and ``POST /api/auth/token/`` share one count; a successful login clears the
    username's count.
    """

    def __init__(self, settings):
        self.username_limit = settings.LOGIN_FAILURES_PER_USERNAME
        self.address_limit = settings.LOGIN_FAILURES_PER_ADDRESS
        self.window = settings.LOGIN_LOCKOUT_SECONDS

    @staticmethod
    def _keys(username: str | None, address: str | None) -> list[tuple[str, str]]:
        keys = []
        if username:
            # Hashed: a username is anything a client sends, and cache keys have a length and alphabet.
            digest = hashlib.sha256(username.strip().casefold().encode()).hexdigest()
            keys.append(("username", f"login-failures:user:{digest}"))
        if address:
            keys.append(("address", f"login-failures:address:{address}"))
        return keys

    def _limit(self, kind: str) -> int:
        return self.username_limit if kind == "username" else self.address_limit

    def record_failure(self, *, username: str | None, address: str | None) -> None:
        for _kind, key in self._keys(username, address) if cache_usable() else ():
            try:
                if not cache.add(key, 1, self.window):
                    cache.incr(key)
            except ValueError:  # expired between add and incr
                cache.add(key, 1, self.window)
            except Exception:
                cache_failed("failed login not counted")
                return

    def clear(self, *, username: str | None) -> None:
        for _kind, key in self._keys(username, None) if cache_usable() else ():
            try:
                cache.delete(key)
            except Exception:
                cache_failed("failed logins not cleared")
                return

    def locked(self, *, username: str | None, address: str | None) -> bool:
        for kind, key in self._keys(username, address) if cache_usable() else ():
            try:
                if (cache.get(key) or 0) >= self._limit(kind):
                    return True
            except Exception:
                cache_failed("lockout not checked")
                return False
        return False


def login_lockout() -> LoginLockout:
    from django.conf import settings

    return LoginLockout(settings)


@receiver(user_login_failed)
def _count_failed_login(sender, credentials, request=None, **kwargs):
    login_lockout().record_failure(
        username=credentials.get("username"), address=client_address(request) if request else None
    )


@receiver(user_logged_in)
def _clear_failed_logins(sender, request, user, **kwargs):
    login_lockout().clear(username=user.get_username())


class LoginLockoutMiddleware:
    """Refuses a login attempt (429, ``Retry-After``) for a locked username or address, before the
    password is checked: the admin's login, the model owners' login page and the API token."""

    def __init__(self, get_response):
        self.get_response = get_response
        self._paths = None

    def login_paths(self) -> set[str]:
        if self._paths is None:
            from django.urls import NoReverseMatch, reverse

            paths = set()
            for name in ("admin:login", "metrics:login", "api-token"):
                try:
                    paths.add(reverse(name))
                except NoReverseMatch:
                    pass
            self._paths = paths
        return self._paths

    def __call__(self, request):
        if request.method == "POST" and request.path in self.login_paths():
            lockout = login_lockout()
            if lockout.locked(username=_posted_username(request), address=client_address(request)):
                return _locked_response(request, lockout.window)
        return self.get_response(request)


def _posted_username(request) -> str | None:
    if request.content_type == "application/json":
        import json

        try:
            body = json.loads(request.body[:4096] or b"{}")
        except (ValueError, RecursionError):
            return None
        username = body.get("username") if isinstance(body, dict) else None
        return username if isinstance(username, str) else None
    username = request.POST.get("username")
    return username or None


def _locked_response(request, window: int):
    from django.http import HttpResponse, JsonResponse

    minutes = max(1, round(window / 60))
    message = (
        f"too many failed logins for this account or from this address; try again in {minutes} minute(s), "
        "or ask an administrator to reset your password"
    )
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": message}, status=429)
    else:
        response = HttpResponse(
            f"<!doctype html><title>Too many attempts</title><h1>Too many attempts</h1><p>{message}.</p>",
            status=429,
        )
    response["Retry-After"] = str(window)
    return response
