"""Rate limits: per participant and per client address for voting, per address for joining and for
tokens, per user for submissions; and the answers to a login that django-axes has locked out.

Rates live in ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]`` (from ``THROTTLE_*`` environment variables;
docs/operators.md, Configuration), keyed ``<scope>.participant``, ``<scope>.address`` or ``<scope>.user``; a rate
of None turns that limit off. A request over a limit gets 429 with ``Retry-After``. The counts live in
the cache (Redis in the full stack): if the cache does not answer, the request is let through and the
failure logged, since refusing every annotator while Redis restarts would be worse than a few minutes
without limits. The annotator limits on Redis are the exception: each process counts them itself and
shares its counts through Redis in batches (``_SharedWindows``), so while Redis is down each process
still holds them for the requests it serves.
"""

from __future__ import annotations

import bisect
import hashlib
import ipaddress
import itertools
import logging
import math
import os
import secrets
import threading
import time
from collections import OrderedDict, deque
from types import SimpleNamespace

from django.conf import settings
from django.core.cache import cache, caches
from rest_framework import settings as drf_settings
from rest_framework.exceptions import APIException
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


def client_address(request) -> str:
    """The client's address, as REST framework's throttles identify it (``BaseThrottle.get_ident``):
    REMOTE_ADDR; behind ``NUM_PROXIES`` trusted proxies, the address in X-Forwarded-For that the
    outermost of them appended; with ``NUM_PROXIES`` None, the whole X-Forwarded-For when there is one.

    Read from Django's request's ``META``: REST framework reads ``request.headers``, which parses every
    header of the request, on each of the annotators' requests (tests check that the two agree).
    """
    meta = getattr(request, "_request", request).META
    forwarded = meta.get("HTTP_X_FORWARDED_FOR")
    remote = meta.get("REMOTE_ADDR")
    proxies = drf_settings.api_settings.NUM_PROXIES
    if proxies is None:
        address = "".join(forwarded.split()) if forwarded else remote
    elif proxies == 0 or forwarded is None:
        address = remote
    else:
        hops = forwarded.split(",")
        address = hops[-min(proxies, len(hops))].strip()
    return address or "unknown"


_parsed_rates: dict[str | None, tuple] = {}  # a rate's text: (requests, seconds), parsed once


class _ScopedThrottle(SimpleRateThrottle):
    """A throttle whose scope is ``<view.throttle_scope>.<kind>``; rates read when used, so that a
    change of settings (tests, a reload) is seen."""

    kind = ""

    def __init__(self):  # the rate depends on the view: found in allow_request
        pass

    def get_rate(self):
        return drf_settings.api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def parse_rate(self, rate):
        parsed = _parsed_rates.get(rate)
        if parsed is None:
            parsed = _parsed_rates[rate] = super().parse_rate(rate)
        return parsed

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
        django_request = getattr(request, "_request", request)  # past REST framework's proxy
        session = getattr(django_request, "session", None)
        if session is not None and session.session_key:  # the cookie's value: no session row read
            return f"session-{session.session_key}"
        if key := getattr(django_request, "annotator_key", None):  # set by collection.identity's middleware
            return f"annotator-{key}"
        return f"address-{client_address(django_request)}"


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


# The annotator limits' shared part on Redis, in one script (``_SharedWindows.flush``): for each key, a
# sorted set of request times, drop the times at or before the window's start and add this process's
# requests since its last flush. Then the answer: while the window holds fewer than half its limit, only
# its count and its newest time (a list of two: an integer, then the time's text); from half the limit
# on, or when the process asks for them, its newest ``limit`` times (a list of texts, oldest first): all
# a process needs to decide as REST framework's sliding window does (the window is full when its
# limit-th newest time is still in it). Reading every time back on every flush cost Redis most of its
# 0.06 ms per vote, and the process as much again. ARGV per key:
# the window's start, its seconds, the limit, 1 to ask for the times, the number of requests to add,
# then each request's time and its distinct member.
_SHARE_WINDOWS_LUA = """
local at = 1
local answers = {}
for index, key in ipairs(KEYS) do
    local start, seconds, limit = ARGV[at], ARGV[at + 1], tonumber(ARGV[at + 2])
    local wanted, count = ARGV[at + 3] == '1', tonumber(ARGV[at + 4])
    at = at + 5
    redis.call('ZREMRANGEBYSCORE', key, '-inf', start)
    for entry = 1, count do
        redis.call('ZADD', key, ARGV[at], ARGV[at + 1])
        at = at + 2
    end
    if count > 0 then
        redis.call('EXPIRE', key, seconds)
    end
    local held = redis.call('ZCARD', key)
    if held > 0 and not wanted and 2 * held < limit then
        answers[index] = {held, redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]}
    else
        local listed = redis.call('ZRANGE', key, -limit, -1, 'WITHSCORES')
        local times = {}
        for position = 2, #listed, 2 do
            times[#times + 1] = listed[position]
        end
        answers[index] = times
    end
end
return answers
"""

# How long a request that needs a window's times waits for another thread's flush to end.
_FETCH_WAIT_SECONDS = 2.0


class _Window:
    """One limit's key in this process: what Redis last answered, either its times (every process's,
    oldest first, at most the limit's newest) or, under half the limit, only their count and the newest
    of them; this process's requests in a flush's round trip, not yet answered; and its requests since
    (time, member), not yet sent."""

    __slots__ = ("known", "counted", "newest", "sending", "pending", "seconds", "limit")

    def __init__(self, seconds: float, limit: int):
        self.known: list[float] = []
        self.counted = 0  # with ``newest``: Redis answered a count; None: it answered ``known``
        self.newest = -math.inf
        self.sending: tuple[tuple[float, str], ...] = ()
        self.pending: deque[tuple[float, str]] = deque()
        self.seconds = seconds
        self.limit = limit

    def answered(self, answer: list) -> None:
        """What the flush's script answered for this key: a count and its newest time, or the times."""
        if answer and isinstance(answer[0], int):
            self.known, self.counted, self.newest = [], answer[0], float(answer[1])
        else:
            self.known, self.counted = list(map(float, answer)), None

    def counted_in(self, start: float) -> int:
        """Of what Redis answered, the requests in the window that begins at ``start``. Of a count,
        which of them have left the window is not known until the newest has: they all count, so
        that a count is never under the truth (``_SharedWindows.check``)."""
        if self.counted is None:
            return len(self.known) - bisect.bisect_right(self.known, start)
        return self.counted if self.newest > start else 0

    def count(self, now: float) -> int:
        """The requests in the window at ``now``; this process's older ones are dropped, oldest first
        (in the order decided, which is the order of their times but for threads' races, by moments).
        Those in a round trip count whole: for that long, one may have left the window uncounted."""
        start = now - self.seconds
        pending = self.pending
        while pending and pending[0][0] <= start:
            pending.popleft()
        return len(pending) + len(self.sending) + self.counted_in(start)

    def history(self, now: float) -> list[float]:
        """The times in the window at ``now``, newest first: REST framework's history, for its wait. The
        requests of a count, whose times are not known, are taken to be as new as the newest of them:
        a wait that is never too short."""
        start = now - self.seconds
        if self.counted is None:
            known = self.known[bisect.bisect_right(self.known, start) :]
        else:
            known = [self.newest] * self.counted_in(start)
        return sorted([at for at, _ in (*self.sending, *self.pending)] + known, reverse=True)


class _SharedWindows:
    """The annotator limits of one process, shared with the others through Redis in batches.

    Each request is decided here, on the key's times as Redis last answered them plus this process's
    requests since: no round trip. At most every ``RATE_LIMIT_SHARE_SECONDS`` a request that finds the
    last flush that old sends every key's new requests, and reads back what Redis holds for each such
    key, in one script (``_SHARE_WINDOWS_LUA``): one round trip per interval per process, not one per
    vote. The round trip was 13% of a vote's CPU on the full stack.

    Under half its limit a key's answer is its count, not its times. A count cannot say which of its
    requests have left the window since, so it counts them all until its newest has left: never fewer
    than the times would. A request that this count would refuse is decided again on the times, read
    at once (``check`` answers None, the caller flushes with ``wanted``): the decision is the one the
    times give, and only requests on their way to a refusal pay a round trip.

    What it gives up: another process's requests count here from this process's next flush of the key
    after them. A client whose requests reach P processes can so get at most P times the limit through
    in a window where it starts from nothing, and only for requests faster than a flush; within one
    process the count is exact. While Redis does not answer, each process still counts its own
    (REST framework's throttles stop counting), and it sends them once Redis answers again; a count it
    had read then decides as it stands (a refusal it cannot check is a refusal).
    """

    # The keys kept, least recently used first out: each holds at most its limit's times, so with the
    # default limits (60 a minute per annotator) this bounds the memory to a few tens of MB, for more
    # annotators at once than a study has places. A key dropped with requests not yet sent loses them.
    def __init__(self, keys_kept: int = 10_000):
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._windows: OrderedDict[str, _Window] = OrderedDict()
        self._changed: set[str] = set()
        self._flushed_at = -math.inf
        self._keys_kept = keys_kept

    def reset(self) -> None:
        with self._lock:
            self._windows.clear()
            self._changed.clear()
            self._flushed_at = -math.inf

    def check(self, checks, now: float, member: str, *, settle: bool = False):
        """For each check (key, seconds, limit): (allowed, None) or, refused, (False, the window's times
        at ``now``, newest first: at least ``limit`` of them); a check that allows records the request,
        as each of REST framework's throttles does, whether or not the others allow it.

        None, with nothing recorded, when a count from Redis (not its times) would refuse one of them:
        the caller reads those keys' times (``flush`` with ``wanted``) and asks again. ``settle``: decide
        on what is known (Redis did not answer)."""
        with self._lock:
            windows = []
            for key, seconds, limit in checks:
                window = self._windows.get(key)
                if window is None:
                    window = self._windows[key] = _Window(seconds, limit)
                    while len(self._windows) > self._keys_kept:
                        forgotten, _ = self._windows.popitem(last=False)
                        self._changed.discard(forgotten)
                else:
                    self._windows.move_to_end(key)
                    window.seconds, window.limit = seconds, limit
                full = window.count(now) >= limit
                if full and not settle and window.counted and window.counted_in(now - seconds):
                    return None
                windows.append((key, window, full))
            answers = []
            for key, window, full in windows:
                if full:
                    answers.append((False, window.history(now)))
                else:
                    window.pending.append((now, member))
                    self._changed.add(key)
                    answers.append((True, None))
        return answers

    def decide(self, checks, now: float, member: str, fetch):
        """``check``, and where a count would refuse, decided again on the times: ``fetch(keys)`` reads
        them (``flush`` with ``wanted``); if it could not, what is known decides."""
        answers = self.check(checks, now, member)
        if answers is None:
            fetch(tuple(key for key, _, _ in checks))
            answers = self.check(checks, now, member, settle=True)
        return answers

    def due(self, interval: float) -> bool:
        return bool(self._changed) and time.monotonic() - self._flushed_at >= interval

    def flush(self, script, now: float, wanted: tuple[str, ...] = ()) -> None:
        """Sends the new requests of every changed key and reads back what Redis holds for them: one
        round trip. Only one thread of the process flushes at a time; the others go on. ``wanted``: keys
        whose times to read back whatever their count, also unchanged ones; the thread that asks for
        them waits for another's flush to end (``_FETCH_WAIT_SECONDS`` at most, then it flushes none)."""
        if not self._flush_lock.acquire(blocking=bool(wanted), timeout=_FETCH_WAIT_SECONDS if wanted else -1):
            return
        try:
            keys, arguments, windows = [], [], []
            with self._lock:
                for key in self._changed.union(wanted):
                    window = self._windows.get(key)
                    if window is None:
                        continue
                    window.sending, window.pending = tuple(window.pending), deque()
                    fresh = [(at, member) for at, member in window.sending if at > now - window.seconds]
                    keys.append(key)
                    windows.append(window)
                    start = repr(now - window.seconds)
                    arguments += [start, window.seconds, window.limit, int(key in wanted), len(fresh)]
                    for at, member in fresh:
                        arguments += [repr(at), member]
                self._changed.clear()
                self._flushed_at = time.monotonic()
            try:
                answers = script(keys=keys, args=arguments) if keys else []
            except BaseException:
                with self._lock:  # not sent: sent with the next flush, after what came meanwhile
                    for key, window in zip(keys, windows, strict=True):
                        window.pending.extendleft(reversed(window.sending))
                        window.sending = ()
                        self._changed.add(key)
                raise
            with self._lock:  # what was sent is in what Redis answered
                for window, answer in zip(windows, answers, strict=True):
                    window.answered(answer)
                    window.sending = ()
        finally:
            self._flush_lock.release()


_shared_windows = _SharedWindows()


def reset_shared_windows() -> None:
    """Forgets this process's annotator-limit windows (tests, after clearing the cache)."""
    _shared_windows.reset()


def _redis_of_cache(backend=None):
    """The ``redis.Redis`` client of a cache backend (``common.cache.RedisCache``; the default cache's
    unless given), or None for another backend."""
    from common.cache import RedisCache

    backend = caches["default"] if backend is None else backend  # ``cache`` is a proxy to it
    return backend._cache.get_client(write=True) if isinstance(backend, RedisCache) else None


# The attribute of Django's request that holds the annotator limits' answer (the waits of the limits
# that refused it; none: allowed) once decided.
ANNOTATOR_LIMITS_DECIDED = "_yardstick_annotator_limits"


class AnnotatorThrottle(BaseThrottle):
    """``ParticipantThrottle`` and ``AddressThrottle`` of one request, checked together. The limits are
    theirs, and so are the answers: each limit that allows the request records it, as when REST
    framework checks them one by one, and the wait is the longest of those that refuse.

    On Redis (the full stack) both histories are sorted sets of request times, shared by the processes
    in batches (``_SharedWindows``): each request is decided in its process, and the process's new
    requests go to Redis, and the others' come back, in one script per ``RATE_LIMIT_SHARE_SECONDS``.
    On another cache (the embedded default's memory) the histories are REST framework's own lists, in
    one ``get_many`` and one ``set_many`` per request.
    """

    parts = (ParticipantThrottle, AddressThrottle)

    def __init__(self):
        self._waits: list[float] = []

    def allow_request(self, request, view) -> bool:
        decided = getattr(getattr(request, "_request", request), ANNOTATOR_LIMITS_DECIDED, None)
        if decided is not None:  # this request was counted already: the same answer, not a second count
            self._waits = list(decided)
            return not self._waits
        base = getattr(view, "throttle_scope", None)
        if not base:
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
        backend = caches["default"]  # what ``cache`` proxies to, looked up once
        client = _redis_of_cache(backend)
        if client is not None:  # counted in this process while the cache is down, too
            return self._check_on_redis(backend, client, checks)
        if not cache_usable():
            return True
        try:
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

    def _check_on_redis(self, backend, client, checks) -> bool:
        """Decided in this process (``_SharedWindows``); the round trip to Redis is the flush's, at
        most once per ``RATE_LIMIT_SHARE_SECONDS``, and not while the cache is down."""
        now = checks[0].timer()
        keys = [backend.make_key(f"{part.key}:times") for part in checks]

        def fetch(wanted):  # a count would refuse it: the times, read now
            if cache_usable():
                try:
                    _shared_windows.flush(self._script(client), now, wanted=wanted)
                except Exception:  # the cache's client errors have no common base class
                    cache_failed("rate limits not shared")

        answers = _shared_windows.decide(
            [(key, part.duration, part.num_requests) for key, part in zip(keys, checks, strict=True)],
            now,
            f"{now!r}:{_member()}",  # two requests at the same time are two entries
            fetch,
        )
        for part, (allowed, times) in zip(checks, answers, strict=True):
            if not allowed:
                # A place opens when the limit-th newest request leaves the window. With the window
                # exactly full that is REST framework's wait(); past it (what other processes sent
                # arrived with a flush), where REST framework gives none, it is still the time to wait.
                self._waits.append(max(0.0, times[part.num_requests - 1] + part.duration - now))
        if cache_usable() and _shared_windows.due(settings.RATE_LIMIT_SHARE_SECONDS):
            try:
                _shared_windows.flush(self._script(client), now)
            except Exception:  # the cache's client errors have no common base class
                cache_failed("rate limits not shared")
        return not self._waits

    def _script(self, client):
        script = self._scripts.get(id(client))
        if script is None:  # registered once per client: then EVALSHA, with EVAL if Redis forgot it
            script = self._scripts.setdefault(id(client), client.register_script(_SHARE_WINDOWS_LUA))
        return script

    def wait(self) -> float | None:
        waits = [wait for wait in self._waits if wait is not None]
        return max(waits) if waits else None

    def decide(self, request, view) -> bool:
        """``allow_request``, its answer kept on Django's request: a later check of the same request
        (REST framework's, after a view that answers outside its cycle let it through) gives the same
        answer without counting the request again."""
        allowed = self.allow_request(request, view)
        setattr(getattr(request, "_request", request), ANNOTATOR_LIMITS_DECIDED, tuple(self._waits))
        return allowed


ANNOTATOR_THROTTLES = [AnnotatorThrottle]

# What makes a history's entries distinct: the host (a token drawn at import), the process and its count
# of requests. Not a draw per request: that reads the system's random source, a system call that lets
# the process's other threads take the interpreter on every vote. Nor the process id read per request:
# ``os.getpid`` is a system call too; it is read at import and again in each child a fork makes. (With
# gunicorn's preload the workers of a host share the token and differ by their process ids.)
_HOST = secrets.token_hex(6)
_requests = itertools.count()
_process_prefix = f"{_HOST}:{os.getpid()}:"


def _process_forked() -> None:
    global _process_prefix
    _process_prefix = f"{_HOST}:{os.getpid()}:"


os.register_at_fork(after_in_child=_process_forked)


def _member() -> str:
    return f"{_process_prefix}{next(_requests)}"


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


# --- failed logins (django-axes counts them: config/settings.py, AXES_*) ---------------------------


def login_client_address(request) -> str | None:
    """The client's address as the rate limits read it (``client_address``), for django-axes
    (``AXES_CLIENT_IP_CALLABLE``); None when it is not an IP address (no REMOTE_ADDR, a unix socket), which
    the failed logins' table, an IP address column on PostgreSQL, could not hold."""
    address = client_address(request)
    try:
        return str(ipaddress.ip_address(address))
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
