"""Who is voting: the annotator of a request, from a crowd participant id, a login or a signed cookie.

Once known, a browser's annotators ({study id: annotator id}) travel in a signed cookie
(``ANNOTATOR_COOKIE``, signed with SECRET_KEY, valid ``ANNOTATOR_COOKIE_MAX_AGE``), so that a vote or a
``next`` does not read (or write) a session row to find out who is asking. A forged, tampered or
expired cookie is ignored: the request is then as one without it. Browsers that joined before the
cookie existed are still found through their session. ``AnnotatorCookieMiddleware`` writes the cookie
when a request learned a new annotator (the consent form, a participant link).
"""

from __future__ import annotations

import hashlib
import time
from datetime import datetime
from functools import lru_cache

from django.conf import settings
from django.core import signing
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from collection.models import Annotator, Study
from collection.study_cache import study_at_version
from common.errors import ServiceError

SESSION_ANNOTATORS = "yardstick.annotators"  # {study id: annotator id}, in sessions made before the cookie
ANNOTATOR_COOKIE = "yardstick_annotator"
ANNOTATOR_COOKIE_MAX_AGE = 60 * 60 * 24 * 30  # a study runs for days or weeks; the link joins again after
_SALT = "collection.identity.annotators"
# Cookies whose signature this process checked: a browser sends its cookie unchanged on every request.
_VERIFIED_COOKIES = 4096


@lru_cache(maxsize=_VERIFIED_COOKIES)
def _verified_cookie(value: str, key: str, fallback_keys: tuple[str, ...]) -> tuple[int, tuple] | None:
    """The signing time and the (study, annotator) pairs of an annotator cookie whose signature holds
    under ``key`` (or one of ``fallback_keys``), else None; its age is for the caller to check.

    The check (HMAC, base64, zlib, JSON) depends only on the value and the keys, so each distinct value
    is checked once per process; the age, which depends on the clock, is checked on every use
    (``_remembered``). At most ``_VERIFIED_COOKIES`` values are kept, the least recently used first out
    (a cookie is under 4 KB: at most 16 MB per process; forged values only push real ones out).
    """
    try:
        mapping = signing.loads(value, key=key, salt=_SALT, fallback_keys=list(fallback_keys))
    except signing.BadSignature:  # forged or tampered
        return None
    if not isinstance(mapping, dict):
        return None
    # A verified value reads "<payload>:<signing time, base 62>:<signature>" (django.core.signing).
    signed_at = signing.b62_decode(value.rsplit(":", 2)[1])
    return signed_at, tuple((str(k), v) for k, v in mapping.items() if isinstance(v, int))


def _cookie_annotators(value: str) -> dict[str, int]:
    """The {study id: annotator id} of an annotator cookie: empty when forged, tampered or older than
    ``ANNOTATOR_COOKIE_MAX_AGE``."""
    verified = _verified_cookie(value, settings.SECRET_KEY, tuple(settings.SECRET_KEY_FALLBACKS))
    if verified is None or time.time() - verified[0] > ANNOTATOR_COOKIE_MAX_AGE:
        return {}
    return dict(verified[1])


class AnnotatorCookie:
    """One request's annotators ({study id: annotator id}, read once from its cookie or session) and
    whether the cookie must be written. ``AnnotatorCookieMiddleware`` puts one on Django's request as
    ``annotator_cookie``; REST framework's request hands it on, so that what a view learns reaches the
    middleware."""

    __slots__ = ("remembered", "changed")

    def __init__(self):
        self.remembered: dict[str, int] | None = None  # None: not read yet
        self.changed = False


def _cookie_of(request) -> AnnotatorCookie:
    cookie = getattr(request, "annotator_cookie", None)
    if cookie is None:  # a request the middleware did not see (a view called directly): its own
        cookie = request.annotator_cookie = AnnotatorCookie()
    return cookie


def _remembered(request) -> dict[str, int]:
    """The {study id: annotator id} of the request's cookie, or of its session before the cookie."""
    cookie = _cookie_of(request)
    if cookie.remembered is not None:
        return cookie.remembered
    remembered = {}
    value = request.COOKIES.get(ANNOTATOR_COOKIE)
    if value:
        remembered = _cookie_annotators(value)
    if not remembered and settings.SESSION_COOKIE_NAME in request.COOKIES:
        remembered = dict(request.session.get(SESSION_ANNOTATORS, {}))
        cookie.changed = bool(remembered)  # moved into the cookie: the session is not read again
    cookie.remembered = remembered
    return remembered


def remembered_annotators(request) -> dict[int, int]:
    """The request's {study id: annotator id}, from its signed cookie (or its session before the cookie)."""
    return {int(study): annotator for study, annotator in _remembered(request).items() if study.isdigit()}


def annotator_key(request) -> str | None:
    """A stable key of the request's signed annotator cookie (for rate limits), or None without one."""
    remembered = _remembered(request)
    if not remembered:
        return None
    return _key_of(tuple(sorted(remembered.items())))


@lru_cache(maxsize=_VERIFIED_COOKIES)
def _key_of(pairs: tuple[tuple[str, int], ...]) -> str:
    canonical = ",".join(f"{k}:{v}" for k, v in pairs)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def remembered_annotator_of_study(request, slug: str) -> Annotator | None:
    """The annotator the signed cookie names in the study ``slug``, with its ``study`` attached, in one
    query (a ``GET next`` then reads neither the study nor the annotator again); None when the cookie
    names nobody there, and the caller finds the study and its annotator as ``annotator_from_request``
    does (a login, a session from before the cookie, or nobody)."""
    remembered = remembered_annotators(request)
    if not remembered:
        return None
    annotator = (
        Annotator.objects.select_related("study")
        .filter(study__slug=slug, pk__in=list(remembered.values()))
        .first()
    )
    if annotator is None or remembered.get(annotator.study_id) != annotator.pk:
        return None  # the cookie names that annotator for another study: not a way in
    return annotator


def annotator_from_request(
    request, study: Study, *, create: bool = False, participant_id: str | None = None
) -> Annotator | None:
    """The request's annotator in ``study``, or None if it has none and ``create`` is False.

    A participant id (from the crowd platform's link) wins and is remembered in the cookie; then the
    annotator remembered in the cookie; then the logged-in user's. With ``create`` (the consent
    form), a logged-in user without one gets one, and anybody else a new anonymous annotator bound to
    this browser session; without it nothing is created, so a stray request leaves no row behind.
    """
    remembered = _remembered(request)
    annotator = None
    if participant_id:
        annotator = annotator_for(study=study, participant_id=participant_id.strip())
    elif str(study.pk) in remembered:
        annotator = Annotator.objects.filter(pk=remembered[str(study.pk)], study=study).first()
    if annotator is None and request.user.is_authenticated:
        annotator = Annotator.objects.filter(study=study, user=request.user).first()
        if annotator is None and create:
            annotator = annotator_for(study=study, user=request.user)
    if annotator is None and create:
        if request.session.session_key is None:
            request.session.save()
        annotator = annotator_for(study=study, session_key=request.session.session_key)
    if annotator is not None and remembered.get(str(study.pk)) != annotator.pk:
        remembered[str(study.pk)] = annotator.pk
        _cookie_of(request).changed = True
    if annotator is not None:
        annotator.study = study  # the caller's instance: one query less per request
    return annotator


_ASSIGNMENT_OWNER_SQL = """
SELECT a.annotator_id, b.study_id, s.settings_version, an.excluded_at
FROM collection_assignment a
JOIN collection_ballot b ON b.id = a.ballot_id
JOIN collection_study s ON s.id = b.study_id
JOIN collection_annotator an ON an.id = a.annotator_id
WHERE a.id = %(assignment)s
"""


def annotator_of_assignment(request, assignment_id: int) -> Annotator | None:
    """The request's annotator if ``assignment_id`` is one of theirs, else None; its ``study`` attached.

    The vote's path: one statement reads the assignment's annotator (with ``excluded_at``, so that an
    excluded annotator's vote is refused without another read), its study and the study's
    ``settings_version``; the study's settings come from this process's copy of that version
    (``collection.study_cache``). When the signed cookie names that annotator for that study, the
    annotator is known without another read (its other fields load if something asks for them);
    otherwise (a login or a session from before the cookie) ``annotator_from_request`` decides.
    """
    with connection.cursor() as cursor:
        cursor.execute(_ASSIGNMENT_OWNER_SQL, {"assignment": assignment_id})
        row = cursor.fetchone()
    if row is None:
        return None
    owner_id, study_id, version, excluded_at = row
    if excluded_at is not None and connection.vendor == "sqlite":  # SQLite returns the column's text
        excluded_at = connection.ops.convert_datetimefield_value(excluded_at, None, connection)
    study = study_at_version(study_id, version)
    if study is None:
        return None
    if _remembered(request).get(str(study_id)) == owner_id:
        annotator = Annotator.from_db(
            connection.alias, ["id", "study_id", "excluded_at"], [owner_id, study_id, excluded_at]
        )
        annotator.study = study
        return annotator
    annotator = annotator_from_request(request, study)
    return annotator if annotator is not None and annotator.pk == owner_id else None


class AnnotatorCookieMiddleware:
    """Writes the signed annotator cookie on the response of a request that learned a new annotator."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        cookie = request.annotator_cookie = AnnotatorCookie()
        # The rate limits' key of this annotator (common/throttling.py), from a cookie that verifies.
        request.annotator_key = annotator_key(request) if ANNOTATOR_COOKIE in request.COOKIES else None
        response = self.get_response(request)
        if cookie.changed:
            response.set_cookie(
                ANNOTATOR_COOKIE,
                signing.dumps(cookie.remembered, salt=_SALT, compress=True),
                max_age=ANNOTATOR_COOKIE_MAX_AGE,
                secure=settings.SESSION_COOKIE_SECURE,
                httponly=True,
                samesite="Lax",
            )
        return response


def annotator_for(
    *, study: Study, participant_id: str | None = None, session_key: str | None = None, user=None
) -> Annotator:
    """The annotator for a crowd participant id, else a logged-in user, else a browser session."""
    if participant_id:
        lookup = {"participant_id": participant_id[:128]}
    elif user is not None and user.is_authenticated:
        lookup = {"user": user}
    elif session_key:
        lookup = {"session_key": session_key}
    else:
        raise ServiceError("an annotator needs a participant id, a login or a browser session", status=403)
    try:
        with transaction.atomic():
            annotator, _ = Annotator.objects.get_or_create(study=study, **lookup)
    except IntegrityError:  # two first requests of the same annotator at once
        annotator = Annotator.objects.get(study=study, **lookup)
    return annotator


def annotator_consent(*, annotator: Annotator, now: datetime | None = None) -> Annotator:
    if annotator.consented_at is None:
        annotator.consented_at = now or timezone.now()
        annotator.save(update_fields=["consented_at"])
    return annotator
